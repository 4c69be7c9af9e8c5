// Tests for nn/hardware.cpp and nn/netlist_builder.cpp: the hardware config (defaults, YAML files and sections,
// located errors, sweeps), the weight mapping (differential pairs, tiles, calibration; with ideal parts the
// circuit computes the network exactly), the netlist of the mapped circuit (devices, YAML round trip), the
// mismatch draws, the calibration's independence of the thread count, and the `anasim nn eval | export-spice | mc`
// commands on a small data set written here.
#include <doctest/doctest.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <unistd.h>
#include "devices/registry.hpp"
#include "engine/circuit.hpp"
#include "engine/elaborate.hpp"
#include "engine/newton.hpp"
#include "engine/parse.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/model_io.hpp"
#include "nn/netlist_builder.hpp"
#include "tests/nn_test_support.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
using namespace anasim::nn;
using namespace anasim::nn_test;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_support::scratch_dir("nn_mapping", name); }

using test_support::contains;

// Ideal hardware: no wire, driver or sink resistance, ideal op-amps (level 0), analog conductances, no mismatch,
// and ADCs fine enough not to matter.
HardwareConfig ideal_config(MappingMode mode) {
  HardwareConfig c = default_hardware_config();
  c.mode = mode;
  c.rwire_row = c.rwire_col = c.rdriver = c.rsink = 0;
  c.tile_rows = 40;
  c.tile_cols = 6;
  c.adc_bits = 24;
  c.dac_bits = 8;
  c.adc_rin = 1e15;
  c.calib_samples = 100;
  REQUIRE(set_hardware_param(c, "opamp.level", "0").ok());
  return c;
}

}  // namespace

TEST_CASE("nn mapping: hardware config defaults, YAML and errors") {
  const HardwareConfig d = default_hardware_config();
  CHECK(d.gmin == 1e-6);
  CHECK(d.gmax == 100e-6);
  CHECK(d.vread_min == 0);
  CHECK(d.vread_max == 0.2);
  CHECK(d.tile_rows == 256);
  CHECK(d.tile_cols == 256);
  CHECK(d.rwire_row == 1);
  CHECK(d.mode == MappingMode::Analog);
  CHECK(d.opamp_part == "opa1611");
  CHECK(opamp_param(d, "a0") == 3.16e6);  // from the part

  SUBCASE("the shipped example") {
    HardwareConfig c;
    const Status st = load_hardware_config(std::string(ANASIM_SOURCE_DIR) + "/data/examples/mnist_hw.yaml", c);
    INFO(st.to_string());
    REQUIRE(st.ok());
    CHECK(c.gmax == doctest::Approx(100e-6));
    CHECK(opamp_param(c, "level") == 2);
    CHECK(c.rwire_col == 1);
  }
  SUBCASE("a hardware section in a netlist, suffixes, op-amp overrides") {
    HardwareConfig c;
    const Status st = parse_hardware_config(
        "title: x\ndevices: []\nhardware:\n  gmax: 50u\n  rwire: 2\n  rwire_col: 3\n  mode: hybrid\n"
        "  opamp: {model: ua741, level: 1, a0: 1e4}\n",
        "net.yaml", c);
    INFO(st.to_string());
    REQUIRE(st.ok());
    CHECK(c.gmax == doctest::Approx(50e-6));
    CHECK(c.rwire_row == 2);
    CHECK(c.rwire_col == 3);
    CHECK(c.mode == MappingMode::Hybrid);
    CHECK(opamp_param(c, "a0") == 1e4);
    CHECK(opamp_param(c, "rout") == 75);  // ua741
  }
  SUBCASE("a netlist with nn analyses beside its hardware section (the shipped mnist_analog.yaml)") {
    // Its hardware is mnist_hw.yaml's: the same mapping whichever file `nn energy --config` is given.
    HardwareConfig a, b;
    Status st = load_hardware_config(std::string(ANASIM_SOURCE_DIR) + "/data/examples/mnist_analog.yaml", a);
    INFO(st.to_string());
    REQUIRE(st.ok());
    REQUIRE(load_hardware_config(std::string(ANASIM_SOURCE_DIR) + "/data/examples/mnist_hw.yaml", b).ok());
    CHECK(a.gmax == b.gmax);
    CHECK(a.rwire_col == b.rwire_col);
    CHECK(a.tile_rows == b.tile_rows);
    CHECK(opamp_param(a, "level") == opamp_param(b, "level"));
    // An analysis type that is not an nn one is still an error, located.
    st = parse_hardware_config("analyses:\n  - type: nn_evl\nhardware:\n  gmax: 50u\n", "net.yaml", a);
    REQUIRE(!st.ok());
    CHECK(contains(st.to_string(), "net.yaml:2:11"));
  }
  SUBCASE("errors are located") {
    HardwareConfig c;
    Status st = parse_hardware_config("hardware:\n  gmin: 1u\n  gmaxx: 2u\n", "hw.yaml", c);
    REQUIRE(!st.ok());
    CHECK(contains(st.to_string(), "hw.yaml:3:3"));
    CHECK(contains(st.to_string(), "gmaxx"));
    st = parse_hardware_config("hardware:\n  mode: digital\n", "hw.yaml", c);
    CHECK(contains(st.to_string(), "analog or hybrid"));
    st = parse_hardware_config("hardware:\n  gmin: 2u\n  gmax: 1u\n", "hw.yaml", c);
    CHECK(contains(st.to_string(), "gmax"));
    st = parse_hardware_config("hardware:\n  opamp: {model: nosuchpart}\n", "hw.yaml", c);
    CHECK(contains(st.to_string(), "opa1611"));
  }
  SUBCASE("sweep assignments") {
    HardwareConfig c = default_hardware_config();
    REQUIRE(set_hardware_param(c, "sigma_g", "5%").ok() == false);  // '%' is not a number here
    REQUIRE(set_hardware_param(c, "sigma_g", "0.05").ok());
    CHECK(c.sigma_g == 0.05);
    REQUIRE(set_hardware_param(c, "rwire", "2").ok());
    CHECK(c.rwire_row == 2);
    CHECK(c.rwire_col == 2);
    REQUIRE(set_hardware_param(c, "opamp.vos", "1m").ok());
    CHECK(opamp_param(c, "vos") == doctest::Approx(1e-3));
    CHECK(!set_hardware_param(c, "nosuch", "1").ok());
  }
}

