#!/usr/bin/env python3
"""Writes the crossbar operating-point benchmark deck (SPICE): an R x C resistor crossbar with a wire segment
of `rwire` ohm between every pair of adjacent cells, a voltage source driving each row, and each column ending
in one more wire segment into the inverting input of a VCVS (gain 1e5) with a 1k feedback resistor."""
import argparse, random

def crossbar_deck(rows, cols, rwire=1.0, seed=1, analysis=".op", extra=""):
    rnd = random.Random(seed)
    out = [f"* crossbar {rows}x{cols} with {rwire} ohm wire segments, VCVS transimpedance read-out"]
    for i in range(rows):
        out.append(f"v{i} rin{i} 0 dc {0.1 + 0.1 * rnd.random():.6f}")
        prev = f"rin{i}"
        for j in range(cols):
            out.append(f"rw{i}_{j} {prev} r{i}_{j} {rwire}")
            prev = f"r{i}_{j}"
    for j in range(cols):
        for i in range(rows):
            g = 1e-6 + 99e-6 * rnd.random()   # 1 uS .. 100 uS
            out.append(f"rc{i}_{j} r{i}_{j} c{i}_{j} {1.0 / g:.6f}")
            if i + 1 < rows:
                out.append(f"rv{i}_{j} c{i}_{j} c{i + 1}_{j} {rwire}")
        out.append(f"rt{j} c{rows - 1}_{j} n{j} {rwire}")
        out.append(f"e{j} out{j} 0 0 n{j} 1e5")
        out.append(f"rf{j} n{j} out{j} 1k")
    out.append(extra.rstrip()) if extra else None
    out.append(analysis)
    out.append(".end")
    return "\n".join(x for x in out if x is not None) + "\n"

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--cols", type=int, default=64)
    ap.add_argument("--rwire", type=float, default=1.0)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    open(a.output, "w").write(crossbar_deck(a.rows, a.cols, a.rwire))
