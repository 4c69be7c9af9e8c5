"""Figures of anasim results with matplotlib (Agg backend): transient waveforms, DC sweeps, AC Bode plots, Monte
Carlo histograms, accuracy versus a swept hardware parameter, crossbar conductance and IR-drop maps, and one
image's per-layer activations digital next to analog. Every function returns the Figure and, given `out`, writes
it (PNG or SVG by extension) at `size` = (width, height) pixels at `dpi`.

Command line (reads anasim's HDF5 results; `python3 -m anasim.plot --help`):
    python3 -m anasim.plot RESULTS.h5 tran v(out) v(in) -o tran.png
    python3 -m anasim.plot RESULTS.h5 dc|ac|hist|accuracy [SIGNAL ...] -o FILE.png|svg [--size 800x500]
"""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

DEFAULT_SIZE = (800, 500)  # [pixels]
DEFAULT_DPI = 100

# SI prefixes for axis scaling: a quantity in `unit` is shown as value / factor in prefix+unit.
_PREFIXES = [(1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"),
             (1e-15, "f")]


def _scale(values, unit):
    """(factor, label unit) so that the largest |value| / factor lies in [1, 1000)."""
    v = np.abs(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    m = v.max() if v.size else 0.0
    if not unit or m == 0.0 or unit in ("%", "dB", "°", "LSB"):
        return 1.0, unit
    for f, p in _PREFIXES:
        if m >= f:
            return f, p + unit
    return _PREFIXES[-1][0], _PREFIXES[-1][1] + unit


def _figure(size, dpi, rows=1, cols=1, **kw):
    w, h = size
    fig, ax = plt.subplots(rows, cols, figsize=(w / dpi, h / dpi), dpi=dpi, **kw)
    return fig, ax


def _finish(fig, out, dpi):
    fig.tight_layout()
    if out is not None:
        fig.savefig(out, dpi=dpi)
        plt.close(fig)
    return fig


def _quantity(unit):
    return {"V": "voltage", "A": "current", "s": "time", "Hz": "frequency", "W": "power", "J": "energy"}.get(
        unit, "value")


def _signals_plot(table, signals, out, size, dpi, title, xlog=False):
    """Signals against the sweep variable; signals of a second unit (e.g. currents next to voltages) on a right
    axis. Default: every voltage (every signal when there is none)."""
    if not signals:
        signals = [s for s in table.signals if table.units[s] == "V"] or list(table.signals)
    fig, ax = _figure(size, dpi)
    xf, xu = _scale(table.sweep, table.units.get(table.sweep_name, ""))
    units = list(dict.fromkeys(table.units[s] for s in signals))
    axes = [ax] + [ax.twinx() for _ in units[1:2]]
    lines = []
    for k, unit in enumerate(units[:2]):
        group = [s for s in signals if table.units[s] == unit] if k == 0 or len(units) == 2 else \
            [s for s in signals if table.units[s] != units[0]]
        yf, yu = _scale(np.concatenate([np.real(table[s]) for s in group]), unit)
        for s in group:
            lines += axes[k].plot(np.asarray(table.sweep) / xf, np.real(table[s]) / yf, label=s,
                                  color=f"C{len(lines)}", linestyle="-" if k == 0 else "--")
        axes[k].set_ylabel(f"{_quantity(unit)} [{yu}]" if yu else "value")
    ax.set_xlabel(f"{table.sweep_name} [{xu}]" if xu else table.sweep_name)
    if xlog:
        ax.set_xscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(lines, [l.get_label() for l in lines], fontsize="small")
    ax.set_title(title)
    return _finish(fig, out, dpi)


def transient(table, signals=None, out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, title="Transient"):
    """Waveforms of `signals` (default: all) of a tran Table (anasim.run(...)["tran"]) against time."""
    return _signals_plot(table, signals, out, size, dpi, title)


def dc_sweep(table, signals=None, out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, title="DC sweep"):
    """Signals of a dc Table against the swept source's value."""
    return _signals_plot(table, signals, out, size, dpi, title)


def bode(table, signals=None, out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, title="AC response"):
    """Bode plot of an ac Table: magnitude [dB re 1 V or 1 A] and phase [°] against frequency (log)."""
    signals = signals or list(table.signals)
    fig, (am, ph) = _figure(size, dpi, 2, 1, sharex=True)
    f = np.asarray(table.sweep)
    for s in signals:
        h = np.asarray(table[s], dtype=complex)
        am.semilogx(f, 20 * np.log10(np.maximum(np.abs(h), 1e-300)), label=s)
        ph.semilogx(f, np.degrees(np.unwrap(np.angle(h))), label=s)
    units = sorted({table.units[s] for s in signals})
    am.set_ylabel(f"magnitude [dB re 1 {'/'.join(units)}]")
    ph.set_ylabel("phase [°]")
    ph.set_xlabel("frequency [Hz]")
    for a in (am, ph):
        a.grid(True, which="both", alpha=0.3)
    am.legend(fontsize="small")
    am.set_title(title)
    return _finish(fig, out, dpi)


def histogram(values, name="", unit="", out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, bins=None, title=None):
    """Histogram of per-trial Monte Carlo values (e.g. res.mc["op/v(out)"], unit res.mc.units[...]), with the
    mean and +-1 sigma marked."""
    v = np.asarray(values, dtype=float)
    f, u = _scale(v, unit)
    fig, ax = _figure(size, dpi)
    ax.hist(v / f, bins=bins or max(10, min(60, int(np.sqrt(v.size)) * 2)), color="tab:blue", alpha=0.8)
    m, s = v.mean(), v.std(ddof=1) if v.size > 1 else 0.0
    for x, style in ((m, "-"), (m - s, "--"), (m + s, "--")):
        ax.axvline(x / f, color="k", linestyle=style, linewidth=1)
    ax.set_xlabel(f"{name} [{u}]" if u else name)
    ax.set_ylabel("trials")
    ax.set_title(title or f"Monte Carlo, {v.size} trials: mean {m / f:.4g} {u}, std {s / f:.3g} {u}")
    ax.grid(True, alpha=0.3)
    return _finish(fig, out, dpi)


def accuracy_sweep(mc, out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, param=None, values=None, title=None):
    """Accuracy [%] against a swept hardware parameter: mean with the min-max band and the 5th percentile.
    mc: an McAccuracy (Network.monte_carlo), or an accuracy array (points x trials, fractions) with `values`."""
    if hasattr(mc, "accuracy"):
        acc, param, values = np.asarray(mc.accuracy), param or mc.param, values or mc.values
    else:
        acc = np.asarray(mc)
    x = np.array([float(v) for v in values]) if values is not None and len(values) else np.arange(acc.shape[0])
    pct = 100.0 * acc
    p5 = np.percentile(pct, 5, axis=1)  # linear interpolation between order statistics, as anasim nn mc
    fig, ax = _figure(size, dpi)
    ax.fill_between(x, pct.min(axis=1), pct.max(axis=1), color="tab:blue", alpha=0.2, label="min - max")
    ax.plot(x, pct.mean(axis=1), "o-", color="tab:blue", label="mean")
    ax.plot(x, p5, "s--", color="tab:red", label="5th percentile")
    unit = {p[0]: p[1] for p in _param_units()}.get(param or "", "")
    ax.set_xlabel(f"{param} [{unit}]" if unit else (param or "sweep point"))
    ax.set_ylabel("accuracy [%]")
    ax.set_title(title or f"Accuracy over {acc.shape[1]} mismatch trials per point")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _finish(fig, out, dpi)


def _param_units():
    try:
        from . import _anasim
        return [(n, u) for n, u, _, _ in _anasim.hardware_params()]
    except ImportError:
        return []


def conductance_map(tile, out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, title=None):
    """Programmed conductance of every cell of a crossbar tile [µS] (MappedNetwork.crossbar(...))."""
    g = np.asarray(tile["g"]) * 1e6
    fig, ax = _figure(size, dpi)
    im = ax.imshow(g, aspect="auto", interpolation="nearest", cmap="viridis")
    fig.colorbar(im, ax=ax, label="conductance [µS]")
    ax.set_xlabel("column (neuron)")
    ax.set_ylabel("physical row (+v, -v pairs)")
    ax.set_title(title or f"Conductances of tile {tile['name']}")
    return _finish(fig, out, dpi)


def ir_drop_map(tile, out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, title=None):
    """IR drop of a crossbar tile for one input (MappedNetwork.crossbar(..., image=x)), three maps over the cells
    (magnitudes: the rows carry +v and -v in pairs): the row-line voltage at every cell; the drop along each row
    from the cell nearest the driver, |v(i, 0)| - |v(i, j)|; and the voltage across every cell (row end minus
    column end)."""
    vr, vc = np.asarray(tile["v_row"]), np.asarray(tile["v_col"])
    maps = ((np.abs(vr), "|row-line voltage|", "viridis", False),
            (np.abs(vr[:, :1]) - np.abs(vr), "drop along the row", "magma", False),
            (np.abs(vr - vc), "|voltage across the cell|", "viridis", False))
    fig, axes = _figure(size, dpi, 1, 3)
    for ax, (data, label, cmap, symmetric) in zip(axes, maps):
        f, u = _scale(data, "V")
        lim = np.abs(data).max() / f
        im = ax.imshow(data / f, aspect="auto", interpolation="nearest", cmap=cmap,
                       vmin=-lim if symmetric else None, vmax=lim if symmetric else None)
        fig.colorbar(im, ax=ax).set_label(f"{label} [{u}]")
        ax.set_xlabel("column (neuron)")
        ax.set_title(label)
    axes[0].set_ylabel("physical row (+v, -v pairs)")
    fig.suptitle(title or f"Tile {tile['name']}: voltages at the cells for one input")
    return _finish(fig, out, dpi)


def activations(network, mapped, image, out=None, size=DEFAULT_SIZE, dpi=DEFAULT_DPI, sample=0, title=None):
    """One image and its per-layer pre-activations z, the float network's next to the circuit's (z = TIA output /
    nominal gain; hidden layers after ReLU). network: Network; mapped: its MappedNetwork; image: pixels."""
    x = np.asarray(image, dtype=np.float32).reshape(-1)
    digital = [z[0] for z in network.forward(x)]
    probe = mapped.probe(x, sample)
    n = len(digital)
    fig, axes = _figure(size, dpi, 1, n + 1, gridspec_kw={"width_ratios": [1] + [2] * n})
    side = int(round(np.sqrt(x.size)))
    if side * side == x.size:
        axes[0].imshow(x.reshape(side, side), cmap="gray_r", vmin=0, vmax=1)
    else:
        axes[0].imshow(x.reshape(1, -1), aspect="auto", cmap="gray_r", vmin=0, vmax=1)
    axes[0].set_title("input")
    axes[0].set_xticks([])
    axes[0].set_yticks([])
    for l in range(n):
        ax, last = axes[l + 1], l == n - 1
        d, a = digital[l], probe["layers"][l]["z"]
        if not last:
            d, a = np.maximum(d, 0), np.maximum(a, 0)
        k = np.arange(d.size)
        ax.bar(k - 0.2, d, width=0.4, label="digital", color="tab:gray")
        ax.bar(k + 0.2, a, width=0.4, label="analog", color="tab:orange")
        ax.set_xlabel("neuron")
        ax.set_ylabel("logit (network units)" if last else "relu(z) (network units)")
        ax.set_title(f"layer {l}" + (f": class {int(np.argmax(d))} / {int(np.argmax(a))}" if last else ""))
        ax.grid(True, alpha=0.3)
    axes[-1].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return _finish(fig, out, dpi)


# ---- command line ---------------------------------------------------------------------------------------------

class _H5Table:
    """An analysis group of an anasim HDF5 file, read like a Table: the sweep dataset named by the "sweep"
    attribute, and one subgroup per unit holding "names" and a signals x points matrix, "values" or (AC)
    "magnitude" and "phase" in degrees, recombined into complex values."""

    def __init__(self, group):
        def text(v):
            return v.decode() if isinstance(v, bytes) else str(v)
        self.sweep_name = text(group.attrs.get("sweep", ""))
        self.units, self._data = {}, {}
        points = 0
        for name, obj in group.items():
            if getattr(obj, "ndim", 0) == 1 and name == self.sweep_name:
                self.sweep = obj[()]
            if not hasattr(obj, "keys") or "names" not in obj:
                continue
            unit = text(obj.attrs.get("unit", ""))
            names = [text(n) for n in obj["names"][()]]
            if "values" in obj:
                rows = obj["values"][()]
            else:
                rows = obj["magnitude"][()] * np.exp(1j * np.radians(obj["phase"][()]))
            points = rows.shape[1]
            for n, row in zip(names, rows):
                self._data[n], self.units[n] = row, unit
        if not hasattr(self, "sweep"):
            self.sweep = np.arange(points)
        self.signals = list(self._data)

    def __getitem__(self, k):
        return self._data[k]

def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m anasim.plot",
                                description="Plot anasim HDF5 results (anasim run -o, anasim nn mc -o).")
    p.add_argument("results", help="HDF5 file")
    p.add_argument("kind", choices=["tran", "dc", "ac", "hist", "accuracy"],
                   help="tran/dc/ac: signals of that analysis group; hist: Monte Carlo histogram of a /mc "
                        "measurement (e.g. op/v(out)); accuracy: /mc/accuracy of `anasim nn mc -o`")
    p.add_argument("signals", nargs="*", help="signal names (default: all)")
    p.add_argument("-o", "--output", required=True, help="figure file (.png or .svg)")
    p.add_argument("--group", help="analysis group when not the kind itself (tran2, dc2, ...)")
    p.add_argument("--size", default=f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}", help="WIDTHxHEIGHT in pixels")
    p.add_argument("--dpi", type=int, default=DEFAULT_DPI)
    a = p.parse_args(argv)
    import h5py
    size = tuple(int(v) for v in a.size.lower().split("x"))
    with h5py.File(a.results, "r") as f:
        if a.kind in ("tran", "dc", "ac"):
            group = a.group or a.kind
            if group not in f:
                p.error(f"{a.results} has no /{group} group (groups: {', '.join(f.keys())})")
            t = _H5Table(f[group])
            missing = [s for s in a.signals if s not in t.signals]
            if missing:
                p.error(f"/{group} has no signal {', '.join(missing)} (signals: {', '.join(t.signals)})")
            {"tran": transient, "dc": dc_sweep, "ac": bode}[a.kind](t, a.signals or None, a.output, size, a.dpi)
        elif a.kind == "hist":
            g = f["mc"] if "mc" in f else p.error(f"{a.results} has no /mc group")
            found = []
            g.visititems(lambda n, o: found.append(n) if getattr(o, "ndim", 0) == 1 else None)
            names = a.signals or found[:1]
            if not names or names[0] not in found:
                p.error(f"/mc has no measurement {names[0] if names else ''} (measurements: {', '.join(found)})")
            ds = g[names[0]]
            unit = ds.attrs.get("unit", b"")
            histogram(ds[()], names[0], unit.decode() if isinstance(unit, bytes) else str(unit), a.output, size,
                      a.dpi)
        else:
            g = f["mc"] if "mc" in f else p.error(f"{a.results} has no /mc group")
            attr = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in g.attrs.items()}
            values = [v for v in str(attr.get("sweep_values", "")).split(",") if v]
            accuracy_sweep(g["accuracy"][()], a.output, size, a.dpi, param=str(attr.get("sweep_param", "")),
                           values=values)
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
