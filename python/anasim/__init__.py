"""anasim from Python: the C++ circuit simulator for analog neural networks, bound with pybind11.

    import anasim
    res = anasim.run("data/examples/crossbar_tia.yaml")        # every analysis of a netlist
    res["op"]["v(out0)"], res["op"].units["v(out0)"]           # NumPy arrays, units
    net = anasim.Network.from_torch(model)                     # or Network([(W1, b1), (W2, b2)])
    ev = net.evaluate(images, anasim.Hardware(rwire=2, sigma_g=0.05), calib=train_images)
    ev.classes, ev.codes, ev.outputs, ev.digital

Errors raise anasim.InputError (bad input: the message gives file:line:col, the line and a caret; exit code 2 of
the command line) or anasim.NumericalError (no convergence, singular matrix; exit code 3), both anasim.Error.
The C++ work runs with the GIL released and on every core (OpenMP), like the command line.
"""
from ._anasim import Error, InputError, NumericalError, read_idx_images, read_idx_labels, hardware_params
from .results import Results, Table, run
from .network import Evaluation, Hardware, Network, load_mnist, monte_carlo

__all__ = ["Error", "InputError", "NumericalError", "Results", "Table", "run", "Network", "Hardware",
           "Evaluation", "load_mnist", "monte_carlo", "read_idx_images", "read_idx_labels", "hardware_params"]