TEST_CASE("nn mapping: the hardware section is read by the netlist reader, in the netlist's scope") {
  // Parses and elaborates a netlist with one resistor and `hw` as its hardware: section, then reads the section.
  auto read = [](const std::string& hw, HardwareConfig& c) {
    const std::string text = "title: x\nparams:\n  g_hi: 50u\n  n: 4\ndevices:\n"
                             "  - {name: r1, type: r, nodes: [a, 0], r: 1k}\nhardware:\n" + hw;
    ParsedNetlist pn;
    if (Status st = parse_yaml_string(text, "net.yaml", builtin_catalog(), pn); !st) return st;
    FlatNetlist fn;
    if (Status st = elaborate(pn, builtin_catalog(), fn); !st) return st;
    Scope scope;
    for (const auto& [name, v] : fn.params) scope.set(name, v);
    const ParsedSection* sec = fn.section("hardware");
    REQUIRE(sec != nullptr);
    return hardware_from_section(*sec, scope, c);
  };
  HardwareConfig c;
  SUBCASE("params: values in hardware keys and op-amp overrides") {
    const Status st = read("  gmax: g_hi\n  levels: n*2\n  seed: '{n + 1}'\n  opamp: {model: ua741, a0: 2*n*1k}\n", c);
    INFO(st.to_string());
    REQUIRE(st.ok());
    CHECK(c.gmax == doctest::Approx(50e-6));
    CHECK(c.levels == 8);
    CHECK(c.seed == 5);
    CHECK(opamp_param(c, "a0") == 8000);
  }
  SUBCASE("a bad key, a bad value and a bad relation are located") {
    Status st = read("  gmin: 1u\n  gmaxx: 2u\n", c);
    CHECK(contains(st.to_string(), "net.yaml:9:3"));
    CHECK(contains(st.to_string(), "unknown parameter 'gmaxx'"));
    st = read("  levels: n/8\n", c);
    CHECK(contains(st.to_string(), "net.yaml:8:3"));
    CHECK(contains(st.to_string(), "levels must be an integer, got 0.5"));
    st = read("  gmin: 2u\n  gmax: 1u\n", c);
    CHECK(contains(st.to_string(), "net.yaml:9:3"));
    CHECK(contains(st.to_string(), "gmax (1e-06) must exceed gmin"));
    st = read("  mode: digital\n", c);
    CHECK(contains(st.to_string(), "net.yaml:8:9"));
    CHECK(contains(st.to_string(), "mode must be analog or hybrid, got 'digital'"));
    st = read("  gmin: nosuch\n", c);
    CHECK(contains(st.to_string(), "net.yaml:8:9"));
  }
  SUBCASE("duplicate keys are rejected as elsewhere in the netlist") {
    Status st = read("  gmin: 1u\n  gmin: 2u\n", c);
    CHECK(contains(st.to_string(), "net.yaml:9:3"));
    CHECK(contains(st.to_string(), "duplicate key 'gmin' in 'hardware' (first at line 8)"));
    st = read("  opamp: {model: ua741, a0: 1, a0: 2}\n", c);
    CHECK(contains(st.to_string(), "duplicate key 'a0'"));
  }
  SUBCASE("a config file's own params: on top of the netlist's scope") {
    Scope outer;
    outer.set("g_top", 80e-6);
    const Status st = parse_hardware_config("params:\n  g_lo: 2u\nhardware:\n  gmin: g_lo\n  gmax: g_top\n",
                                            "hw.yaml", c, &outer);
    INFO(st.to_string());
    REQUIRE(st.ok());
    CHECK(c.gmin == doctest::Approx(2e-6));
    CHECK(c.gmax == doctest::Approx(80e-6));
  }
}

