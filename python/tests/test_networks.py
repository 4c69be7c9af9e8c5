# Networks from Python: NumPy- and torch-built networks give identical classes, evaluation equals the command
# line image for image (nn_eval through anasim.run and `anasim nn eval`), the Monte Carlo equals `anasim nn mc`,
# hardware keyword overrides, the IDX reader.
import json
import os

import numpy as np
import pytest

import anasim
from conftest import src

MODEL = src("data/mlp_784_128_10.h5")
HW = src("data/examples/mnist_hw.yaml")
N = 300


@pytest.fixture(scope="module")
def mnist():
    test_x, test_y = anasim.load_mnist("test")
    train_x, _ = anasim.load_mnist("train")
    return test_x[:N], test_y[:N], train_x[:2000]


def test_idx_reader_matches_load_mnist(mnist):
    d = os.environ.get("ANASIM_DATA", src("..", "shared", "mnist"))
    x = anasim.read_idx_images(os.path.join(d, "t10k-images-idx3-ubyte.gz"))
    y = anasim.read_idx_labels(os.path.join(d, "t10k-labels-idx1-ubyte.gz"))
    assert x.shape == (10000, 28, 28) and x.dtype == np.float32 and y.shape == (10000,)
    np.testing.assert_array_equal(x[:N], mnist[0])
    np.testing.assert_array_equal(y[:N], mnist[1])


def test_evaluate_equals_cli_image_for_image(mnist, cli, tmp_path):
    test_x, test_y, calib = mnist
    net = anasim.Network.load(MODEL)
    ev = net.evaluate(test_x, anasim.Hardware(HW), calib=calib, labels=test_y)
    assert ev.classes.shape == (N,) and ev.codes.shape == (N, 10) and ev.outputs.shape == (N, 10)
    np.testing.assert_array_equal(ev.classes, np.argmax(ev.codes, axis=1))
    # `anasim nn eval --json` on the same images, hardware and calibration (the training split's first 2000).
    js = json.loads(cli("nn", "eval", "--model", MODEL, "--config", HW, "--samples", N, "--json").stdout)
    assert round(N * js["analog_accuracy"]) == np.sum(ev.classes == test_y)  # JSON: 10 digits
    assert round(N * js["digital_accuracy"]) == np.sum(ev.digital == test_y)
    # nn_eval through anasim.run: per-image classes.
    netlist = tmp_path / "eval.yaml"
    netlist.write_text(f"analyses:\n  - {{type: nn_eval, model: {MODEL}, samples: {N}, config: {HW}}}\n")
    table = anasim.run(netlist)["nn_eval"]
    np.testing.assert_array_equal(ev.classes, table["analog"].astype(int))
    np.testing.assert_array_equal(ev.digital, table["digital"].astype(int))
    np.testing.assert_array_equal(test_y, table["label"].astype(int))


def test_numpy_and_torch_networks_identical(mnist):
    torch = pytest.importorskip("torch")
    test_x, _, calib = mnist
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 10))
    layers = [(m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()) for m in model
              if isinstance(m, torch.nn.Linear)]
    hw = anasim.Hardware(rwire=2, sigma_g=0.05, opamp={"model": "lm358", "level": 2})
    a = anasim.Network.from_torch(model).evaluate(test_x[:100], hw, calib=calib)
    b = anasim.Network(layers).evaluate(test_x[:100], hw, calib=calib)
    np.testing.assert_array_equal(a.classes, b.classes)
    np.testing.assert_array_equal(a.codes, b.codes)
    # Voltages agree to the evaluator's tolerance (1e-12 relative), not bit for bit: two preparations of the same
    # mapping differ in the last bits when the port reduction runs on several threads (OMP_NUM_THREADS=1 gives
    # identical bits); classes and codes are identical.
    np.testing.assert_allclose(a.outputs, b.outputs, rtol=1e-9, atol=1e-12)
    with torch.no_grad():
        ref = model(torch.from_numpy(test_x[:100])).argmax(1).numpy()
    assert np.mean(ref == a.digital) >= 0.99  # float32 torch vs float64 anasim: ties aside, the same classes
    with pytest.raises(ValueError):
        anasim.Network.from_torch(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sigmoid(),
                                                      torch.nn.Linear(4, 2)))


def test_monte_carlo_equals_cli(mnist, cli, tmp_path):
    h5py = pytest.importorskip("h5py")
    test_x, test_y, calib = mnist
    net = anasim.Network.load(MODEL)
    mc = net.monte_carlo(test_x[:200], test_y[:200], anasim.Hardware(HW), calib=calib, trials=2, seed=5,
                         sweep={"sigma_g": [0.05, 0.2]})
    assert mc.accuracy.shape == (2, 2) and mc.param == "sigma_g" and mc.values == ["0.05", "0.2"]
    cli("nn", "mc", "--model", MODEL, "--config", HW, "--trials", 2, "--seed", 5, "--samples", 200,
        "--sweep", "sigma_g=0.05,0.2", "-o", tmp_path / "mc.h5")
    with h5py.File(tmp_path / "mc.h5", "r") as f:
        np.testing.assert_array_equal(mc.accuracy, f["mc/accuracy"][()])
        np.testing.assert_array_equal(mc.p5, f["mc/p5"][()])
    assert np.all(mc.accuracy > 0.9) and mc.digital_accuracy > 0.95


