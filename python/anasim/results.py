"""anasim.run: every analysis of a netlist (YAML or SPICE; a path or the text itself) as NumPy arrays."""
import os
import re
from collections.abc import Mapping

import numpy as np

from . import _anasim


class Table(Mapping):
    """One analysis: signal name -> array (one value per row; AC: complex), plus its sweep variable by name.

    Attributes: kind ("op", "dc", "tran", "ac", "nn_eval", ...), group (output name: "op", "tran2", ...),
    sweep_name ("time", "frequency", a source name; "" for op), sweep (array), units (name -> unit string),
    scalars (name -> (value, unit); extension analyses), notes, stats (solver statistics).
    """

    def __init__(self, raw):
        self.kind = raw["kind"]
        self.group = raw["group"]
        self.sweep_name = raw["sweep_name"]
        self.sweep = raw["sweep"]
        self.units = {}
        self._data = {}
        if self.sweep_name:
            self._data[self.sweep_name] = raw["sweep"]
            self.units[self.sweep_name] = raw["sweep_unit"]
        if raw["sweep2_name"]:
            self._data[raw["sweep2_name"]] = raw["sweep2"]
            self.units[raw["sweep2_name"]] = raw["sweep_unit"]
        for name, unit, re_, im in raw["signals"]:
            self._data[name] = re_ if im is None else re_ + 1j * im
            self.units[name] = unit
        self.signals = [s[0] for s in raw["signals"]]
        self.scalars = {name: (value, unit) for name, unit, value in raw["scalars"]}
        self.notes = list(raw["notes"])
        self.stats = dict(raw["stats"])

    def __getitem__(self, name):
        return self._data[name]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"<anasim.Table {self.group}: {len(self.sweep) or 1} rows, signals {self.signals}>"


class Results(Mapping):
    """Results of anasim.run: analysis group -> Table; `mc` holds the Monte Carlo per-trial values.

    res["op"]["v(out)"], res["tran"]["time"], res["ac"]["v(out)"] (complex), res.mc["op/v(out)"] (one value per
    trial: the op value, or the final value of a sweep; AC magnitude), res.mc.units[...]; `warnings` lists the
    parser's and elaborator's warnings.
    """

    def __init__(self, raw):
        self.title = raw["title"]
        self.netlist = raw["netlist"]
        self.unknowns = raw["unknowns"]
        self.warnings = list(raw["warnings"])
        self._tables = {a["group"]: Table(a) for a in raw["analyses"]}
        self.mc = None
        if raw["mc"] is not None:
            m = raw["mc"]
            self.mc = McTable(m["trials"], m["seed"], m["measurements"])

    def __getitem__(self, group):
        return self._tables[group]

    def __iter__(self):
        return iter(self._tables)

    def __len__(self):
        return len(self._tables)

    def __repr__(self):
        return f"<anasim.Results {self.title!r}: {list(self._tables)}{', mc' if self.mc else ''}>"


class McTable(dict):
    """Monte Carlo: "<group>/<signal>" -> per-trial array; `units`, `trials`, `seed`; `summary()` statistics."""

    def __init__(self, trials, seed, measurements):
        super().__init__((name, values) for name, _, values in measurements)
        self.units = {name: unit for name, unit, _ in measurements}
        self.trials = trials
        self.seed = seed

    def summary(self):
        """name -> (mean, sample std, min, max), as `anasim run --mc` prints them."""
        return {k: (v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0, v.min(), v.max()) for k, v in self.items()}


_YAML_KEYS = re.compile(r"^(title|params|models|subcircuits|devices|analyses|options|ic|include|hardware)\s*:",
                        re.M)


def run(source, *, mc=0, seed=1, power=False, format=None, name=None, data=None):
    """Runs every analysis of a netlist, as `anasim run` does, and returns Results.

    source: a path (str or os.PathLike; the extension picks the reader) or the netlist text itself (a string
      containing a newline); format: "yaml" or "spice" for text (default: YAML if a line starts with a YAML
      section such as "devices:", else SPICE); name: the name used in error locations and for relative includes
      of text (default "<text>.yaml" / "<text>.cir" in the current directory).
    mc, seed: Monte Carlo trials drawing every parameter tolerance (res.mc), as `anasim run --mc N --seed S`.
    power: power probes p(<device>), p(type:<key>), p(total) [W] in every op, dc and tran, energies e(...) [J] in
      tran, as `anasim run --power` (or .options power in the netlist).
    data: data directory of nn_eval / nn_mc analyses (default: $ANASIM_DATA, then ../shared/mnist, ...).
    Raises InputError (file:line:col) or NumericalError.
    """
    is_text = not isinstance(source, os.PathLike) and "\n" in source
    if is_text:
        fmt = format or ("yaml" if _YAML_KEYS.search(source) else "spice")
        pseudo = name or ("<text>.yaml" if fmt == "yaml" else "<text>.cir")
    else:
        fmt, pseudo = "", ""
    raw = _anasim.run_netlist(os.fspath(source), is_text, fmt, pseudo, int(mc), int(seed), bool(power),
                              data or "")
    return Results(raw)
