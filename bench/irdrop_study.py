#!/usr/bin/env python3
"""Accuracy against array size and wire resistance, uncompensated and compensated (issue 18).

For every tile size (128, 256, 512, 1024 physical rows, one tile per layer) and wire resistance per segment (0.5,
1, 2, 5 ohm) the shipped 784-128-10 model is evaluated through the mapped circuit (`anasim nn eval --json`, the
full test set unless --samples) with `program: ideal` and `program: compensated`; with --mc also under
conductance variation (`anasim nn mc`, sigma_g, --trials trials). Every cell's result and wall time are kept in a
JSON cache (--cache), so an interrupted run resumes and cells can be added later (--cells). The oracle row is the
same circuit with ideal arrays (rwire = rdriver = rsink = 0): what a programming that is exact on every image
reaches. Prints a Markdown table.

Usage (the long study; one thread and nice so that others can work):
  OMP_NUM_THREADS=1 nice -n 10 python3 bench/irdrop_study.py --anasim build/anasim --data ../shared/mnist \\
      [--samples 0] [--mc] [--trials 10] [--cells 0:2,1024:2] [--cache bench/irdrop_cache.json] [--plot study.png]
Python 3 standard library only (matplotlib for --plot)."""
import argparse, json, os, re, resource, subprocess, sys, tempfile, time

ROWS = [128, 256, 512, 1024, 0]  # 0 = one tile per layer
RWIRE = [0.5, 1.0, 2.0, 5.0]
HERE = os.path.dirname(os.path.abspath(__file__))


def rows_label(r):
    return "one tile per layer" if r == 0 else f"{r} rows"


def hardware_yaml(rows, rwire, program, sigma_g=0.0, ideal_array=False):
    lines = ["hardware:", f"  tile_rows: {rows if rows else 1000000}", f"  program: {program}"]
    if ideal_array:
        lines += ["  rwire: 0", "  rdriver: 0", "  rsink: 0"]
    else:
        lines += [f"  rwire: {rwire}"]
    if sigma_g:
        lines.append(f"  sigma_g: {sigma_g}")
    return "\n".join(lines) + "\n"


def run(cmd):
    """stdout, stderr, wall time [s]; the CPU time [s] of the run is in run.cpu_s (on a shared machine the wall
    time of a niced run measures the load more than the work)."""
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt, c1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu_s = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout, r.stderr, dt


