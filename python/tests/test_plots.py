# Every plot function (and the command-line entry point) writes a non-empty PNG of the requested size.
import subprocess
import sys

import numpy as np
import pytest

import anasim
import anasim.plot as ap
from conftest import png_size, src

SIZE = (640, 400)


def check_png(path, size=SIZE):
    assert path.exists() and path.stat().st_size > 1000, f"{path} missing or empty"
    assert png_size(path) == size


@pytest.fixture(scope="module")
def small_net():
    """A 16-8-4 network on random 16-pixel images, mapped with rwire > 0 (small enough for the MNA IR-drop map)."""
    rng = np.random.default_rng(3)
    net = anasim.Network([(rng.normal(size=(8, 16)) / 4, rng.normal(size=8) / 10),
                          (rng.normal(size=(4, 8)) / 3, np.zeros(4))])
    calib = rng.random((64, 16), dtype=np.float32)
    return net, net.map(anasim.Hardware(rwire=2, tile_rows=20), calib=calib), calib


def test_transient_dc_bode(tmp_path):
    tran = anasim.run(src("data/examples/opamp_integrator.yaml"))["tran"]
    ap.transient(tran, None, tmp_path / "tran.png", SIZE)
    check_png(tmp_path / "tran.png")
    dc = anasim.run(src("tests/crosscheck/dc_nested_diode.cir"))["dc"]
    ap.dc_sweep(dc, dc.signals[:2], tmp_path / "dc.png", SIZE)
    check_png(tmp_path / "dc.png")
    ac = anasim.run(src("tests/crosscheck/rc_ladder_ac.cir"))["ac"]
    ap.bode(ac, ac.signals[-1:], tmp_path / "ac.png", SIZE)
    check_png(tmp_path / "ac.png")


def test_histogram_and_accuracy_sweep(tmp_path, small_net):
    res = anasim.run(src("data/examples/mc_column_tia.yaml"), mc=200, seed=1)
    ap.histogram(res.mc["op/v(out)"], "op/v(out)", res.mc.units["op/v(out)"], tmp_path / "hist.png", SIZE)
    check_png(tmp_path / "hist.png")
    net, _, calib = small_net
    labels = np.argmax(net.forward(calib)[-1], axis=1)
    mc = net.monte_carlo(calib, labels, anasim.Hardware(), calib=calib, trials=5, seed=1,
                         sweep=("sigma_g", [0, 0.1, 0.3]))
    ap.accuracy_sweep(mc, tmp_path / "acc.png", SIZE)
    check_png(tmp_path / "acc.png")


def test_crossbar_maps_and_activations(tmp_path, small_net):
    net, mapped, calib = small_net
    assert [len(t) for t in mapped.info["tiles"]] == [2, 1]  # 34 physical rows in tiles of at most 20
    tile = mapped.crossbar(0, 0, image=calib[0])
    assert tile["g"].shape == tile["v_row"].shape == tile["v_col"].shape
    # Row voltages lie within the read range and change along the rows (the IR drop).
    assert np.all(np.abs(tile["v_row"]) <= 0.2 + 1e-9) and np.ptp(tile["v_row"], axis=1).max() > 0
    ap.conductance_map(tile, tmp_path / "g.png", SIZE)
    check_png(tmp_path / "g.png")
    ap.ir_drop_map(tile, tmp_path / "ir.png", SIZE)
    check_png(tmp_path / "ir.png")
    ap.activations(net, mapped, calib[0], tmp_path / "act.png", SIZE)
    check_png(tmp_path / "act.png")
    probe = mapped.probe(calib[0])
    z = net.forward(calib[0])
    np.testing.assert_allclose(np.maximum(probe["layers"][0]["z"], 0), np.maximum(z[0][0], 0), atol=0.05)


def test_command_line(tmp_path, cli):
    cli("run", src("data/examples/opamp_integrator.yaml"), "-o", tmp_path / "r.h5")
    out = tmp_path / "cli.png"
    subprocess.run([sys.executable, "-m", "anasim.plot", tmp_path / "r.h5", "tran", "-o", out, "--size", "640x400"],
                   check=True)
    check_png(out)
    cli("run", src("data/examples/mc_column_tia.yaml"), "--mc", 50, "-o", tmp_path / "mc.h5")
    out = tmp_path / "hist.png"
    subprocess.run([sys.executable, "-m", "anasim.plot", tmp_path / "mc.h5", "hist", "op/v(out)", "-o", out,
                    "--size", "640x400"], check=True)
    check_png(out)
