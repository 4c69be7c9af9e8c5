#!/usr/bin/env python3
"""Train a small MLP in PyTorch on MNIST, map it onto anasim's analog crossbars and print digital versus analog
accuracy. The MNIST IDX files are found as the command line finds them (--data, else $ANASIM_DATA, else
../shared/mnist). --quick (the test suite's version): a few hundred training images, one epoch, 300 test images.

    PYTHONPATH=build/python python3 python/examples/torch_mnist.py [--quick] [--hardware data/examples/mnist_hw.yaml]
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

import anasim


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="500 training images, 1 epoch (batch 10, lr 3e-3), 300 test images")
    p.add_argument("--data", help="MNIST directory (default: $ANASIM_DATA, else ../shared/mnist)")
    p.add_argument("--hardware", help="hardware YAML (default: anasim's defaults)")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train", type=int, default=60000, help="training images")
    p.add_argument("--test", type=int, default=10000, help="test images evaluated through the circuit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    a = p.parse_args()
    if a.quick:
        a.train, a.epochs, a.test, a.batch, a.lr = 500, 1, 300, 10, 3e-3

    train_x, train_y = anasim.load_mnist("train", a.data)
    test_x, test_y = anasim.load_mnist("test", a.data)
    train_x, train_y = train_x[:a.train], train_y[:a.train]
    test_x, test_y = test_x[:a.test], test_y[:a.test]

    torch.manual_seed(a.seed)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, 10))
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    xs, ys = torch.from_numpy(train_x), torch.from_numpy(train_y.astype(np.int64))
    t0 = time.time()
    for epoch in range(a.epochs):
        perm = torch.randperm(len(xs))
        for k in range(0, len(xs), a.batch):
            idx = perm[k:k + a.batch]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xs[idx]), ys[idx])
            loss.backward()
            opt.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    with torch.no_grad():
        torch_acc = (model(torch.from_numpy(test_x)).argmax(1).numpy() == test_y).mean()

    net = anasim.Network.from_torch(model)
    hw = anasim.Hardware(a.hardware) if a.hardware else anasim.Hardware()
    t1 = time.time()
    ev = net.evaluate(test_x, hw, calib=train_x[:2000], labels=test_y, outputs=False)
    print(f"trained {net.sizes} on {len(train_x)} images, {a.epochs} epoch(s), {t1 - t0:.1f} s")
    print(f"test images       {len(test_x)}")
    print(f"digital accuracy  {100 * ev.digital_accuracy:.2f}% (PyTorch float32: {100 * torch_acc:.2f}%)")
    print(f"analog accuracy   {100 * ev.analog_accuracy:.2f}% through the mapped circuit ({time.time() - t1:.2f} s)")
    print(f"agreement         {100 * ev.agreement:.2f}% of images classified alike")
    # The circuit follows the network: a large gap would mean a broken mapping, not a weak network.
    ok = ev.digital_accuracy > 0.5 and ev.analog_accuracy > ev.digital_accuracy - 0.05
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
