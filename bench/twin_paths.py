#!/usr/bin/env python3
"""What each "large input" twin code path buys: the same decks run by anasim binaries that differ only in one
twin being disabled, alternated run by run in one session, median wall time per binary.

The variants are builds of the same commit with one threshold raised out of reach (a measuring instrument, not
shipped code); see bench/README.md, "Twin paths", for the one-line edits. Usage:
  python3 bench/twin_paths.py --base build/anasim --variant noparse=/tmp/tw/noparse ... [--runs 7]
Python 3 standard library only; prints a Markdown table (median seconds, variant / base)."""
import argparse, os, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_crossbar, gen_circuits  # noqa: E402


def decks(tmp):
    """(label, path) of the largest decks of the benchmark set plus the 784x128 crossbar (one MNIST layer)."""
    out = []
    for r, c in ((256, 64), (784, 128)):
        p = os.path.join(tmp, f"xbar{r}x{c}.cir")
        with open(p, "w") as f:
            f.write(gen_crossbar.crossbar_deck(r, c))
        out.append((f"crossbar op {r}x{c}", p))
    for label, text in (("diode bridge tran 50 cycles", gen_circuits.bridge_deck(50)),
                        ("CW multiplier tran 8 stages", gen_circuits.multiplier_deck(8)),
                        ("RC sine tran 1e6 steps", gen_circuits.rc_steps_deck(1e6))):
        p = os.path.join(tmp, label.split()[0] + label.split()[-2] + ".cir")
        with open(p, "w") as f:
            f.write(text)
        out.append((label, p))
    return out


def run_once(binary, deck, outdir):
    t0 = time.perf_counter()
    r = subprocess.run([binary, "run", deck, "--csv", outdir], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{binary} failed on {deck}: {r.stderr.decode()[:500]}")
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="anasim with every twin path")
    ap.add_argument("--variant", action="append", default=[], help="NAME=PATH: anasim with one twin disabled")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", action="append", default=[], help="only decks whose label contains TEXT")
    a = ap.parse_args()
    bins = [("base", a.base)] + [tuple(v.split("=", 1)) for v in a.variant]
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for label, deck in decks(tmp):
            if a.only and not any(o in label for o in a.only):
                continue
            times = {n: [] for n, _ in bins}
            for _ in range(a.runs):  # alternate binaries run by run
                for n, b in bins:
                    times[n].append(run_once(b, deck, os.path.join(tmp, "csv_" + n)))
            med = {n: statistics.median(t) for n, t in times.items()}
            rows.append((label, med))
            print(label, " ".join(f"{n}={m:.3f}" for n, m in med.items()), file=sys.stderr, flush=True)
    names = [n for n, _ in bins]
    print(f"| deck | {' | '.join(names)} | " + " | ".join(f"{n}/base" for n in names[1:]) + " |")
    print("|---" * (2 * len(names)) + "|")
    for label, med in rows:
        print(f"| {label} | " + " | ".join(f"{med[n]:.3f}" for n in names) + " | "
              + " | ".join(f"{med[n] / med['base']:.2f}" for n in names[1:]) + " |")


if __name__ == "__main__":
    main()
