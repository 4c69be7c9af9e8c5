#!/usr/bin/env python3
"""anasim against ngspice on the same decks: generates every benchmark circuit, writes it as a SPICE deck, runs it
through ngspice (`ngspice -b -r out.raw deck.cir`) and through anasim reading the very same deck, and prints a
table of wall times (median of --runs; a single run for anything over a minute), their ratio, and the largest
difference over all node voltages (op: absolute, V; tran: relative to each signal's range, anasim interpolated
onto ngspice's time grid). Results also go to bench/results.json and bench/results.csv. See bench/README.md.
Standard library only."""
import argparse, datetime, json, os, re, shutil, statistics, struct, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import spicebench as sb
from gen_crossbar import crossbar_deck, crossbar_yaml
from gen_circuits import rc_ladder_deck, rc_steps_deck, bridge_deck, multiplier_deck, sallen_key_yaml

OP_TOL = 1e-6     # [V] op/dc: largest |anasim - ngspice| over all node voltages
TRAN_TOL = 1e-3   # tran: largest |anasim - ngspice| / (range of the ngspice waveform + 1 nV)
ONE_RUN_ABOVE = 60.0  # [s] a first run longer than this is not repeated


# ---- the circuits -----------------------------------------------------------------------------------------

class Case:
    """One benchmark row. make(dir) writes the deck and returns (deck path, YAML source or None). anasim_yaml:
    anasim runs the YAML source (the crossbar device) while ngspice runs the deck; ngspice=False: anasim only
    (a deck too large for ngspice; --big-ngspice runs it anyway)."""
    def __init__(self, circuit, size, kind, make, quick=False, note="", anasim_yaml=False, ngspice=True):
        self.circuit, self.size, self.kind, self.make, self.quick, self.note = circuit, size, kind, make, quick, note
        self.anasim_yaml, self.ngspice = anasim_yaml, ngspice


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def deck_case(circuit, size, kind, text_fn, quick=False, note=""):
    def make(d):
        return write(os.path.join(d, "deck.cir"), text_fn()), None
    return Case(circuit, size, kind, make, quick, note)


