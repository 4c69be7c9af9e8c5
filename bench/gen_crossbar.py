#!/usr/bin/env python3
"""Writes the crossbar benchmark decks (SPICE): an R x C resistor crossbar with a wire segment of `rwire` ohm
between every pair of adjacent cells, a voltage source driving each row, and each column ending in one more
wire segment into the inverting input of a VCVS (gain 1e5) with a 1k feedback resistor. Optionally (transient
benchmark) every wire node also has `cwire` farad to ground, each TIA a feedback capacitor `cf` across its 1k,
and the rows are driven by PULSE sources (staggered delays) instead of DC."""
import argparse, os, random

def crossbar_deck(rows, cols, rwire=1.0, seed=1, analysis=".op", extra="", cwire=0.0, cf=0.0, pulse=None):
    """pulse: None for DC rows, else (td_step, tr, tf, pw, per): row i gets PULSE(0 v td_step*(i % 8) tr tf pw per)
    with the same random amplitude v its DC value would have had."""
    rnd = random.Random(seed)
    title = f"* crossbar {rows}x{cols} with {rwire} ohm wire segments, VCVS transimpedance read-out"
    if cwire:
        title += f", {cwire:g} F per wire node"
    out = [title]
    for i in range(rows):
        v = 0.1 + 0.1 * rnd.random()
        if pulse is None:
            out.append(f"v{i} rin{i} 0 dc {v:.6f}")
        else:
            td_step, tr, tf, pw, per = pulse
            out.append(f"v{i} rin{i} 0 dc 0 pulse(0 {v:.6f} {td_step * (i % 8):g} {tr:g} {tf:g} {pw:g} {per:g})")
        prev = f"rin{i}"
        for j in range(cols):
            out.append(f"rw{i}_{j} {prev} r{i}_{j} {rwire}")
            if cwire:
                out.append(f"cr{i}_{j} r{i}_{j} 0 {cwire:g}")
            prev = f"r{i}_{j}"
    for j in range(cols):
        for i in range(rows):
            g = 1e-6 + 99e-6 * rnd.random()   # 1 uS .. 100 uS
            out.append(f"rc{i}_{j} r{i}_{j} c{i}_{j} {1.0 / g:.6f}")
            if cwire:
                out.append(f"cc{i}_{j} c{i}_{j} 0 {cwire:g}")
            if i + 1 < rows:
                out.append(f"rv{i}_{j} c{i}_{j} c{i + 1}_{j} {rwire}")
        out.append(f"rt{j} c{rows - 1}_{j} n{j} {rwire}")
        out.append(f"e{j} out{j} 0 0 n{j} 1e5")
        out.append(f"rf{j} n{j} out{j} 1k")
        if cf:
            out.append(f"cf{j} n{j} out{j} {cf:g}")
    out.append(extra.rstrip()) if extra else None
    out.append(analysis)
    out.append(".end")
    return "\n".join(x for x in out if x is not None) + "\n"

def crossbar_yaml(rows, cols, g_csv, rwire=1.0, seed=1, analysis="{type: op}", cwire=0.0, cf=0.0, pulse=None):
    """The circuit of crossbar_deck(rows, cols, rwire, seed, ...) as a YAML netlist with one crossbar device
    (same random row voltages and cell conductances, each cell's g = 1 / the resistance the deck writes).
    Writes the conductances to g_csv (read by the device's g_csv line, relative to the netlist) and returns the
    YAML text. The row pins are rin<i>, the column pins n<j>, the TIA outputs out<j>, as in the deck."""
    rnd = random.Random(seed)
    out = [f"title: crossbar {rows}x{cols} with {rwire} ohm wire segments, VCVS transimpedance read-out"
           + (f", {cwire:g} F per wire node" if cwire else ""), "devices:"]
    for i in range(rows):
        v = 0.1 + 0.1 * rnd.random()
        if pulse is None:
            out.append(f"  - {{name: v{i}, type: v, nodes: [rin{i}, 0], dc: {v:.6f}}}")
        else:
            td_step, tr, tf, pw, per = pulse
            out.append(f"  - {{name: v{i}, type: v, nodes: [rin{i}, 0], dc: 0, pulse: [0, {v:.6f}, "
                       f"{td_step * (i % 8):g}, {tr:g}, {tf:g}, {pw:g}, {per:g}]}}")
    g = [[0.0] * cols for _ in range(rows)]
    for j in range(cols):
        for i in range(rows):
            r = float(f"{1.0 / (1e-6 + 99e-6 * rnd.random()):.6f}")
            g[i][j] = 1.0 / r
    with open(g_csv, "w") as f:
        for i in range(rows):
            f.write(",".join(f"{x:.17g}" for x in g[i]) + "\n")
    pins = ", ".join([f"rin{i}" for i in range(rows)] + [f"n{j}" for j in range(cols)])
    out.append(f"  - {{name: xb, type: crossbar, rows: {rows}, cols: {cols}, rwire_row: {rwire}, rwire_col: {rwire},"
               f" cwire: {cwire:g}, g_csv: {os.path.basename(g_csv)}, nodes: [{pins}]}}")
    for j in range(cols):
        out.append(f"  - {{name: e{j}, type: e, nodes: [out{j}, 0, 0, n{j}], gain: 1e5}}")
        out.append(f"  - {{name: rf{j}, type: r, nodes: [n{j}, out{j}], r: 1k}}")
        if cf:
            out.append(f"  - {{name: cf{j}, type: c, nodes: [n{j}, out{j}], c: {cf:g}}}")
    out += ["analyses:", f"  - {analysis}"]
    return "\n".join(out) + "\n"

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--cols", type=int, default=64)
    ap.add_argument("--rwire", type=float, default=1.0)
    ap.add_argument("--yaml", action="store_true",
                    help="write a YAML netlist with the crossbar device (conductances in OUTPUT's .g.csv)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    if a.yaml:
        text = crossbar_yaml(a.rows, a.cols, os.path.splitext(a.output)[0] + ".g.csv", a.rwire)
    else:
        text = crossbar_deck(a.rows, a.cols, a.rwire)
    open(a.output, "w").write(text)