TEST_CASE("nn mapping: differential pairs, tiles and calibration") {
  const Mlp net = net_64_16_10();
  const MatrixRf x = code_inputs(100, 64, 9);
  for (MappingMode mode : {MappingMode::Analog, MappingMode::Hybrid}) {
    HardwareConfig c = default_hardware_config();
    c.mode = mode;
    c.tile_rows = 40;
    c.tile_cols = 6;
    c.calib_samples = 100;
    MappedNetwork m;
    REQUIRE(map_network(net, c, x, m).ok());
    REQUIRE(m.layers.size() == 2);
    CHECK(m.opamps() == (mode == MappingMode::Analog ? 16 * 3 + 10 : 26));
    for (const LayerMapping& l : m.layers) {
      const int P = l.physical_rows();
      CHECK(P == 2 * (l.inputs + 1));
      // Row tiles hold whole (+, -) pairs and at most tile_rows rows; columns at most tile_cols.
      CHECK(l.row_blocks.front() == 0);
      CHECK(l.row_blocks.back() == P);
      for (size_t b = 1; b < l.row_blocks.size(); ++b) {
        CHECK(l.row_blocks[b] - l.row_blocks[b - 1] <= 40);
        CHECK(l.row_blocks[b] % 2 == 0);
      }
      for (size_t b = 1; b < l.col_blocks.size(); ++b) CHECK(l.col_blocks[b] - l.col_blocks[b - 1] <= 6);
      // G+ - G- = scale * w, both in [gmin, gmax].
      double worst = 0;
      for (int i = 0; i <= l.inputs; ++i)
        for (int j = 0; j < l.outputs; ++j) {
          const double gp = l.g_target[static_cast<size_t>(2 * i) * l.outputs + j];
          const double gn = l.g_target[static_cast<size_t>(2 * i + 1) * l.outputs + j];
          CHECK(gp >= c.gmin);
          CHECK(gn >= c.gmin);
          CHECK(gp <= c.gmax * (1 + 1e-12));
          CHECK(gn <= c.gmax * (1 + 1e-12));
          worst = std::max(worst, std::fabs((gp - gn) - l.scale * l.w(j, i)));
        }
      CHECK(worst < 1e-18);
      // The calibrated |z| percentile lands at headroom * swing.
      CHECK(l.rf * l.scale * l.v_unit * l.z_cal == doctest::Approx(c.headroom * std::min(m.vhi, -m.vlo)));
    }
    CHECK(m.layers[0].polarity == (mode == MappingMode::Analog ? -1 : 1));
    CHECK(m.layers[1].polarity == 1);
  }
}

TEST_CASE("nn mapping: the calibration is the same bit for bit on 1, 2 and 3 threads") {
  // 784 inputs: deep enough a product that Eigen's threaded one would block (hence round) it by the thread count.
  Mlp net;
  REQUIRE(make_mlp({784, 16, 10}, 3, net).ok());
  const MatrixRf x = code_inputs(300, 784, 9);
  HardwareConfig c = default_hardware_config();
  c.calib_samples = 300;
  MappedNetwork m[3];
  for (int t = 1; t <= 3; ++t) {
    test_support::OmpThreads limit(t);
    REQUIRE(map_network(net, c, x, m[t - 1]).ok());
  }
  for (int t = 1; t < 3; ++t)
    for (size_t l = 0; l < m[0].layers.size(); ++l) {
      INFO("threads ", t + 1, ", layer ", l);
      const LayerMapping &a = m[0].layers[l], &b = m[t].layers[l];
      CHECK(a.z_cal == b.z_cal);
      CHECK(a.a_cal == b.a_cal);
      CHECK(a.v_unit == b.v_unit);
      CHECK(a.scale == b.scale);
      CHECK(a.w == b.w);
      CHECK(a.g_target == b.g_target);
    }
}

