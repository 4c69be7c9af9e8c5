"""Networks on analog hardware from Python: an MLP from NumPy (weight, bias) pairs or a torch.nn.Sequential of
Linear and ReLU layers, hardware from a YAML file and/or keyword overrides, evaluation of a NumPy batch through
the mapped circuit (the same C++ path and numbers as `anasim nn eval`) and the Monte Carlo of `anasim nn mc`."""
import os
from dataclasses import dataclass

import numpy as np

from . import _anasim


def load_mnist(split="test", data=None, dataset="mnist"):
    """(images float32 N x 28 x 28 in [0, 1], labels int32) of one split ("train" or "test") of the IDX files,
    found as the command line finds them: `data`, else $ANASIM_DATA, else ../shared/mnist and the other defaults."""
    images, labels, _ = _anasim.load_mnist(split, data or "", dataset)
    return images, labels


def _value_text(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v)


class Hardware:
    """Hardware of the accelerator: defaults, then the `hardware:` section of `config` (a YAML file; the whole file
    when it has no such section), then the keyword overrides in order. Keys are the table of nn/hardware.cpp
    (anasim.hardware_params()): Hardware("data/examples/mnist_hw.yaml", rwire=2, sigma_g=0.05,
    opamp={"model": "lm358", "level": 2}, mode="hybrid"). Values may be numbers or SPICE-suffixed text ("100u")."""

    def __init__(self, config=None, **overrides):
        self.config = os.fspath(config) if config is not None else ""
        self.overrides = []
        for key, value in overrides.items():
            if key == "opamp" and isinstance(value, dict):
                for k, v in value.items():
                    self.overrides.append((f"opamp.{k}", _value_text(v)))
            else:
                self.overrides.append((key, _value_text(value)))

    def with_(self, **overrides):
        """A copy with more overrides (later ones win)."""
        h = Hardware(self.config or None)
        h.overrides = self.overrides + Hardware(**overrides).overrides
        return h

    def __repr__(self):
        return f"Hardware({self.config!r}, {dict(self.overrides)})"


@dataclass
class Evaluation:
    """Result of Network.evaluate for N images (K classes)."""
    classes: np.ndarray   # int32 N: class read from the circuit (argmax of the last layer's ADC codes)
    codes: np.ndarray     # int64 N x K: last layer's ADC codes
    outputs: np.ndarray   # float64 N x K [V]: last layer's TIA output voltages (None with outputs=False)
    digital: np.ndarray   # int32 N: class of the float network (the digital reference)
    labels: np.ndarray = None

    @property
    def analog_accuracy(self):
        return float(np.mean(self.classes == self.labels)) if self.labels is not None else None

    @property
    def digital_accuracy(self):
        return float(np.mean(self.digital == self.labels)) if self.labels is not None else None

    @property
    def agreement(self):
        return float(np.mean(self.classes == self.digital)) if len(self.classes) else 0.0


@dataclass
class McAccuracy:
    """Monte Carlo accuracy (fractions): accuracy[point, trial], per-point statistics over the trials."""
    param: str            # swept hardware parameter ("" without a sweep)
    values: list          # its values as given (one per point)
    accuracy: np.ndarray  # points x trials
    mean: np.ndarray
    std: np.ndarray       # sample standard deviation
    min: np.ndarray
    p5: np.ndarray        # 5th percentile (linear interpolation), as `anasim nn mc`
    digital_accuracy: float
    samples: int
    seed: int
    program: list = None  # per point, with program: compensated, per layer a dict (residual, residual_out,
                          # scale_factor, port_solves, seconds) of the targets every trial's draw deviates from


def _images(x):
    x = np.asarray(x, dtype=np.float32)
    return np.ascontiguousarray(x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], int(np.prod(x.shape[1:]))))


def _image(x):
    """One image (any shape) as a 1 x pixels float32 array."""
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32).reshape(1, -1))


def _sweep_text(sweep):
    if sweep is None:
        return ""
    if isinstance(sweep, str):
        return sweep
    if isinstance(sweep, dict):
        (param, values), = sweep.items()
    else:
        param, values = sweep
    return f"{param}=" + ",".join(_value_text(v) for v in values)


