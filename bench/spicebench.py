"""Shared helpers for anasim's benchmarks: run ngspice and anasim on the same deck, read both results,
time runs (median of several), and compare signals. Standard library only."""
import array, csv, os, platform, sys, shutil, statistics, struct, subprocess, tempfile, time


def read_raw(path):
    """Reads an ngspice raw file (binary or ascii). Returns a list of plots: dict(name, names, data, complex)."""
    blob = open(path, "rb").read()
    plots, pos = [], 0
    while pos < len(blob):
        hdr = {}
        names = []
        while True:
            end = blob.index(b"\n", pos)
            line = blob[pos:end].decode("latin-1")
            pos = end + 1
            if line.startswith("Variables:"):
                n = int(hdr["No. Variables"])
                for _ in range(n):
                    end = blob.index(b"\n", pos)
                    parts = blob[pos:end].decode("latin-1").split()
                    pos = end + 1
                    names.append(parts[1].lower())
                continue
            if line.startswith("Binary:") or line.startswith("Values:"):
                binary = line.startswith("Binary:")
                break
            if ":" in line:
                k, v = line.split(":", 1)
                hdr[k.strip()] = v.strip()
        nvar, npt = int(hdr["No. Variables"]), int(hdr["No. Points"])
        cplx = "complex" in hdr.get("Flags", "")
        data = [[] for _ in range(nvar)]
        if binary and not cplx:
            # one array of every value, then each variable is a strided slice (fast for 10^6 points)
            vals = array.array("d")
            vals.frombytes(blob[pos:pos + 8 * nvar * npt])
            if sys.byteorder != "little":
                vals.byteswap()
            pos += 8 * nvar * npt
            data = [vals[v::nvar].tolist() for v in range(nvar)]
        elif binary:
            width = 16 if cplx else 8
            fmt = "<" + "d" * (nvar * (2 if cplx else 1))
            for p in range(npt):
                vals = struct.unpack_from(fmt, blob, pos)
                pos += nvar * width
                for v in range(nvar):
                    data[v].append(complex(vals[2 * v], vals[2 * v + 1]) if cplx else vals[v])
        else:
            toks = []
            need = npt * (nvar + 1)
            while len(toks) < need and pos < len(blob):
                end = blob.find(b"\n", pos)
                end = len(blob) if end < 0 else end
                toks.extend(blob[pos:end].decode().split())
                pos = end + 1
            k = 0
            for p in range(npt):
                k += 1
                for v in range(nvar):
                    t = toks[k]; k += 1
                    if "," in t:
                        a, b = t.split(","); data[v].append(complex(float(a), float(b)))
                    else:
                        data[v].append(float(t))
        plots.append({"name": hdr.get("Plotname", ""), "names": names, "data": data, "complex": cplx})
    return plots


def read_csv(path):
    rows = list(csv.reader(open(path)))
    cols = list(zip(*[[float(x) for x in r] for r in rows[1:]]))
    return {h: list(c) for h, c in zip(rows[0], cols)}


def timed(cmd, runs):
    """Runs cmd `runs` times; returns (median wall seconds, list of times, last CompletedProcess)."""
    times, proc = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return statistics.median(times), times, proc


def ngspice_version(ngspice):
    out = subprocess.run([ngspice, "--version"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "ngspice-" in line:
            return line.strip("* ").strip()
    return "unknown"


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip(); break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, {platform.system()} {platform.release()}"
