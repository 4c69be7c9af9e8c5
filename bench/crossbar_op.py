#!/usr/bin/env python3
"""Benchmark: DC operating point of a resistor crossbar with wire resistance read out by VCVS
transimpedance amplifiers, through ngspice and anasim on the very same deck, in one run.
Prints wall times (median of --runs for anasim; ngspice runs once if it takes over a minute), the ratio,
and the largest node-voltage difference. Usage: bench/crossbar_op.py [--rows 256 --cols 64] [--anasim PATH]"""
import argparse, datetime, os, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spicebench as sb
from gen_crossbar import crossbar_deck

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--cols", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5, help="anasim runs (median)")
    ap.add_argument("--ngspice-runs", type=int, default=1)
    ap.add_argument("--ngspice", default="ngspice")
    ap.add_argument("--klu", action="store_true", help="add .options klu (for ngspice builds with KLU)")
    ap.add_argument("--anasim", default=os.path.join(here, "..", "build", "anasim"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="anasim_bench_")
    deck = os.path.join(tmp, "crossbar.cir")
    open(deck, "w").write(crossbar_deck(a.rows, a.cols, extra=".options klu" if a.klu else ""))
    raw = os.path.join(tmp, "ng.raw")
    t_ng, ng_times, _ = sb.timed([a.ngspice, "-b", "-r", raw, deck], a.ngspice_runs)
    csvdir = os.path.join(tmp, "an")
    t_an, an_times, proc = sb.timed([a.anasim, "run", deck, "--csv", csvdir], a.runs)
    # agreement on every node voltage
    ng = [p for p in sb.read_raw(raw) if p["name"].lower().startswith("operating")][0]
    an = sb.read_csv(os.path.join(csvdir, "op.csv"))
    worst, worst_name, compared = 0.0, "", 0
    for name, col in an.items():
        if not name.startswith("v("):
            continue
        if name not in ng["names"]:
            sys.exit(f"ngspice has no {name}")
        d = abs(col[0] - ng["data"][ng["names"].index(name)][0])
        compared += 1
        if d > worst:
            worst, worst_name = d, name
    unknowns = [l for l in proc.stdout.splitlines() if "unknowns" in l][0].split()[-1]
    print(f"date        {datetime.date.today()}")
    print(f"machine     {sb.machine()}")
    print(f"ngspice     {sb.ngspice_version(a.ngspice)}{' with .options klu' if a.klu else ''}")
    print(f"circuit     crossbar {a.rows}x{a.cols}, 1 ohm wire segments, VCVS TIA read-out, {unknowns} unknowns")
    print(f"ngspice     {t_ng:.3f} s wall (runs: {', '.join(f'{t:.3f}' for t in ng_times)})")
    print(f"anasim      {t_an:.4f} s wall, median of {a.runs} (runs: {', '.join(f'{t:.4f}' for t in an_times)})")
    print(f"ratio       {t_ng / t_an:.0f}x")
    print(f"agreement   {compared} node voltages, max |diff| {worst:.3g} V at {worst_name}")
    ok = worst <= 1e-6
    print("PASS" if ok else "FAIL: node voltages differ by more than 1 uV")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
