#!/usr/bin/env python3
"""Energy and latency of the shipped 784-128-10 network over the MNIST test set (issue 12): the fast transient path
(`anasim nn energy`) for all images, and in the same run the engine's transient of the full mapped netlist for one
image, for scale (`anasim nn energy --engine --samples 1`, stopped after --engine-limit seconds).

Usage: python3 bench/nn_energy.py --anasim build/anasim [--config data/examples/mnist_analog.yaml] [--samples 0]
       [--engine-limit 1800] [--markdown bench/RESULTS.md]
MNIST is found as `anasim nn` finds it (--data or $ANASIM_MNIST, default ../shared/mnist). Python 3 standard
library only; prints a Markdown row set (and appends it under a heading to --markdown when given)."""
import argparse, datetime, json, os, platform, re, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def run(cmd, limit=None):
    """(parsed --json output or None if stopped at `limit` seconds, wall seconds, the last progress line on stderr
    or "")."""
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, time.perf_counter() - t0, last_progress(err)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return json.loads(r.stdout), time.perf_counter() - t0, last_progress(r.stderr)


def last_progress(err):
    """The simulated time and points of the engine transient's last progress line (anasim --progress), as text."""
    found = re.findall(r"t = (\S+) s, (\d+) points, (\S+) s(?:, ETA (\S+) s)?", err)
    if not found:
        return ""
    t, points, wall, eta = found[-1]
    text = f"t = {float(t) * 1e9:.3g} ns in {points} time points, {float(wall):.0f} s into the transient"
    if eta:  # the progress line's estimate for the rest of the run at the rate so far
        text += f"; its estimate for the rest: {float(eta) / 3600:.3g} h"
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--anasim", default=os.path.join(ROOT, "build", "anasim"))
    ap.add_argument("--model", default=os.path.join(ROOT, "data", "mlp_784_128_10.h5"))
    ap.add_argument("--config", default=os.path.join(ROOT, "data", "examples", "mnist_analog.yaml"))
    ap.add_argument("--samples", type=int, default=0, help="test images (0 = all)")
    ap.add_argument("--engine-limit", type=float, default=1800, help="seconds allowed for the engine's one image")
    ap.add_argument("--markdown", help="append the rows to this file")
    a = ap.parse_args()
    base = [a.anasim, "nn", "energy", "--model", a.model, "--config", a.config, "--json"]
    load0 = os.getloadavg()[0]
    fast, t_fast, _ = run(base + ["--samples", str(a.samples)])
    eng, t_eng, eng_progress = run(base + ["--engine", "--samples", "1", "--progress"], a.engine_limit)
    load1 = os.getloadavg()[0]
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [f"Run {when} on {os.cpu_count()} cores, {cpu_name()}; load average {load0:.2f} at the start, "
             f"{load1:.2f} at the end (1-minute); config {os.path.relpath(a.config, ROOT)}.", "",
             "| path | images | wall [s] | per image [s] | accuracy | latency mean / p99 [s] | energy mean [J] | "
             "TOPS | TOPS/W |", "|---|---|---|---|---|---|---|---|---|"]
    f = fast
    lines.append(f"| fast transient | {f['samples']} | {t_fast:.1f} | {t_fast / f['samples']:.4g} | "
                 f"{100 * f['accuracy']:.2f}% | {f['latency_mean_s']:.4g} / {f['latency_p99_s']:.4g} | "
                 f"{f['energy_mean_j']:.4g} | {f['tops']:.4g} | {f['tops_per_w']:.4g} |")
    if eng is None:
        lines.append(f"| engine, full netlist | 1 | > {t_eng:.0f} (stopped{': ' + eng_progress if eng_progress else ''})"
                     f" | > {t_eng:.0f} | | | | | |")
    else:
        lines.append(f"| engine, full netlist | 1 | {t_eng:.1f} | {t_eng:.4g} | | {eng['latency_mean_s']:.4g} | "
                     f"{eng['energy_mean_j']:.4g} | | |")
    lines.append("")
    lines.append("Accuracy against sampling time (fast path): " + ", ".join(
        f"{t * 1e9:.0f} ns {100 * acc:.2f}%" for t, acc in f["accuracy_vs_sample_time"]) +
        f"; shortest within 0.1 points of settled: {f['shortest_sample_time_s'] * 1e9:.0f} ns.")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "a") as out:
            out.write("\n## Network energy and latency (bench/nn_energy.py)\n\n" + text)


if __name__ == "__main__":
    main()