class Network:
    """A multilayer perceptron: dense layers with ReLU between them (the activation the hardware maps: a
    precision rectifier in analog mode, a digital ReLU in hybrid mode). layers: (weight outputs x inputs, bias)."""

    def __init__(self, layers, activation="relu"):
        if activation != "relu":
            raise ValueError(f"activation {activation!r}: the hardware maps ReLU only")
        self.layers = [(np.ascontiguousarray(w, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64))
                       for w, b in layers]

    @classmethod
    def from_torch(cls, model):
        """From a torch.nn.Sequential of Linear layers with ReLU between them (Flatten first is allowed)."""
        import torch.nn as tnn
        layers, expect_relu = [], False
        for i, m in enumerate(model):
            if isinstance(m, tnn.Flatten) and i == 0:
                continue
            if isinstance(m, tnn.Linear):
                if expect_relu:
                    raise ValueError(f"layer {i}: a ReLU must follow every Linear layer but the last")
                w = m.weight.detach().cpu().double().numpy()
                b = (m.bias.detach().cpu().double().numpy() if m.bias is not None else np.zeros(w.shape[0]))
                layers.append((w, b))
                expect_relu = True
            elif isinstance(m, tnn.ReLU) and expect_relu:
                expect_relu = False
            else:
                raise ValueError(f"layer {i}: {type(m).__name__} is not supported (Linear and ReLU only)")
        if not layers or not expect_relu:
            raise ValueError("the model must end with a Linear layer")
        return cls(layers)

    @classmethod
    def load(cls, path):
        """From an anasim-mlp-1 model file (data/mlp_784_128_10.h5, `anasim nn train -o`)."""
        return cls(_anasim.load_model(os.fspath(path)))

    def save(self, path):
        _anasim.save_model(os.fspath(path), self.layers)

    @property
    def sizes(self):
        return [self.layers[0][0].shape[1]] + [w.shape[0] for w, _ in self.layers]

    def forward(self, images):
        """Per-layer pre-activations z (float64) of the float network for a batch: a list, one N x outputs each."""
        a, zs = _images(images).astype(np.float64), []
        for k, (w, b) in enumerate(self.layers):
            z = a @ w.T + b
            zs.append(z)
            a = np.maximum(z, 0.0)
        return zs

    def map(self, hardware=None, calib=None):
        """The network mapped onto `hardware` (a Hardware; default: every default), TIA feedback resistors
        calibrated on the first calib_samples of the `calib` images (required; the command line uses the MNIST
        training split), trial 0 of the hardware's seed drawn and the fast evaluator prepared."""
        if calib is None:
            raise ValueError("calib images are required (e.g. anasim.load_mnist('train')[0])")
        hw = hardware or Hardware()
        return MappedNetwork(self, hw, _anasim.Accelerator(self.layers, hw.config, hw.overrides, _images(calib)))

    def evaluate(self, images, hardware=None, calib=None, labels=None, outputs=True):
        """Classes of a batch through the circuit, as `anasim nn eval` computes them. calib: calibration images
        (default: the images themselves; pass the training split to match the command line's numbers)."""
        return self.map(hardware, images if calib is None else calib).evaluate(images, labels, outputs)

    def energy(self, images, labels, hardware=None, calib=None, from_previous=False, tstop=0.0, engine=False):
        """`anasim nn energy`: the mapped circuit's transient per image (the input DACs step at t = 0 from reset, or
        from the previous image). Returns a dict of NumPy arrays per image (latency [s], energy [J], energy_parts
        [J] by component, classes, timepoints) and the summary (accuracy, latency_mean/p99, energy_mean/p99,
        energy_breakdown, macs, tops, tops_per_w, sample_times [s] with accuracy_at, shortest_sample_time).
        engine=True: the engine's transient of the full netlist per image (the slow reference)."""
        hw = hardware or Hardware()
        x = _images(images)
        return _anasim.energy(self.layers, hw.config, hw.overrides, x, np.asarray(labels, dtype=np.int64).tolist(),
                              x if calib is None else _images(calib), bool(from_previous), float(tstop), bool(engine))

    def monte_carlo(self, images, labels, hardware=None, calib=None, trials=10, seed=1, sweep=None):
        """`anasim nn mc`: accuracy over `trials` mismatch draws of `seed` per sweep point. sweep: "sigma_g=0,0.05",
        ("sigma_g", [0, 0.05]) or {"sigma_g": [0, 0.05]}. Returns McAccuracy (fractions)."""
        return monte_carlo(self, images, labels, hardware, calib, trials, seed, sweep)


class MappedNetwork:
    """A network mapped onto hardware and prepared for evaluation (port reduction done once)."""

    def __init__(self, network, hardware, acc):
        self.network, self.hardware, self._acc = network, hardware, acc
        self.info = acc.info()  # sizes, opamps, mode, tiles (per layer: (name, rows, cols)), vhi, vlo [V]

    def evaluate(self, images, labels=None, outputs=True):
        """Evaluation of a batch: classes, last-layer ADC codes, last-layer output voltages (outputs=True: one
        more per-image solve), the float network's classes."""
        r = self._acc.evaluate(_images(images), bool(outputs))
        return Evaluation(r["classes"], r["codes"], r.get("outputs"), r["digital"],
                          None if labels is None else np.asarray(labels))

    def probe(self, image, sample=0):
        """Every layer's periphery voltages for one image [V] (dicts with c, y, h, hn, gain = y per unit of
        pre-activation, v_unit, codes for ADC layers) and the analog pre-activations z = y / gain."""
        r = self._acc.probe(_image(image), int(sample))
        for layer in r["layers"]:
            layer["z"] = layer["y"] / layer["gain"]
        return r

    def crossbar(self, layer=0, tile=0, image=None, sample=0):
        """Tile `tile` of layer `layer`: programmed conductances g and targets g_target [S] (rows x cols); with an
        image, also the voltages at the row end (v_row) and column end (v_col) of every cell [V] from the full
        circuit's operating point (the MNA engine; seconds for 784-128-10)."""
        x = _image(image if image is not None else np.zeros(self.network.sizes[0]))
        return self._acc.crossbar(int(layer), int(tile), x, int(sample), image is not None)


def monte_carlo(network, images, labels, hardware=None, calib=None, trials=10, seed=1, sweep=None):
    """`anasim nn mc` on a batch: see Network.monte_carlo."""
    hw = hardware or Hardware()
    x = _images(images)
    r = _anasim.monte_carlo(network.layers, hw.config, hw.overrides, x, np.asarray(labels, dtype=np.int64).tolist(),
                            x if calib is None else _images(calib), int(trials), int(seed), _sweep_text(sweep))
    return McAccuracy(r["param"], list(r["values"]), r["accuracy"], r["mean"], r["std"], r["min"], r["p5"],
                      r["digital_accuracy"], r["samples"], int(seed), list(r["program"]))