TEST_CASE("nn mapping: with ideal parts the circuit computes the network") {
  const Mlp net = net_64_16_10();
  const MatrixRf x = code_inputs(40, 64, 4);
  for (MappingMode mode : {MappingMode::Analog, MappingMode::Hybrid}) {
    const std::string mode_s = mode_name(mode);
    CAPTURE(mode_s);
    MappedNetwork m;
    REQUIRE(map_network(net, ideal_config(mode), x, m).ok());
    HardwareInstance hw;
    realize(m, 1, 0, hw);
    FastEvaluator fe;
    REQUIRE(fe.prepare(hw).ok());
    std::vector<int> cls;
    REQUIRE(fe.classify(x, 0, static_cast<int>(x.rows()), 0, cls).ok());
    const std::vector<int> digital = predict(net, x);
    int same = 0;
    for (size_t i = 0; i < cls.size(); ++i) same += cls[i] == digital[i];
    CHECK(same >= 39);  // hybrid: 8-bit activations may flip a near tie
    if (mode != MappingMode::Analog) continue;
    // Layer by layer: y = polarity * rf * scale * v_unit * z, h = v_unit(next) * relu(z).
    double worst_y = 0, worst_h = 0;
    for (int k = 0; k < 5; ++k) {
      std::vector<LayerVoltages> v;
      REQUIRE(fe.evaluate_one(x.row(k).data(), 0, v).ok());
      Eigen::VectorXd a = x.row(k).cast<double>().transpose();
      for (size_t l = 0; l < 2; ++l) {
        const LayerMapping& lm = m.layers[l];
        const Eigen::VectorXd z = net.layers[l].weight * a + net.layers[l].bias;
        for (int j = 0; j < lm.outputs; ++j) {
          const double y = lm.polarity * lm.rf * lm.scale * lm.v_unit * z(j);
          worst_y = std::max(worst_y, std::fabs(v[l].y[j] - y) / (std::fabs(y) + 1e-3));
          if (lm.rectifier) {
            const double h = m.layers[l + 1].v_unit * std::max(z(j), 0.0);
            worst_h = std::max(worst_h, std::fabs(v[l].h[j] - h));
            CHECK(v[l].hn[j] == doctest::Approx(-v[l].h[j]).epsilon(1e-9));
          }
        }
        a = z.cwiseMax(0.0);
      }
    }
    // What is left is diode leakage and gmin (~1e-12 A) in the rectifiers: h of a neuron that is off is a few nV.
    CHECK(worst_y < 1e-5);
    CHECK(worst_h < 1e-8);
  }
}

