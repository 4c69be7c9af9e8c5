#!/usr/bin/env python3
"""Regenerates the README's figures: accuracy versus conductance variation (Monte Carlo over mismatch draws) and
the IR-drop map of a crossbar tile, for the shipped 784-128-10 model on the default hardware.

    PYTHONPATH=build/python python3 python/figures/make_figures.py    (about a minute; needs the MNIST files)
"""
import os

import numpy as np

import anasim
import anasim.plot as ap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    net = anasim.Network.load(os.path.join(ROOT, "data", "mlp_784_128_10.h5"))
    hw = anasim.Hardware(os.path.join(ROOT, "data", "examples", "mnist_hw.yaml"))
    test_x, test_y = anasim.load_mnist("test")
    train_x, _ = anasim.load_mnist("train")
    mc = net.monte_carlo(test_x[:2000], test_y[:2000], hw, calib=train_x, trials=10, seed=1,
                         sweep={"sigma_g": [0, 0.05, 0.1, 0.2, 0.3]})
    ap.accuracy_sweep(mc, os.path.join(HERE, "accuracy_sigma_g.png"), size=(720, 400),
                      title="784-128-10 on crossbars: 10 mismatch trials x 2,000 test images per point")
    mapped = net.map(hw, calib=train_x)
    # Tile 3 of the first layer holds the rows of inputs 336-447 (image rows 12-15): the test image (of the first
    # 50) with the most ink there.
    k = int(np.argmax(test_x[:50].reshape(50, -1)[:, 336:448].sum(axis=1)))
    tile = mapped.crossbar(layer=0, tile=3, image=test_x[k])
    ap.ir_drop_map(tile, os.path.join(HERE, "ir_drop.png"), size=(1000, 380))


if __name__ == "__main__":
    main()
