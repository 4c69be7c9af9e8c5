#!/usr/bin/env python3
"""Writes the non-crossbar benchmark circuits: SPICE decks for the RC ladder, the million-step RC, the diode
bridge rectifier and the Cockcroft-Walton multiplier, and a YAML netlist (type: opamp) for the cascaded
Sallen-Key filter, which the benchmark exports with `anasim export --spice`. Every function returns the text."""
import argparse


def rc_ladder_deck(sections, r=1e3, c=1e-12):
    """`sections` series R / shunt C sections driven by a 0 -> 1 V step; the run lasts about twice the ladder's
    Elmore delay (sections^2 R C / 2), so the step travels to the far end."""
    tstop = sections * sections * r * c            # 1 ms for 1000 sections of 1k / 1p
    out = [f"* RC ladder, {sections} sections of {r:g} ohm / {c:g} F, 1 V step"]
    out.append(f"vin n0 0 dc 0 pulse(0 1 {tstop / 1000:g} {tstop / 1000:g} {tstop / 1000:g} {10 * tstop:g} {20 * tstop:g})")
    for k in range(1, sections + 1):
        out.append(f"r{k} n{k - 1} n{k} {r:g}")
        out.append(f"c{k} n{k} 0 {c:g}")
    out.append(f".tran {tstop / 1000:g} {tstop:g}")
    out.append(".end")
    return "\n".join(out) + "\n"


def rc_steps_deck(steps):
    """A SIN-driven RC low-pass (1 kHz, tau 0.1 ms) whose tmax forces `steps` timesteps: tstop / tmax = steps."""
    tmax = 1e-6
    tstop = steps * tmax
    return "\n".join([
        f"* RC low-pass driven by a 1 kHz sine, tstop / tmax = {steps:g} timesteps",
        "vin in 0 dc 0 sin(0 1 1k)",
        "r1 in out 1k",
        "c1 out 0 100n",
        f".tran {tmax:g} {tstop:g} 0 {tmax:g}",
        ".end"]) + "\n"


# Rectifier diode shared by the bridge and the multiplier (junction and diffusion capacitance, series R).
DIODE_MODEL = ".model drect d(is=2.5e-9 n=1.75 rs=0.05 cjo=40p vj=0.6 m=0.45 tt=4u)"


def bridge_deck(cycles, freq=50.0, points_per_cycle=4000):
    """Full-wave diode bridge with an RC load (500 ohm || 100 uF) from a 10 V sine, `cycles` periods.
    tmax = period / points_per_cycle: ngspice needs this to resolve the diode edges to 1e-3 of the range
    (tests/crosscheck/bridge_rectifier.cir uses the same 5 us at 50 Hz); anasim gets the same deck."""
    period = 1.0 / freq
    tmax = period / points_per_cycle
    return "\n".join([
        f"* full-wave diode bridge, RC load, {freq:g} Hz sine, {cycles} cycles",
        DIODE_MODEL,
        f"vs ac1 ac2 dc 0 sin(0 10 {freq:g})",
        "rsrc ac2 0 1meg",
        "d1 ac1 pos drect",
        "d2 ac2 pos drect",
        "d3 neg ac1 drect",
        "d4 neg ac2 drect",
        "rgnd neg 0 1m",
        "rl pos 0 500",
        "cl pos 0 100u",
        f".tran {10 * tmax:g} {cycles * period:g} 0 {tmax:g}",
        ".end"]) + "\n"


# Multiplier diode: Schottky-like, junction capacitance but no transit time. With tt = 4 us the stored charge
# runs out abruptly at 10 kHz and the node voltages jump by 0.6 V within 100 ns; where that jump falls then
# differs by nanoseconds between any two time grids (also between two ngspice runs with different tmax), so
# pointwise comparison measures the grid, not the simulators.
MULT_DIODE_MODEL = ".model dsch d(is=1e-8 n=1.05 rs=0.1 cjo=100p vj=0.4 m=0.5)"


def multiplier_deck(stages, cycles=100, freq=10e3, points_per_cycle=500):
    """Half-wave Cockcroft-Walton voltage multiplier with `stages` stages (2 diodes and 2 capacitors each) from a
    10 V, 10 kHz sine through 10 ohm, loaded by 1 Mohm, for `cycles` periods (the output charges towards
    2 * stages * 10 V). tmax = period / points_per_cycle for both simulators: with 200 points per cycle both
    are 1.8e-3 of the range off a tmax = 5 ns reference (and 1.8e-3 apart), with 500 both are within 4e-4."""
    period = 1.0 / freq
    tmax = period / points_per_cycle
    out = [f"* {stages}-stage Cockcroft-Walton multiplier, {freq:g} Hz 10 V sine, {cycles} cycles",
           MULT_DIODE_MODEL,
           f"vs src 0 dc 0 sin(0 10 {freq:g})",
           "rs src p0 10"]
    for k in range(1, stages + 1):
        s_prev = "0" if k == 1 else f"s{k - 1}"
        out.append(f"cp{k} p{k - 1} p{k} 1u")      # pumping column
        out.append(f"cs{k} {s_prev} s{k} 1u")       # smoothing column
        out.append(f"da{k} {s_prev} p{k} dsch")
        out.append(f"db{k} p{k} s{k} dsch")
    out.append(f"rl s{stages} 0 1meg")
    out.append(f".tran {10 * tmax:g} {cycles * period:g} 0 {tmax:g}")
    out.append(".end")
    return "\n".join(out) + "\n"


def sallen_key_yaml(stages, model="ua741"):
    """`stages` cascaded unity-gain Sallen-Key low-pass sections (10k, 10k, 20n, 10n: f0 = 1.13 kHz, Q = 0.71),
    each with a `type: opamp` macro model (level 2) on +-15 V supplies, driven by a 1 V, 250 Hz square wave."""
    lines = [f"title: {stages} cascaded Sallen-Key low-pass sections, {model} macro model op-amps",
             "devices:",
             "  - {name: vin, type: v, nodes: [s0, 0], dc: 0, pulse: [0, 1, 0.1m, 10u, 10u, 2m, 4m]}",
             "  - {name: vcc, type: v, nodes: [vcc, 0], dc: 15}",
             "  - {name: vee, type: v, nodes: [vee, 0], dc: -15}"]
    for k in range(1, stages + 1):
        lines += [
            f"  - {{name: r{k}a, type: r, nodes: [s{k - 1}, a{k}], r: 10k}}",
            f"  - {{name: r{k}b, type: r, nodes: [a{k}, b{k}], r: 10k}}",
            f"  - {{name: c{k}a, type: c, nodes: [a{k}, s{k}], c: 20n}}",
            f"  - {{name: c{k}b, type: c, nodes: [b{k}, 0], c: 10n}}",
            f"  - {{name: u{k}, type: opamp, nodes: [b{k}, s{k}, s{k}, vcc, vee], model: {model}, level: 2}}"]
    lines += [f"  - {{name: rl, type: r, nodes: [s{stages}, 0], r: 10k}}",
              "analyses:",
              "  - {type: tran, tstep: 2u, tstop: 12m}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("circuit", choices=["rc_ladder", "rc_steps", "bridge", "multiplier", "sallen_key"])
    ap.add_argument("size", type=float, help="sections, steps, cycles, stages or stages")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    n = int(a.size)
    text = {"rc_ladder": lambda: rc_ladder_deck(n), "rc_steps": lambda: rc_steps_deck(n),
            "bridge": lambda: bridge_deck(n), "multiplier": lambda: multiplier_deck(n),
            "sallen_key": lambda: sallen_key_yaml(n)}[a.circuit]()
    open(a.output, "w").write(text)