TEST_CASE("nn mapping: netlist of the mapped circuit, YAML round trip, mismatch draws") {
  const Mlp net = net_64_16_10();
  const MatrixRf x = code_inputs(20, 64, 6);
  HardwareConfig c = default_hardware_config();
  c.tile_rows = 48;
  c.tile_cols = 8;
  c.sigma_g = 0.05;
  c.rf_tol = 0.01;
  c.dac_inl_sigma = 0.3;
  c.calib_samples = 20;
  MappedNetwork m;
  REQUIRE(map_network(net, c, x, m).ok());
  HardwareInstance a, b, d;
  realize(m, 3, 0, a);
  realize(m, 3, 0, b);
  realize(m, 3, 1, d);
  CHECK(a.layers[0].tiles[0].g == b.layers[0].tiles[0].g);
  CHECK(a.layers[0].tiles[0].g != d.layers[0].tiles[0].g);
  CHECK(a.layers[0].res == b.layers[0].res);
  CHECK(a.layers[0].res != d.layers[0].res);

  FlatNetlist fn;
  NetlistNames names;
  LayerCodes codes(2);
  codes[0] = input_codes(m.layers[0], x.row(0).data());
  REQUIRE(build_netlist(a, codes, 0, fn, names).ok());
  int xb = 0, op = 0, dac = 0, adc = 0, diode = 0;
  for (const auto& fd : fn.devices) {
    xb += fd.type->key == "crossbar";
    op += fd.type->key == "opamp";
    dac += fd.type->key == "dac";
    adc += fd.type->key == "adc";
    diode += fd.type->key == "d";
  }
  CHECK(xb == 3 * 2 + 1 * 2);  // layer 0: 130 rows -> 3 row tiles x 2 column tiles; layer 1: 34 rows x 10 cols
  CHECK(op == m.opamps());
  CHECK(dac == 130 + 2);       // every row of layer 0, the bias pair of layer 1
  CHECK(adc == 1);
  CHECK(diode == 32);
  CHECK(names.tia_out[1].size() == 10);

  // The YAML form parses back into the same circuit: same operating point.
  auto solve = [](const FlatNetlist& f, const std::vector<std::string>& nodes, std::vector<double>& v) {
    Circuit cir;
    REQUIRE(cir.build(f, builtin_catalog()).ok());
    NewtonSolver ns(cir, f.options);
    REQUIRE(ns.operating_point().ok());
    v.clear();
    for (const auto& n : nodes)
      for (size_t i = 0; i < f.node_names.size(); ++i)
        if (f.node_names[i] == n) v.push_back(ns.x()[cir.node_unknown(NodeId(static_cast<int>(i))).v]);
  };
  const std::string yaml = netlist_yaml(fn);
  ParsedNetlist pn;
  Status st = parse_yaml_string(yaml, "mapped.yaml", builtin_catalog(), pn);
  INFO(st.to_string());
  REQUIRE(st.ok());
  FlatNetlist fn2;
  st = elaborate(pn, builtin_catalog(), fn2);
  INFO(st.to_string());
  REQUIRE(st.ok());
  std::vector<double> v1, v2;
  solve(fn, names.tia_out[1], v1);
  solve(fn2, names.tia_out[1], v2);
  REQUIRE(v1.size() == 10);
  REQUIRE(v2.size() == 10);
  for (int j = 0; j < 10; ++j) CHECK(v2[j] == doctest::Approx(v1[j]).epsilon(1e-9));
}

TEST_CASE("nn mapping: anasim nn eval, export-spice and mc on a small data set") {
  const fs::path dir = scratch("cli");
  const Mlp net = net_64_16_10();
  write_tiny_mnist(dir, net);
  ModelInfo info;
  REQUIRE(save_model((dir / "m.h5").string(), net, info).ok());
  {
    std::ofstream f(dir / "hw.yaml");
    f << "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: 0.02\n";
  }
  const std::string common = fmt::format("--model '{}' --config '{}' --data '{}'", (dir / "m.h5").string(),
                                         (dir / "hw.yaml").string(), dir.string());
  int rc = 0;
  std::string out = run("nn eval " + common + " --json --reference 2", rc);
  INFO(out);
  REQUIRE(rc == 0);
  for (const char* field : {"\"digital_accuracy\"", "\"analog_accuracy\"", "\"agreement\"", "\"samples\": 60",
                            "\"seconds\"", "\"reference_max_rel_diff\""})
    CHECK(contains(out, field));
  const size_t p = out.find("\"reference_max_rel_diff\": ");
  REQUIRE(p != std::string::npos);
  CHECK(std::strtod(out.c_str() + p + 26, nullptr) <= 1e-6);

  out = run("nn eval " + common + " --mode hybrid --samples 30", rc);
  INFO(out);
  CHECK(rc == 0);
  CHECK(contains(out, "hybrid mode"));
  CHECK(contains(out, "analog accuracy"));

  out = run("nn export-spice " + common + " --sample 3 -o '" + (dir / "deck.cir").string() + "' --yaml '" +
                (dir / "deck.yaml").string() + "'",
            rc);
  INFO(out);
  CHECK(rc == 0);
  CHECK(fs::file_size(dir / "deck.cir") > 1000);
  CHECK(fs::exists(dir / "deck.yaml"));

  out = run("nn mc " + common + " --trials 2 --seed 7 --progress --sweep sigma_g=0,0.1 -o '" + (dir / "mc.h5").string() + "'", rc);
  INFO(out);
  CHECK(rc == 0);
  CHECK(contains(out, "sigma_g"));
  CHECK(contains(out, "p5"));
  CHECK(contains(out, "ETA"));
  CHECK(fs::exists(dir / "mc.h5"));

  out = run("nn mc " + common + " --trials 2 --sweep nosuch=1,2", rc);
  CHECK(rc == 2);
  CHECK(contains(out, "nosuch"));
  out = run("nn eval --model '" + (dir / "m.h5").string() + "' --config '" + (dir / "missing.yaml").string() +
                "' --data '" + dir.string() + "'",
            rc);
  CHECK(rc == 2);
  fs::remove_all(dir);
}
