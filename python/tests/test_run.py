# anasim.run: results equal the command line's CSV for the same netlist (every column, exact doubles), text and
# file input agree, errors carry file:line:col and the exit-code category, Monte Carlo matches `anasim run --mc`.
import csv
import os
import threading
import time

import numpy as np
import pytest

import anasim
from conftest import src

DECKS = ["tests/crosscheck/rc_ladder_ac.cir", "tests/crosscheck/sources_sin_exp_pwl.cir",
         "tests/crosscheck/dc_nested_diode.cir", "tests/crosscheck/inverting_amp.cir",
         "data/examples/crossbar_tia.yaml", "data/examples/opamp_integrator.yaml"]


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return {name: np.array([float(r[k]) for r in rows[1:]]) for k, name in enumerate(rows[0])}


@pytest.mark.parametrize("deck,power", [(d, False) for d in DECKS] + [(DECKS[1], True), (DECKS[5], True)])
def test_run_equals_cli_csv(deck, power, cli, tmp_path):
    cli("run", src(deck), "--csv", tmp_path, *(["--power"] if power else []))
    res = anasim.run(src(deck), power=power)
    if power:
        assert any(s.startswith("p(") for t in res.values() for s in t.signals)
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".csv") and "_summary" not in f)
    assert sorted(f[:-4] for f in files) == sorted(res), "one CSV per analysis group"
    for f in files:
        table, expected = res[f[:-4]], read_csv(tmp_path / f)
        for col, want in expected.items():
            if table.kind == "ac" and col[1] in "mp" and col[2] == "(":
                h = table[col[0] + col[2:]]
                got = np.hypot(h.real, h.imag) if col[1] == "m" else np.degrees(np.arctan2(h.imag, h.real))
                np.testing.assert_allclose(got, want, rtol=1e-15, atol=0, err_msg=f"{deck} {f} {col}")
            else:
                np.testing.assert_array_equal(np.atleast_1d(table[col]), want, err_msg=f"{deck} {f} {col}")


def test_units_and_sweeps():
    res = anasim.run(src("tests/crosscheck/rc_ladder_ac.cir"))
    ac = res["ac"]
    assert ac.units["frequency"] == "Hz" and ac.sweep_name == "frequency"
    assert all(ac.units[s] in ("V", "A") for s in ac.signals)
    assert np.iscomplexobj(ac[ac.signals[0]])
    tran = anasim.run(src("data/examples/opamp_integrator.yaml"))["tran"]
    assert tran.units["time"] == "s" and tran["time"][0] == 0.0 and len(tran["time"]) == len(tran[tran.signals[0]])


def test_text_equals_file():
    path = src("tests/crosscheck/inverting_amp.cir")
    with open(path) as f:
        text = f.read()
    a, b = anasim.run(path), anasim.run(text)
    for g in a:
        for s in a[g]:
            np.testing.assert_array_equal(a[g][s], b[g][s])
    yaml_text = "devices:\n  - {name: v1, type: v, nodes: [a, 0], dc: 2}\n  - {name: r1, type: r, nodes: [a, b], r: 1k}\n" \
                "  - {name: r2, type: r, nodes: [b, 0], r: 3k}\nanalyses:\n  - {type: op}\n"
    assert anasim.run(yaml_text)["op"]["v(b)"][0] == pytest.approx(1.5, rel=1e-12)


def test_bad_netlist_raises_located_input_error():
    path = src("tests/bad_inputs/duplicate_device.cir")
    with pytest.raises(anasim.InputError) as e:
        anasim.run(path)
    msg = str(e.value)
    assert f"{path}:4:1:" in msg and "duplicate device name 'r1'" in msg
    assert e.value.exit_code == 2 and isinstance(e.value, anasim.Error)
    with pytest.raises(anasim.InputError, match=r"<text>\.cir:3:8: error: unknown parameter .abc."):
        anasim.run("title\nV1 a 0 1\nR1 a 0 abc\n.op\n")
    with pytest.raises(anasim.InputError, match="no-such-file"):
        anasim.run("no-such-file.cir")


def test_numerical_failure_category():
    # A current source into a capacitor-only node has no DC path: singular (or gmin-held) -> either a clean
    # NumericalError/InputError or a result; never a crash. Two voltage sources in parallel are singular.
    with pytest.raises(anasim.Error) as e:
        anasim.run("loop\nV1 a 0 1\nV2 a 0 2\n.op\n")
    assert e.value.exit_code in (2, 3)


def test_monte_carlo_equals_cli(cli, tmp_path):
    h5py = pytest.importorskip("h5py")
    deck = src("data/examples/mc_column_tia.yaml")
    cli("run", deck, "--mc", 40, "--seed", 7, "-o", tmp_path / "mc.h5")
    res = anasim.run(deck, mc=40, seed=7)
    again = anasim.run(deck, mc=40, seed=7)
    assert res.mc.trials == 40 and res.mc.units["op/v(out)"] == "V"
    with h5py.File(tmp_path / "mc.h5", "r") as f:
        for name, values in res.mc.items():
            assert len(values) == 40
            np.testing.assert_array_equal(values, f["mc"][name][()])
            np.testing.assert_array_equal(values, again.mc[name])
    assert res.mc["op/v(out)"].std() > 1e-3  # the tolerances were drawn


def test_gil_released_while_running():
    deck = src("data/examples/mc_column_tia.yaml")
    ticks, done = [0], threading.Event()

    def work():
        anasim.run(deck, mc=3000, seed=1)
        done.set()
    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks[0] += 1
        time.sleep(0.001)
    t.join()
    assert ticks[0] > 5, "the main thread ran while C++ worked"