def eval_cell(a, tmp, key, text):
    path = os.path.join(tmp, key.replace(":", "_").replace("/", "_") + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    cmd = [a.anasim, "nn", "eval", "--model", a.model, "--config", path, "--data", a.data, "--json"]
    if a.samples:
        cmd += ["--samples", str(a.samples)]
    out, _, dt = run(cmd)
    res = json.loads(out)
    res["wall_s"] = dt
    res["cpu_s"] = run.cpu_s
    return res


def mc_cell(a, tmp, key, text):
    path = os.path.join(tmp, key.replace(":", "_").replace("/", "_") + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    cmd = [a.anasim, "nn", "mc", "--model", a.model, "--config", path, "--data", a.data, "--trials", str(a.trials)]
    if a.samples:
        cmd += ["--samples", str(a.samples)]
    out, _, dt = run(cmd)
    m = re.search(r"^\s*nominal\s+([0-9.]+)%\s+([0-9.]+)%\s+([0-9.]+)%", out, re.M)
    if not m:
        sys.exit(f"cannot read the Monte Carlo summary:\n{out}")
    # the compensation the trials' draws deviate from (program: compensated), per layer as nn eval's --json
    prog = [{"residual": float(p[1]), "scale_factor": float(p[2]), "iterations": int(p[3]), "seconds": float(p[4])}
            for p in re.findall(r"layer (\d+): residual weight error (\S+) \(max.*?scale x(\S+), (\d+) port solves, "
                                r"(\S+) s", out)]
    return {"mean": float(m.group(1)) / 100, "std": float(m.group(2)) / 100, "min": float(m.group(3)) / 100,
            "wall_s": dt, "cpu_s": run.cpu_s, "program": prog}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--anasim", default=os.path.join(HERE, "..", "build", "anasim"))
    ap.add_argument("--model", default=os.path.join(HERE, "..", "data", "mlp_784_128_10.h5"))
    ap.add_argument("--data", default=os.environ.get("ANASIM_MNIST", os.path.join(HERE, "..", "..", "shared", "mnist")))
    ap.add_argument("--samples", type=int, default=0, help="test images (0 = all 10,000)")
    ap.add_argument("--mc", action="store_true", help="also the Monte Carlo cells (sigma_g, --trials)")
    ap.add_argument("--sigma-g", type=float, default=0.05)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--cells", default="", help="only these cells, rows:rwire,... (rows 0 = one tile per layer)")
    ap.add_argument("--cache", default=os.path.join(HERE, "irdrop_cache.json"))
    ap.add_argument("--table-only", action="store_true", help="print the table from the cache, run nothing")
    ap.add_argument("--plot", default="", help="also write the plot of the table to this PNG (needs matplotlib)")
    a = ap.parse_args()

    cache = {}
    if os.path.exists(a.cache):
        with open(a.cache) as f:
            cache = json.load(f)

    def save():
        with open(a.cache + ".tmp", "w") as f:
            json.dump(cache, f, indent=1, sort_keys=True)
        os.replace(a.cache + ".tmp", a.cache)

    cells = [(r, w) for w in RWIRE for r in ROWS]
    if a.cells:
        cells = [(int(c.split(":")[0]), float(c.split(":")[1])) for c in a.cells.split(",")]
    tag = f"n{a.samples}"
    with tempfile.TemporaryDirectory() as tmp:
        if not a.table_only:
            key = f"oracle/{tag}"
            if key not in cache:
                cache[key] = eval_cell(a, tmp, key, hardware_yaml(0, 0, "ideal", ideal_array=True))
                save()
            for r, w in cells:
                for prog in ("ideal", "compensated"):
                    key = f"{prog}/{r}/{w}/{tag}"
                    if key not in cache:
                        cache[key] = eval_cell(a, tmp, key, hardware_yaml(r, w, prog))
                        save()
                        print(f"{key}: {100 * cache[key]['analog_accuracy']:.2f}% in {cache[key]['wall_s']:.1f} s",
                              file=sys.stderr, flush=True)
                    if a.mc:
                        key = f"mc{a.sigma_g}x{a.trials}/{prog}/{r}/{w}/{tag}"
                        if key not in cache:
                            cache[key] = mc_cell(a, tmp, key, hardware_yaml(r, w, prog, a.sigma_g))
                            save()
                            print(f"{key}: {100 * cache[key]['mean']:.2f}% in {cache[key]['wall_s']:.1f} s",
                                  file=sys.stderr, flush=True)
    print_table(cache, tag, a)
    if a.plot:
        plot(cache, tag, a.plot)


def plot(cache, tag, out):
    """Accuracy against tile rows, one line per wire resistance: uncompensated dashed, compensated solid, digital
    and the ideal-array oracle as horizontal lines; Monte Carlo means (sigma_g) as markers with std bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.4), dpi=110, sharex=True)
    xs = list(range(len(ROWS)))
    labels = [str(r) if r else "one tile\nper layer" for r in ROWS]
    colors = dict(zip(RWIRE, ["tab:blue", "tab:green", "tab:orange", "tab:red"]))
    oracle = cache.get(f"oracle/{tag}")
    for ax, zoom in zip(axes, (False, True)):
        for w in RWIRE:
            for prog, style in (("ideal", "--"), ("compensated", "-")):
                if zoom and prog == "ideal":
                    continue
                pts = [(x, cache[f"{prog}/{r}/{w}/{tag}"]["analog_accuracy"] * 100) for x, r in zip(xs, ROWS)
                       if f"{prog}/{r}/{w}/{tag}" in cache]
                if pts:
                    ax.plot(*zip(*pts), style, marker="o", ms=4, color=colors[w],
                            label=f"{w:g} ohm, {'compensated' if prog == 'compensated' else 'uncompensated'}")
                mc = [(x, cache[k]["mean"] * 100, cache[k]["std"] * 100) for x, r in zip(xs, ROWS)
                      for k in [k for k in cache if k.startswith("mc") and k.endswith(f"/{prog}/{r}/{w}/{tag}")]]
                if mc:  # shifted sideways by wire resistance so that the markers of one tile size stay apart
                    x, m, sd = zip(*mc)
                    x = [xi + 0.07 * (RWIRE.index(w) - 1.5) for xi in x]
                    ax.errorbar(x, m, yerr=sd, fmt="s" if prog == "compensated" else "^", ms=5, color=colors[w],
                                mfc="none", capsize=3,
                                label=f"{w:g} ohm, {prog if prog == 'compensated' else 'uncompensated'}, sigma_g MC")
        if oracle:
            ax.axhline(oracle["digital_accuracy"] * 100, color="k", lw=0.8, label="digital")
        ax.set_xticks(xs, labels)
        ax.set_xlabel("tile rows (physical, per row block)")
        ax.grid(alpha=0.3)
        if zoom:
            ax.set_ylim(97.0, 98.6)
            ax.set_title("compensated, zoomed")
        else:
            ax.set_ylim(0, 100)
            ax.set_ylabel("test accuracy [%]")
            ax.set_title("784-128-10 on MNIST: accuracy against tile size and wire resistance")
    handles, names = axes[0].get_legend_handles_labels()  # below both panels: inside, it hid the curves
    fig.legend(handles, names, fontsize=7, loc="lower center", ncol=4)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    fig.savefig(out)
    print(f"wrote {out}", file=sys.stderr)


def cell_time(r):
    """Wall time of a run [s], with its CPU time when recorded."""
    if not r:
        return "0"
    return f"{r['wall_s']:.0f}" + (f" ({r['cpu_s']:.0f} CPU)" if "cpu_s" in r else "")


def print_table(cache, tag, a):
    pct = lambda x: f"{100 * x:.2f}"
    oracle = cache.get(f"oracle/{tag}")
    digital = oracle["digital_accuracy"] if oracle else None
    print(f"Shipped 784-128-10, {'all 10,000' if a.samples == 0 else a.samples} test images; digital "
          f"{pct(digital) if digital else '?'}%; ideal arrays (the per-image oracle) "
          f"{pct(oracle['analog_accuracy']) if oracle else '?'}%.\n")
    print("| tile rows | rwire [ohm] | uncompensated [%] | compensated [%] | digital - compensated [points] | "
          "residual layer 0 / 1 | scale factor layer 0 | port solves layer 0 / 1 | compensation [s] | cell time [s], wall (CPU), shared machine |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for w in RWIRE:
        for r in ROWS:
            i = cache.get(f"ideal/{r}/{w}/{tag}")
            c = cache.get(f"compensated/{r}/{w}/{tag}")
            if not i and not c:
                continue
            prog = (c or {}).get("program", [])
            cols = [rows_label(r), f"{w:g}", pct(i["analog_accuracy"]) if i else "-",
                    pct(c["analog_accuracy"]) if c else "-",
                    f"{100 * (c['digital_accuracy'] - c['analog_accuracy']):.2f}" if c else "-",
                    " / ".join(f"{p['residual']:.1e}" for p in prog) or "-",
                    f"{prog[0]['scale_factor']:.3f}" if prog else "-",
                    " / ".join(str(p["iterations"]) for p in prog) or "-",
                    f"{sum(p['seconds'] for p in prog):.1f}" if prog else "-",
                    f"{cell_time(i)} + {cell_time(c)}"]
            print("| " + " | ".join(cols) + " |")
    heads = sorted({k.split("/")[0] for k in cache if k.startswith("mc") and k.endswith(tag)})
    for head in heads:  # one table per Monte Carlo setting, e.g. mc0.05x10: sigma_g 0.05, 10 trials
        sigma, trials = head[2:].split("x")
        print(f"\nUnder conductance variation (Monte Carlo, sigma_g {100 * float(sigma):g}%, {trials} trials; mean +- "
              "std over the trials, lowest trial in parentheses; compensation first, each trial drawn around its "
              "targets):\n")
        print("| tile rows | rwire [ohm] | uncompensated [%] | compensated [%] | digital - compensated [points] | "
              "port solves layer 0 / 1 | compensation [s] | cell time [s], wall (CPU), shared machine |")
        print("|---|---|---|---|---|---|---|---|")
        mc_pct = lambda v: f"{pct(v['mean'])} +- {100 * v['std']:.2f} ({pct(v['min'])})" if v else "-"
        for w in RWIRE:
            for r in ROWS:
                i = cache.get(f"{head}/ideal/{r}/{w}/{tag}")
                c = cache.get(f"{head}/compensated/{r}/{w}/{tag}")
                if not i and not c:
                    continue
                prog = (c or {}).get("program", [])
                cols = [rows_label(r), f"{w:g}", mc_pct(i), mc_pct(c),
                        f"{100 * (digital - c['mean']):.2f}" if c and digital else "-",
                        " / ".join(str(p["iterations"]) for p in prog) or "-",
                        f"{sum(p['seconds'] for p in prog):.1f}" if prog else "-",
                        f"{cell_time(i)} + {cell_time(c)}"]
                print("| " + " | ".join(cols) + " |")

if __name__ == "__main__":
    main()