def test_energy_summary_and_parts():
    """Network.energy on a small network: per-image arrays, the breakdown summing to the energy, the summary."""
    rng = np.random.default_rng(3)
    layers = [(rng.normal(0, 0.3, (6, 12)), rng.normal(0, 0.05, 6)), (rng.normal(0, 0.3, (3, 6)), np.zeros(3))]
    net = anasim.Network(layers)
    x = (rng.integers(0, 256, (5, 12)) / 255.0).astype(np.float32)
    y = np.arange(5) % 3
    hw = anasim.Hardware(tile_rows=16, tile_cols=4, calib_samples=5)
    r = net.energy(x, y, hw)
    assert r["latency"].shape == (5,) and np.all(r["latency"] > 0) and np.all(r["energy"] > 0)
    parts = sum(r["energy_parts"][k] for k in r["energy_parts"])
    np.testing.assert_allclose(parts, r["energy"], rtol=1e-12)
    # 20 times up to the largest settling time, and the longest run when it is later
    assert r["macs"] == 12 * 6 + 6 * 3 and len(r["sample_times"]) in (20, 21)
    assert r["tops"] == pytest.approx(2 * r["macs"] / r["latency_mean"] / 1e12)
    with pytest.raises(anasim.InputError, match="tstop"):
        net.energy(x, y, hw, tstop=-1)


def test_hardware_errors():
    net = anasim.Network([(np.eye(4), np.zeros(4)), (np.ones((2, 4)), np.zeros(2))])
    x = np.random.default_rng(0).random((8, 4), dtype=np.float32)
    with pytest.raises(anasim.InputError, match="no_such_key"):
        net.evaluate(x, anasim.Hardware(no_such_key=1))
    with pytest.raises(anasim.InputError):
        net.evaluate(x, anasim.Hardware(sigma_g=-1))
    with pytest.raises(anasim.InputError, match="pixels"):
        net.evaluate(np.zeros((3, 5), dtype=np.float32))
    with pytest.raises(anasim.InputError, match="NaN"):
        net.evaluate(np.full((2, 4), np.nan, dtype=np.float32), calib=x)
    with pytest.raises(anasim.InputError):
        anasim.Network([(np.ones((3, 4)), np.zeros(2))]).evaluate(x)


def test_monte_carlo_reports_the_compensation():
    """Monte Carlo with program: compensated: each point reports the compensation of the targets its trials'
    draws deviate from (nothing with program: ideal)."""
    rng = np.random.default_rng(4)
    layers = [(rng.normal(0, 0.3, (6, 40)), rng.normal(0, 0.05, 6)), (rng.normal(0, 0.3, (3, 6)), np.zeros(3))]
    net = anasim.Network(layers)
    x = (rng.integers(0, 256, (20, 40)) / 255.0).astype(np.float32)
    y = np.arange(20) % 3
    hw = anasim.Hardware(tile_rows=32, tile_cols=4, calib_samples=20, rwire=5, sigma_g=0.05)
    mc = net.monte_carlo(x, y, hw, trials=2, seed=3, sweep={"program": ["ideal", "compensated"]})
    assert mc.values == ["ideal", "compensated"] and mc.program[0] == []
    assert len(mc.program[1]) == 2
    for layer in mc.program[1]:
        assert layer["residual"] <= 1e-9 and 0 < layer["scale_factor"] <= 1 and layer["port_solves"] > 0


def test_model_file_that_crashes_libhdf5_is_an_error():
    # libhdf5 1.10.8 segfaults on this fuzzer-found file (or loops forever on model_heap_hang.h5): the model is
    # read in a child process (engine/isolated_read), so Python gets an InputError naming the file, and the
    # shipped model still loads afterwards.
    with pytest.raises(anasim.InputError, match="model_heap_crash.h5.*libhdf5 crashed on it"):
        anasim.Network.load(src("tests/bad_inputs/model_heap_crash.h5"))
    os.environ["ANASIM_READ_TIMEOUT"] = "1"
    try:
        with pytest.raises(anasim.InputError, match="did not finish reading it within 1 s"):
            anasim.Network.load(src("tests/bad_inputs/model_heap_hang.h5"))
    finally:
        del os.environ["ANASIM_READ_TIMEOUT"]
    assert anasim.Network.load(MODEL).sizes == [784, 128, 10]