def yaml_case(circuit, size, yaml_fn, anasim, quick=False, note=""):
    """The circuit is written as a YAML netlist and exported with `anasim export FILE --spice deck.cir`."""
    def make(d):
        src = write(os.path.join(d, "circuit.yaml"), yaml_fn())
        deck = os.path.join(d, "deck.cir")
        p = subprocess.run([anasim, "export", src, "--spice", deck], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"anasim export failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return deck, src
    return Case(circuit, size, "tran", make, quick, note)


XBAR_PULSE = (0.5e-9, 100e-12, 100e-12, 5e-9, 10e-9)  # row i delayed (i % 8) * 0.5 ns, 5 ns wide, 10 ns period


def crossbar_yaml_case(r, k, ngspice, note):
    """Crossbar op of r x k cells: anasim reads the YAML netlist with the crossbar device, ngspice (unless
    ngspice=False) the equivalent deck of R and E elements (bench/gen_crossbar.py, same values)."""
    def make(d):
        deck = write(os.path.join(d, "deck.cir"), crossbar_deck(r, k)) if ngspice else None
        return deck, write(os.path.join(d, "crossbar.yaml"), crossbar_yaml(r, k, os.path.join(d, "g.csv")))
    return Case("crossbar op (YAML device)", f"{r}x{k}", "op", make, False, note, anasim_yaml=True, ngspice=ngspice)


def cases(a):
    anasim = a.anasim
    c = []
    for r, k, q in [(64, 16, True), (128, 32, False), (256, 64, False)]:
        c.append(deck_case("crossbar op", f"{r}x{k}", "op", lambda r=r, k=k: crossbar_deck(r, k), q))
    c.append(deck_case("crossbar op", "784x128", "op", lambda: crossbar_deck(784, 128), False))
    c.append(deck_case("crossbar op", "512x512", "op", lambda: crossbar_deck(512, 512), False,
                       "R and E deck of 786,944 elements"))
    c.append(crossbar_yaml_case(512, 512, True, "anasim reads the YAML crossbar device, ngspice the R and E deck"))
    c.append(crossbar_yaml_case(1024, 1024, a.big_ngspice,
                                "1 ohm wires, 2.1 M unknowns; ngspice on the 3.1 M-element R and E deck only with "
                                "--big-ngspice"))
    for r, k, q in [(32, 8, True), (64, 16, False), (256, 256, False)]:
        c.append(deck_case("crossbar tran", f"{r}x{k}", "tran",
                           lambda r=r, k=k: crossbar_deck(r, k, cwire=10e-15, cf=1e-12, pulse=XBAR_PULSE,
                                                          analysis=".tran 20p 20n"), q,
                           "10 fF per wire node, 1 pF TIA feedback, PULSE rows, 1,000 output steps"))
    for n, q in [(200, True), (1000, False)]:
        c.append(deck_case("RC ladder tran", f"{n} sections", "tran", lambda n=n: rc_ladder_deck(n), q))
    for n, q in [(100_000, True), (1_000_000, False)]:
        c.append(deck_case("RC sine tran", f"{n:.0e} steps".replace("e+0", "e"), "tran",
                           lambda n=n: rc_steps_deck(n), q, "tstop/tmax = steps"))
    for n, q in [(5, True), (50, False)]:
        c.append(deck_case("diode bridge tran", f"{n} cycles", "tran", lambda n=n: bridge_deck(n), q,
                           "50 Hz, tmax 5 us"))
    for n, q in [(4, True), (8, False)]:
        c.append(deck_case("CW multiplier tran", f"{n} stages", "tran", lambda n=n: multiplier_deck(n), q,
                           "10 kHz, 100 cycles, tmax 0.2 us"))
    for n, q in [(4, True), (16, False)]:
        c.append(yaml_case("Sallen-Key op-amp tran", f"{n} stages", lambda n=n: sallen_key_yaml(n), anasim, q,
                           "uA741 level-2 macro model, exported with anasim export --spice"))
    c.append(nn_small_case(a, 0))
    c.append(nn_small_case(a, 2))
    return c


# ---- running ----------------------------------------------------------------------------------------------

def run_timed(cmd, runs):
    """Runs cmd up to `runs` times (once if the first run takes over ONE_RUN_ABOVE s). Returns (wall times,
    CPU times (user + sys of the child), peak resident memory [MB] of the child (largest over the runs), last
    CompletedProcess); raises on a non-zero exit."""
    walls, cpus, rss, proc = [], [], 0.0, None
    # The peak resident memory comes from GNU time (%M, kB) when installed: a child forked from this Python
    # process counts Python's own ~17 MB in its ru_maxrss, one forked from `time` does not.
    gnu_time = os.path.exists("/usr/bin/time")
    for i in range(runs):
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
                tempfile.NamedTemporaryFile("r") as mem:
            run = ["/usr/bin/time", "-f", "%M", "-o", mem.name] + cmd if gnu_time else cmd
            t0 = time.perf_counter()
            child = subprocess.Popen(run, stdout=out, stderr=err, text=True)
            _, status, ru = os.wait4(child.pid, 0)  # this child's rusage, with its own children's
            walls.append(time.perf_counter() - t0)
            child.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0), err.seek(0)
            proc = subprocess.CompletedProcess(cmd, child.returncode, out.read(), err.read())
            kb = mem.read().strip().splitlines()[-1:] if gnu_time else [str(ru.ru_maxrss)]  # kB on Linux
        cpus.append(ru.ru_utime + ru.ru_stime)
        if kb and kb[0].isdigit():
            rss = max(rss, int(kb[0]) / 1024.0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        if walls[0] > ONE_RUN_ABOVE:
            break
    return walls, cpus, rss, proc


def add_klu(deck):
    """Adds `.options klu` before the deck's .end (both simulators then read it)."""
    text = open(deck).read()
    i = text.lower().rfind("\n.end")
    write(deck, text[:i] + "\n.options klu" + text[i:])


def unknowns_of(stdout):
    m = re.search(r"^\s*unknowns\s+(\d+)", stdout, re.M)
    return int(m.group(1)) if m else None


def ngspice_plot(raw, kind):
    want = {"op": "operating", "tran": "transient"}[kind]
    for p in sb.read_raw(raw):
        if p["name"].lower().startswith(want):
            return p
    raise RuntimeError(f"ngspice wrote no '{want}' plot to {raw}")


def compare(kind, raw, csvdir):
    """Largest difference over every node voltage anasim reports. Returns dict(worst, worst_signal, compared,
    missing): op absolute [V]; tran relative to the ngspice signal's range (+ 1 nV), anasim linearly interpolated
    onto ngspice's time points."""
    ng = ngspice_plot(raw, kind)
    idx = {n: i for i, n in enumerate(ng["names"])}
    an = sb.read_csv(os.path.join(csvdir, f"{kind}.csv"))
    worst, worst_name, compared, missing = 0.0, "", 0, []
    if kind == "op":
        for name, col in an.items():
            if not name.startswith("v("):
                continue
            if name not in idx:
                missing.append(name); continue
            d = abs(col[0] - ng["data"][idx[name]][0])
            compared += 1
            if d > worst:
                worst, worst_name = d, name
    else:
        tn, ta = ng["data"][0], an["time"]
        # for every ngspice time: anasim interval q (ta[q-1] <= t < ta[q]) and weight
        seg, q = [], 1
        for t in tn:
            while q < len(ta) and ta[q] <= t:
                q += 1
            if q >= len(ta):
                seg.append((len(ta) - 1, len(ta) - 1, 0.0))
            else:
                h = ta[q] - ta[q - 1]
                seg.append((q - 1, q, (t - ta[q - 1]) / h if h > 0 else 0.0))
        for name, a in an.items():
            if not name.startswith("v("):
                continue
            if name not in idx:
                missing.append(name); continue
            n = ng["data"][idx[name]]
            rng = max(n) - min(n) + 1e-9
            e = max(abs(a[i] + w * (a[j] - a[i]) - v) for (i, j, w), v in zip(seg, n)) / rng
            compared += 1
            if e > worst:
                worst, worst_name = e, name
        if abs(tn[-1] - ta[-1]) > 1e-9 * abs(tn[-1]):
            raise RuntimeError(f"ngspice stopped at t = {tn[-1]:g}, anasim at {ta[-1]:g}")
    ng_nodes = sum(1 for n in ng["names"] if n.startswith("v("))
    return {"worst": worst, "worst_signal": worst_name, "compared": compared, "missing": missing, "ng_nodes": ng_nodes}


def run_case(case, a, root):
    d = os.path.join(root, re.sub(r"[^a-z0-9]+", "_", f"{case.circuit} {case.size}".lower()).strip("_"))
    os.makedirs(d, exist_ok=True)
    deck, yaml_src = case.make(d)
    if a.klu and deck:
        add_klu(deck)
    row = {"circuit": case.circuit, "size": case.size, "kind": case.kind, "note": case.note, "deck": deck}
    # ngspice
    raw = os.path.join(d, "ngspice.raw")
    if case.ngspice:
        walls, cpus, rss, _ = run_timed([a.ngspice, "-b", "-r", raw, deck], a.runs)
        row.update(ngspice_s=statistics.median(walls), ngspice_runs=walls, ngspice_cpu_s=statistics.median(cpus),
                   ngspice_mb=rss)
    # anasim reads the same deck; if it cannot (an exported deck with constructs its SPICE reader lacks), it
    # reads the YAML source the deck was exported from, and the row says so
    csvdir = os.path.join(d, "anasim_csv")
    out = {"csv": ["--csv", csvdir], "h5": ["-o", os.path.join(d, "anasim.h5")],
           "raw": ["-r", os.path.join(d, "anasim.raw")]}[a.anasim_output]
    anasim_input = yaml_src if case.anasim_yaml else deck
    try:
        walls, cpus, rss, p = run_timed([a.anasim, "run", anasim_input] + out, a.runs)
    except RuntimeError as e:
        if not (yaml_src and anasim_input == deck and "failed (2)" in str(e)):
            raise
        first = next((l for l in str(e).splitlines() if "error: " in l), "").split(" (known:")[0]
        row["note"] += f"; anasim ran the YAML source: it rejects its own exported deck ({first.split('error: ')[-1]})"
        anasim_input = yaml_src
        walls, cpus, rss, p = run_timed([a.anasim, "run", yaml_src] + out, a.runs)
    row.update(anasim_s=statistics.median(walls), anasim_runs=walls, anasim_cpu_s=statistics.median(cpus),
               anasim_mb=rss)
    row["unknowns"] = unknowns_of(p.stdout)
    m = re.search(r"KCL residual\s+([\d.eE+-]+)", p.stdout)
    if m:
        row["kcl_residual_A"] = float(m.group(1))
    row["anasim_input"] = anasim_input
    if a.anasim_output != "csv":  # one more run for the comparison, untimed
        p = subprocess.run([a.anasim, "run", anasim_input, "--csv", csvdir], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"anasim run {anasim_input} --csv failed ({p.returncode}):\n{p.stderr[-3000:]}")
    if not case.ngspice:  # anasim alone: it must run, and its KCL residual (when printed) must be tiny
        row.update(ratio=None, cpu_ratio=None, max_diff=row.get("kcl_residual_A"), tolerance=1e-12, compared=0,
                   missing=0, worst_signal="")
        row["ok"] = row.get("kcl_residual_A") is None or row["kcl_residual_A"] <= 1e-12
        if not a.keep:
            shutil.rmtree(csvdir, ignore_errors=True)
        return row
    row["ratio"] = row["ngspice_s"] / row["anasim_s"]
    row["cpu_ratio"] = row["ngspice_cpu_s"] / max(row["anasim_cpu_s"], 1e-6)
    c = compare(case.kind, raw, csvdir)
    tol = OP_TOL if case.kind == "op" else TRAN_TOL
    row.update(max_diff=c["worst"], worst_signal=c["worst_signal"], compared=c["compared"],
               missing=len(c["missing"]), tolerance=tol)
    # every node of the circuit must be compared; only the YAML fallback may name op-amp internals differently
    row["ok"] = c["worst"] <= tol and c["compared"] > 0 and (not c["missing"] or anasim_input != deck)
    if c["missing"]:
        row["note"] += f"; {len(c['missing'])} anasim nodes not in ngspice's output (e.g. {c['missing'][0]})"
    row["ngspice_nodes"] = c["ng_nodes"]
    if c["compared"] < c["ng_nodes"]:
        row["note"] += (f"; {c['compared']} of ngspice's {c['ng_nodes']} node voltages compared (the others are "
                        f"internal to anasim's devices in {os.path.basename(anasim_input)})")
    if not a.keep:
        for f in (raw, os.path.join(d, "anasim.h5")):
            if os.path.exists(f):
                os.remove(f)
        shutil.rmtree(csvdir, ignore_errors=True)
    return row


# ---- MNIST: the mapped network as a circuit --------------------------------------------------------------

NN_HW = """hardware:
  tile_rows: 48
  tile_cols: 8
  calib_samples: 2000
  opamp: {{model: opa1611, level: {level}}}
"""


def mnist_dir(a):
    """The MNIST IDX directory: --data, else $ANASIM_DATA, else ../shared/mnist next to the repository."""
    for d in [a.data, os.environ.get("ANASIM_DATA"), os.path.join(HERE, "..", "..", "shared", "mnist"),
              os.path.join(HERE, "..", "data", "mnist")]:
        if d and any(os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte" + z)) for z in ("", ".gz")):
            return os.path.abspath(d)
    raise RuntimeError("MNIST not found (pass --data DIR or set ANASIM_DATA)")


def read_idx(path):
    import gzip
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return dims, data[4 + 4 * ndim:]


def write_idx(path, magic, dims, payload):
    with open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + struct.pack(">" + "I" * len(dims), *dims) + bytes(payload))


def mnist_8x8(src, dst):
    """MNIST downsampled to 8x8 (the central 24x24 pixels, 3x3 averages) as IDX files in dst."""
    os.makedirs(dst, exist_ok=True)
    for split in ("train", "t10k"):
        def find(base):
            for z in (".gz", ""):
                if os.path.exists(os.path.join(src, base + z)):
                    return os.path.join(src, base + z)
            raise RuntimeError(f"no {base} in {src}")
        (n, rows, cols), px = read_idx(find(f"{split}-images-idx3-ubyte"))
        _, lab = read_idx(find(f"{split}-labels-idx1-ubyte"))
        out = bytearray(n * 64)
        for i in range(n):
            img = px[i * rows * cols:(i + 1) * rows * cols]
            for r in range(8):
                for c in range(8):
                    base = (2 + 3 * r) * cols + 2 + 3 * c
                    s = sum(img[base:base + 3]) + sum(img[base + cols:base + cols + 3]) + \
                        sum(img[base + 2 * cols:base + 2 * cols + 3])
                    out[i * 64 + r * 8 + c] = (s + 4) // 9
        write_idx(os.path.join(dst, f"{split}-images-idx3-ubyte"), 0x803, (n, 8, 8), out)
        write_idx(os.path.join(dst, f"{split}-labels-idx1-ubyte"), 0x801, (n,), lab)


def nn_small_case(a, level):
    """MNIST inference of a small network exported with `anasim nn export-spice`: a 64-16-10 MLP trained here
    (seeded, 3 epochs) on 8x8-downsampled MNIST (both cached next to the case directories), mapped onto NN_HW with
    op-amps of `level`, test image 0 exported as an ngspice deck (and as YAML); ngspice and anasim then solve the
    same deck and every node is compared. Level 0 (ideal nullor) exports as plain controlled sources, level 1-2
    op-amps as ngspice B sources; anasim reads either deck itself. (run_case falls back to the YAML the deck was
    written from only if anasim rejects the deck as input, exit 2.)"""
    def make(d):
        shared = os.path.join(os.path.dirname(d), "mnist_small_common")
        data, model = os.path.join(shared, "mnist8x8"), os.path.join(shared, "mlp_64_16_10.h5")
        cmds = []
        if not os.path.exists(model):
            mnist_8x8(mnist_dir(a), data)
            cmds.append([a.anasim, "nn", "train", "--data", data, "--layers", "64,16,10", "--epochs", "3", "--seed",
                         "1", "-o", model])
        hw = write(os.path.join(d, "hw.yaml"), NN_HW.format(level=level))
        cmds.append([a.anasim, "nn", "export-spice", "--model", model, "--config", hw, "--data", data, "--sample",
                     "0", "-o", os.path.join(d, "deck.cir"), "--yaml", os.path.join(d, "deck.yaml")])
        for cmd in cmds:
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        return os.path.join(d, "deck.cir"), os.path.join(d, "deck.yaml")
    what = {0: "ideal op-amps (level 0)", 1: "behavioural op-amps (level 1)", 2: "op-amp macro models (level 2)"}[level]
    return Case("MNIST inference (nn export-spice)", f"64-16-10, {what.split(' (')[0]}", "op", make, level == 0,
                f"test image 0 of 8x8-downsampled MNIST, 64-16-10 trained here; 58 opa1611 {what}")


def nn_throughput_row(a, root):
    """Batched evaluation throughput of the shipped 784-128-10 model (build/bench/anasim_nn_trial: one Monte Carlo
    trial = mismatch draw + port reduction + all 10,000 test images) against the per-image full MNA solve (KLU
    factor once, one solve per image; and the Newton operating point per image) and against ngspice per image on
    the deck `anasim nn export-spice` writes for one image (at most --nn-ngspice-timeout seconds)."""
    row = {"circuit": "MNIST throughput (784-128-10)", "size": "10,000 images", "kind": "throughput", "note": "",
           "ok": True}
    trial = os.path.join(os.path.dirname(a.anasim), "bench", "anasim_nn_trial")
    if not os.access(trial, os.X_OK):
        raise RuntimeError(f"no {trial} (build the bench target)")
    data = mnist_dir(a)
    p = subprocess.run([trial, "--trials", "2", "--plain", "2", "--data", data], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"anasim_nn_trial failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    trials = [(float(w), int(n)) for w, n in re.findall(r"Monte Carlo trial \d+: ([\d.]+) s wall .*?, (\d+) images", p.stdout)]
    w, n = min(trials)
    row["fast_s_per_image"] = w / n  # the whole trial (draw + port reduction + images) per image
    row["images_per_s_fast"] = n / w
    m = re.search(r"plain MNA: (\d+) unknowns; Newton operating point per image ([\d.]+) s", p.stdout)
    row["unknowns"] = int(m.group(1))
    row["images_per_s_mna_newton"] = 1 / float(m.group(2))
    m = re.search(r"factor ([\d.]+) s, solve ([\d.]+) s/image", p.stdout)
    row["mna_factor_s"], row["mna_solve_s_per_image"] = float(m.group(1)), float(m.group(2))
    row["images_per_s_mna_solve"] = 1 / float(m.group(2))
    # ngspice: one image of the same circuit, exported deck, one run with a time limit
    d = os.path.join(root, "mnist_784_128_10")
    os.makedirs(d, exist_ok=True)
    deck = os.path.join(d, "deck.cir")
    cmd = [a.anasim, "nn", "export-spice", "--model", os.path.join(HERE, "..", "data", "mlp_784_128_10.h5"),
           "--config", os.path.join(HERE, "..", "data", "examples", "mnist_hw.yaml"), "--data", data, "--sample", "0",
           "-o", deck]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"export-spice failed ({p.returncode}):\n{p.stderr[-2000:]}")
    if a.nn_ngspice_timeout > 0:
        t0 = time.perf_counter()
        try:
            subprocess.run([a.ngspice, "-b", "-r", os.path.join(d, "ngspice.raw"), deck], capture_output=True,
                           text=True, timeout=a.nn_ngspice_timeout)
            row["ngspice_s_per_image"] = time.perf_counter() - t0
            row["ngspice_timed_out"] = False
        except subprocess.TimeoutExpired:
            row["ngspice_s_per_image"] = a.nn_ngspice_timeout
            row["ngspice_timed_out"] = True
        row["images_per_s_ngspice"] = 1 / row["ngspice_s_per_image"]
    ng = row.get("ngspice_s_per_image")
    row["ratio"] = ng / row["fast_s_per_image"] if ng else None
    row["ratio_mna_solve"] = row["mna_solve_s_per_image"] / row["fast_s_per_image"]
    row["note"] = (f"batched (exact fast path): {row['images_per_s_fast']:.0f} images/s (whole Monte Carlo trial incl. "
                   f"draw and port reduction); full MNA per image: factor {row['mna_factor_s']:.2f} s once, then "
                   f"{row['images_per_s_mna_solve']:.1f} images/s by one KLU solve ({row['ratio_mna_solve']:.0f}x "
                   f"slower), {row['images_per_s_mna_newton']:.2f} images/s by Newton; ngspice: " +
                   ("not run (--nn-ngspice-timeout 0)" if ng is None else
                    (f"more than {ng:.0f} s for one image (stopped at the limit)" if row["ngspice_timed_out"]
                     else f"{ng:.1f} s for one image ({1 / ng:.2g} images/s)")))
    return row


# ---- reporting --------------------------------------------------------------------------------------------

def fmt_time(s, runs):
    return f"{s:.3g}" + (" (1 run)" if len(runs) == 1 else "")


def table_rows(rows):
    head = ["circuit", "size", "unknowns", "ngspice [s]", "anasim [s]", "ratio", "CPU ratio", "max diff", "limit", "ok",
            "ngspice MB", "anasim MB"]
    out = [head]
    def mb(r, who):
        return f"{r[who + '_mb']:.0f}" if r.get(who + "_mb") is not None else "-"
    for r in rows:
        if r["kind"] == "todo":
            out.append([r["circuit"], r["size"], "-", "-", "-", "-", "-", r["note"], "-", "-", "-", "-"])
            continue
        if r["kind"] == "throughput":
            ng = r.get("ngspice_s_per_image")
            ngs = "-" if ng is None else (f">{ng:.0f}" if r.get("ngspice_timed_out") else f"{ng:.3g}")
            ratio = "-" if r.get("ratio") is None else (">" if r.get("ngspice_timed_out") else "") + f"{r['ratio']:.0f}x"
            out.append([r["circuit"], r["size"] + " (s per image)", str(r["unknowns"]), ngs,
                        f"{r['fast_s_per_image']:.3g}", ratio, "-", f"{r['images_per_s_fast']:.0f} images/s", "-", "yes",
                        "-", "-"])
            continue
        if "error" in r:
            out.append([r["circuit"], r["size"], "-", "-", "-", "-", "-", "error: " + r["error"].splitlines()[0][:60], "-", "FAIL",
                        "-", "-"])
            continue
        if r.get("ngspice_s") is None:  # anasim alone: the KCL residual stands in for the comparison
            res = "-" if r.get("kcl_residual_A") is None else f"KCL {r['kcl_residual_A']:.2g} A"
            out.append([r["circuit"], r["size"], str(r["unknowns"]), "-", fmt_time(r["anasim_s"], r["anasim_runs"]),
                        "-", "-", res, "1e-12 A", "yes" if r["ok"] else "NO", "-", mb(r, "anasim")])
            continue
        unit = " V" if r["kind"] == "op" else " rel"
        out.append([r["circuit"], r["size"], str(r["unknowns"]), fmt_time(r["ngspice_s"], r["ngspice_runs"]),
                    fmt_time(r["anasim_s"], r["anasim_runs"]), f"{r['ratio']:.1f}x", f"{r['cpu_ratio']:.1f}x",
                    f"{r['max_diff']:.2g}{unit}", f"{r['tolerance']:g}{unit}", "yes" if r["ok"] else "NO",
                    mb(r, "ngspice"), mb(r, "anasim")])
    return out


def print_table(rows):
    t = table_rows(rows)
    w = [max(len(r[i]) for r in t) for i in range(len(t[0]))]
    for k, r in enumerate(t):
        print("  ".join(c.ljust(w[i]) if i < 2 or i == 7 else c.rjust(w[i]) for i, c in enumerate(r)))
        if k == 0:
            print("  ".join("-" * x for x in w))


def markdown(meta, rows):
    t = table_rows(rows)
    lines = [f"Run {meta['date']} on {meta['machine']}; {meta['ngspice']}{' with .options klu' if meta['klu'] else ''}; "
             f"{meta['runs']} runs per simulator, median wall time (a single run where the first took over a minute); "
             f"ngspice writes its binary raw file, anasim {dict(raw='its binary raw file', csv='CSV', h5='HDF5')[meta['anasim_output']]}; "
             f"CPU ratio = ratio of median user + sys CPU times; "
             f"load average {meta['load_start'][0]:.2f} at the start, {meta['load_end'][0]:.2f} at the end "
             f"(1-minute); {'quick subset' if meta['quick'] else 'full set'}"
             f"{' restricted to ' + ', '.join(repr(x) for x in meta['only']) if meta['only'] else ''}; "
             f"total {meta['seconds']:.0f} s.", "",
             "| " + " | ".join(t[0]) + " |", "|" + "|".join("---" for _ in t[0]) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in t[1:]]
    notes = [f"- {r['circuit']} {r['size']}: {r['note'].lstrip('; ')}" for r in rows if r.get("note") and r["kind"] != "todo"]
    if notes:
        lines += ["", "Notes:"] + notes
    return "\n".join(lines) + "\n"


def write_markdown(path, meta, rows):
    """Writes the table between the markers of an existing file (keeping the rest), or a new file."""
    begin, end = "<!-- results table: written by bench/ngspice_bench.py -->", "<!-- end of results table -->"
    block = f"{begin}\n{markdown(meta, rows)}{end}"
    text = open(path).read() if os.path.exists(path) else ""
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text + ("\n" if text else "# anasim against ngspice\n\n") + block + "\n"
    write(path, text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ngspice", default="ngspice", help="ngspice executable (default: ngspice on PATH)")
    ap.add_argument("--anasim", default=os.path.join(HERE, "..", "build", "anasim"), help="default build/anasim")
    ap.add_argument("--klu", action="store_true", help="add .options klu to every deck (ngspice built with KLU)")
    ap.add_argument("--quick", action="store_true", help="the smallest size of each circuit (under two minutes)")
    ap.add_argument("--runs", type=int, default=3, help="runs per simulator and circuit, median reported (>= 3)")
    ap.add_argument("--anasim-output", choices=["raw", "csv", "h5"], default="raw",
                    help="what the timed anasim runs write: -r FILE.raw (default: a binary SPICE raw file, as the timed "
                         "ngspice runs write), --csv DIR or -o FILE.h5; the results compared come from an untimed "
                         "--csv run unless --csv is timed")
    ap.add_argument("--only", action="append", default=[], help="run only circuits whose 'circuit size' contains this")
    ap.add_argument("--json", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--csv", default=os.path.join(HERE, "results.csv"))
    ap.add_argument("--markdown", help="also write the table into this Markdown file (e.g. bench/RESULTS.md)")
    ap.add_argument("--data", help="MNIST IDX directory for the MNIST rows (default: $ANASIM_DATA, ../shared/mnist)")
    ap.add_argument("--nn-ngspice-timeout", type=float, default=1800,
                    help="time limit [s] of ngspice on one image of the 784-128-10 deck (0: skip; default 1800)")
    ap.add_argument("--big-ngspice", action="store_true",
                    help="also run ngspice on the 1024x1024 crossbar's R and E deck (3.1 M elements)")
    ap.add_argument("--keep", help="keep decks and results in this directory (default: a temporary one, removed)")
    a = ap.parse_args()
    a.anasim = os.path.abspath(a.anasim)
    if not os.access(a.anasim, os.X_OK):
        sys.exit(f"no anasim executable at {a.anasim} (build it, or pass --anasim PATH)")
    if shutil.which(a.ngspice) is None:
        sys.exit(f"no ngspice executable '{a.ngspice}' (pass --ngspice PATH)")
    root = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="anasim_ngbench_")
    os.makedirs(root, exist_ok=True)
    t_start = time.perf_counter()
    meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "machine": sb.machine(),
            "ngspice": sb.ngspice_version(a.ngspice), "anasim": a.anasim, "klu": a.klu, "quick": a.quick,
            "runs": a.runs, "anasim_output": a.anasim_output, "only": a.only, "load_start": list(os.getloadavg()),
            "op_tolerance_V": OP_TOL, "tran_tolerance_rel": TRAN_TOL}
    print(f"{meta['date']}  {meta['machine']}\n{meta['ngspice']}{' with .options klu' if a.klu else ''}, "
          f"anasim {a.anasim}\nload average {' '.join(f'{x:.2f}' for x in meta['load_start'])}")
    todo = [c for c in cases(a) if (c.quick or not a.quick)
            and (not a.only or any(s.lower() in f"{c.circuit} {c.size}".lower() for s in a.only))]
    rows = []
    for c in todo:
        print(f"  {c.circuit} {c.size} ...", end="", flush=True)
        t0 = time.perf_counter()
        try:
            row = run_case(c, a, root)
        except Exception as e:  # keep going: one broken circuit must not hide the others
            row = {"circuit": c.circuit, "size": c.size, "kind": c.kind, "note": c.note, "error": str(e), "ok": False}
        rows.append(row)
        print(f" {time.perf_counter() - t0:.0f} s" + (f"  ERROR {row['error']}" if "error" in row else ""), flush=True)
    if not a.quick and (not a.only or any(s.lower() in "mnist throughput" for s in a.only)):
        print("  MNIST throughput 784-128-10 ...", end="", flush=True)
        t0 = time.perf_counter()
        try:
            rows.append(nn_throughput_row(a, root))
        except Exception as e:
            rows.append({"circuit": "MNIST throughput (784-128-10)", "size": "10,000 images", "kind": "throughput",
                         "note": "", "error": str(e), "ok": False})
        print(f" {time.perf_counter() - t0:.0f} s", flush=True)
    meta["load_end"] = list(os.getloadavg())
    meta["seconds"] = time.perf_counter() - t_start
    print(f"load average {' '.join(f'{x:.2f}' for x in meta['load_end'])}, {meta['seconds']:.0f} s in all\n")
    print_table(rows)
    for r in rows:
        if r.get("note") and r["kind"] != "todo":
            print(f"  note: {r['circuit']} {r['size']}: {r['note'].lstrip('; ')}")
    with open(a.json, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1)
    cols = ["circuit", "size", "kind", "unknowns", "ngspice_s", "anasim_s", "ratio", "ngspice_cpu_s", "anasim_cpu_s",
            "cpu_ratio", "max_diff", "tolerance", "worst_signal", "compared", "ok", "ngspice_mb", "anasim_mb",
            "kcl_residual_A", "ngspice_runs", "anasim_runs", "note"]
    with open(a.csv, "w", newline="") as f:
        w = sb.csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([" ".join(f"{x:.4f}" for x in r[k]) if isinstance(r.get(k), list) else r.get(k, "") for k in cols])
    if a.markdown:
        write_markdown(a.markdown, meta, rows)
    print(f"\nwrote {a.json}, {a.csv}" + (f", {a.markdown}" if a.markdown else "") +
          (f"; decks in {root}" if a.keep else ""))
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    bad = [r for r in rows if r["ok"] is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
