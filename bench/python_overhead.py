#!/usr/bin/env python3
"""Python calling overhead: the 10,000-image MNIST evaluation through the mapped circuit from Python
(anasim.Network.evaluate, Debian's /usr/bin/python3 with PYTHONPATH=BUILD/python) against the same evaluation
from the command line (`anasim nn eval --model M --config C`): the same model, hardware, calibration images
(the training split's first calib_samples) and test images, so the same classes. Runs both as whole processes
(start-up, loading the data and model, mapping, port reduction, 10,000 images), alternated, `--runs` each, and
prints the median wall times, their ratio (target: Python at most 5% slower) and the in-process evaluation times.

    python3 bench/python_overhead.py [--build build] [--runs 7] [--model data/mlp_784_128_10.h5]
                                     [--config data/examples/mnist_hw.yaml] [--markdown-row]
Run it on a quiet machine (timings on a busy one are meaningless). Standard library only (the timed Python
process uses the anasim module and NumPy).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PY_EVAL = r"""
import json, sys, time
t0 = time.perf_counter()
import anasim
model, config = sys.argv[1], sys.argv[2]
net = anasim.Network.load(model)
hw = anasim.Hardware(config)
test_x, test_y = anasim.load_mnist("test")
train_x, _ = anasim.load_mnist("train")
t1 = time.perf_counter()
ev = net.evaluate(test_x, hw, calib=train_x, labels=test_y, outputs=False)
t2 = time.perf_counter()
print(json.dumps({"analog_accuracy": ev.analog_accuracy, "digital_accuracy": ev.digital_accuracy,
                  "samples": len(ev.classes), "seconds_load": t1 - t0, "seconds_evaluate": t2 - t1}))
"""


def timed(cmd, env):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return wall, json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--model", default=os.path.join(ROOT, "data", "mlp_784_128_10.h5"))
    ap.add_argument("--config", default=os.path.join(ROOT, "data", "examples", "mnist_hw.yaml"))
    ap.add_argument("--markdown-row", action="store_true", help="print the result as a RESULTS.md table row")
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"))
    cli = [os.path.join(a.build, "anasim"), "nn", "eval", "--model", a.model, "--config", a.config, "--json"]
    py = [a.python, "-c", PY_EVAL, a.model, a.config]
    walls = {"cli": [], "python": []}
    inproc = {"cli": [], "python": []}
    for r in range(a.runs):
        for name, cmd in (("cli", cli), ("python", py)) if r % 2 == 0 else (("python", py), ("cli", cli)):
            wall, out = timed(cmd, env)
            walls[name].append(wall)
            inproc[name].append(out["seconds"] if name == "cli" else out["seconds_evaluate"])
            acc = out["analog_accuracy"]
            if name == "cli":
                cli_acc = acc
            else:
                py_acc = acc
        if cli_acc != py_acc:
            sys.exit(f"different accuracies: command line {cli_acc}, Python {py_acc}")
    med = {k: statistics.median(v) for k, v in walls.items()}
    ratio = med["python"] / med["cli"]
    ev = {k: statistics.median(v) for k, v in inproc.items()}
    print(f"10,000-image evaluation, {a.runs} runs each, medians: command line {med['cli']:.3f} s, "
          f"Python {med['python']:.3f} s, ratio {ratio:.3f} ({'within' if ratio <= 1.05 else 'OVER'} the 5% target); "
          f"evaluation alone (mapping, port reduction, images; Python adds the digital reference): "
          f"command line {ev['cli']:.3f} s, Python {ev['python']:.3f} s; analog accuracy {100 * py_acc:.2f}% in both")
    if a.markdown_row:
        print(f"| Python calling overhead, 10,000 MNIST images through 784-128-10 | {med['cli']:.3f} s (CLI) | "
              f"{med['python']:.3f} s (Python) | {ratio:.3f} | accuracy identical ({100 * py_acc:.2f}%) |")
    return 0 if ratio <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
