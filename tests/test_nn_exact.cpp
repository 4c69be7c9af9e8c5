// Tests for nn/fast_eval.cpp and nn/evaluate.cpp: the fast evaluator against the full MNA solve of the mapped
// circuit (nn/netlist_builder.cpp) on every layer output, including saturated op-amps, in analog and hybrid mode
// and for op-amp levels 0, 1, 2; against ngspice on the exported deck; determinism across thread counts.
// The "slow" cases run the shipped 784-128-10 model (CTest label "slow").
#include <doctest/doctest.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "engine/export_spice.hpp"
#include "engine/rawfile.hpp"
#include "ngspice_helpers.hpp"
#include "nn/dataset.hpp"
#include "nn/evaluate.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/model_io.hpp"
#include "nn/netlist_builder.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
using namespace anasim::nn;

namespace {

// Synthetic "images": n x d pixels in [0, 1], smooth blobs plus noise, fixed seed.
MatrixRf synthetic_inputs(int n, int d, std::uint64_t seed) {
  Rng rng(seed);
  MatrixRf x(n, d);
  for (int i = 0; i < n; ++i) {
    const double c = rng.uniform() * d, w = 3 + 6 * rng.uniform();
    for (int k = 0; k < d; ++k) {
      const double v = std::exp(-0.5 * (k - c) * (k - c) / (w * w)) + 0.3 * rng.uniform();
      x(i, k) = static_cast<float>(std::min(1.0, v));
    }
  }
  return x;
}

// A 64-16-10 network with fixed random weights and small random biases.
Mlp small_net() {
  Mlp net;
  REQUIRE(make_mlp({64, 16, 10}, 7, net).ok());
  Rng rng(11);
  for (auto& l : net.layers)
    for (int j = 0; j < l.bias.size(); ++j) l.bias(j) = 0.1 * rng.normal();
  return net;
}

// Hardware for the small network: tiles small enough that rows stack (3 row tiles in layer 0) and the hidden
// layer splits into 2 column tiles; mismatch on everything static.
HardwareConfig small_config(MappingMode mode, int level) {
  HardwareConfig c = default_hardware_config();
  c.mode = mode;
  c.tile_rows = 48;
  c.tile_cols = 8;
  c.sigma_g = 0.05;
  c.stuck_on = 0.01;
  c.stuck_off = 0.01;
  c.rf_tol = 0.01;
  c.vos_sigma = 1e-3;
  c.dac_inl_sigma = 0.5;
  c.adc_inl_sigma = 0.5;
  c.dac_rout = 50;
  c.diode_rs = level == 1 ? 5.0 : 0.0;
  c.calib_samples = 200;
  REQUIRE(set_hardware_param(c, "opamp.level", std::to_string(level)).ok());
  return c;
}

struct Small {
  Mlp net = small_net();
  MatrixRf x = synthetic_inputs(64, 64, 3);
  MappedNetwork map;
  HardwareInstance hw;
};

void make_small(Small& s, MappingMode mode, int level) {
  const HardwareConfig c = small_config(mode, level);
  const Status st = map_network(s.net, c, s.x, s.map);
  INFO(st.to_string());
  REQUIRE(st.ok());
  realize(s.map, 5, 2, s.hw);
}

}  // namespace

// fast_eval.cpp is compiled for the native CPU: with AVX-512 Eigen would assume 64-byte alignment there and 16 bytes
// here, so matrices allocated in one file were read with aligned 64-byte loads in the other (found by UBSan).
TEST_CASE("nn exact: Eigen alignment is the same in the fast evaluator as in every other file") {
  CHECK(nn::fast_eval_eigen_alignment() == 1000 * EIGEN_DEFAULT_ALIGN_BYTES + EIGEN_MAX_STATIC_ALIGN_BYTES);
}

// Runs body(mode, its name, level) for both mapping modes and op-amp levels 1, 2 and 0, named in failure messages.
template <class F>
void each_mode_and_level(F&& body) {
  for (MappingMode mode : {MappingMode::Analog, MappingMode::Hybrid})
    for (int level : {1, 2, 0}) {
      const std::string mode_s = mode_name(mode);
      CAPTURE(mode_s);
      CAPTURE(level);
      body(mode, mode_s, level);
    }
}

TEST_CASE("nn exact: fast evaluator equals the MNA solve on every layer output") {
  each_mode_and_level([](MappingMode mode, const std::string& mode_s, int level) {
    Small s;
    make_small(s, mode, level);
    // Saturate one TIA per layer: a feedback resistor 40x too large (the headroom shrunk below zero).
    for (auto& li : s.hw.layers) li.res[1 * kNumPeripheryRes + kResRf] *= 40;
    FastEvaluator fe;
    REQUIRE(fe.prepare(s.hw).ok());
    // Cold: the engine's own operating-point strategy on every sample, independent of the fast path; warm:
    // Newton started from the fast path's voltages (as used for the large model).
    for (bool warm : {false, true}) {
      CAPTURE(warm);
      ReferenceReport rep;
      const Status st = compare_reference(s.hw, fe, s.x, 4, rep, warm);
      INFO(st.to_string());
      REQUIRE(st.ok());
      INFO("worst: " << rep.worst << " max abs " << rep.max_abs);
      CHECK(rep.samples == 4);
      CHECK(rep.max_rel <= 1e-6);
      CHECK(rep.saturated >= 1);
      CHECK(rep.code_mismatches == 0);
      if (warm) CHECK(rep.newton_iterations <= 4 * 6);
      MESSAGE(mode_s << " level " << level << (warm ? " warm" : " cold") << ": max rel diff " << rep.max_rel
                     << ", max abs diff " << rep.max_abs << " V, " << rep.newton_iterations << " MNA Newton iterations");
    }
  });
}

TEST_CASE("nn exact: the exported deck in ngspice agrees with the fast evaluator within 0.1 mV") {
  if (!test::ngspice_available()) {
    MESSAGE("ngspice not found: skipped");
    return;
  }
  for (MappingMode mode : {MappingMode::Analog, MappingMode::Hybrid}) {
    const std::string mode_s = mode_name(mode);
    CAPTURE(mode_s);
    Small s;
    make_small(s, mode, 2);
    FastEvaluator fe;
    REQUIRE(fe.prepare(s.hw).ok());
    std::vector<LayerVoltages> v;
    LayerCodes codes;
    REQUIRE(fe.evaluate_one(s.x.row(5).data(), 5, v, &codes).ok());
    FlatNetlist fn;
    NetlistNames names;
    REQUIRE(build_netlist(s.hw, codes, 5, fn, names).ok());
    const auto dir = test::scratch_dir(std::string("nn_spice_") + mode_name(mode));
    const auto deck = dir / "mapped.cir";
    REQUIRE(export_spice(fn, deck.string()).ok());
    const std::vector<RawPlot> plots = test::run_ngspice(deck);
    REQUIRE(!plots.empty());
    const RawPlot& p = plots[0];
    double worst = 0;
    int compared = 0;
    auto cmp = [&](const std::vector<double>& fast, const std::vector<std::string>& nodes) {
      for (size_t j = 0; j < nodes.size(); ++j) {
        const int k = p.find("v(" + nodes[j] + ")");
        INFO("node " << nodes[j]);
        REQUIRE(k >= 0);
        worst = std::max(worst, std::fabs(p.re[k][0] - fast[j]));
        ++compared;
      }
    };
    for (size_t l = 0; l < v.size(); ++l) {
      cmp(v[l].y, names.tia_out[l]);
      cmp(v[l].h, names.rect_out[l]);
      cmp(v[l].hn, names.inv_out[l]);
    }
    MESSAGE(mode_s << ": " << compared << " layer outputs, max |ngspice - anasim| = " << worst << " V");
    CHECK(compared >= 26);
    CHECK(worst <= 1e-4);
  }
}

TEST_CASE("nn exact: results do not depend on the thread count") {
  Small s;
  HardwareConfig c = small_config(MappingMode::Analog, 2);
  c.read_noise = 2e-7;
  REQUIRE(map_network(s.net, c, s.x, s.map).ok());
  realize(s.map, 9, 1, s.hw);
  std::vector<int> cls[2];
  std::vector<long> codes[2];
  for (int t : {1, 2}) {
    test_support::OmpThreads limit(t);
    FastEvaluator fe;
    FastOptions o;
    o.chunk = 8;  // several chunks on both threads
    REQUIRE(fe.prepare(s.hw, o).ok());
    REQUIRE(fe.classify(s.x, 0, static_cast<int>(s.x.rows()), 100, cls[t - 1], &codes[t - 1]).ok());
    CHECK(fe.stats().failures == 0);
  }
  CHECK(cls[0] == cls[1]);
  CHECK(codes[0] == codes[1]);
  // Monte Carlo over trials: same numbers for the same seed, whatever the threads.
  Dataset test;
  test.images = s.x;
  for (int i = 0; i < s.x.rows(); ++i) test.labels.push_back(cls[0][i] % 10);
  McOptions mo;
  mo.trials = 3;
  mo.seed = 4;
  mo.sweep_param = "sigma_g";
  mo.sweep_values = {"0.02", "0.1"};
  McReport r[2];
  for (int t : {1, 2}) {
    test_support::OmpThreads limit(t);
    REQUIRE(run_mc(s.net, c, s.x, test, mo, r[t - 1]).ok());
  }
  REQUIRE(r[0].points.size() == 2);
  for (size_t p = 0; p < 2; ++p) CHECK(r[0].points[p].accuracy == r[1].points[p].accuracy);
  CHECK(r[0].points[0].accuracy.size() == 3);
}

TEST_CASE("nn exact: the batched sweeps (images as SIMD lanes) give the one-image sweeps' codes") {
  // FastOptions::batch runs 8 images side by side, each lane following the one-image algorithm to the same
  // tolerance: every ADC code must be the one-image path's, in both modes, at every op-amp level, with saturated
  // TIAs, read noise, diode series resistance (level 1's config) and chunks that leave partial blocks.
  each_mode_and_level([](MappingMode mode, const std::string& mode_s, int level) {
    Small s;
    HardwareConfig c = small_config(mode, level);
    c.read_noise = 2e-7;
    REQUIRE(map_network(s.net, c, s.x, s.map).ok());
    realize(s.map, 9, 1, s.hw);
    for (auto& li : s.hw.layers) li.res[1 * kNumPeripheryRes + kResRf] *= 40;
    std::vector<int> cls[2];
    std::vector<long> codes[2];
    long sweeps[2], newton[2];
    for (int b : {0, 1}) {
      FastEvaluator fe;
      FastOptions o;
      o.batch = b == 1;
      o.direct = false;
      o.chunk = 13;  // partial blocks of lanes
      REQUIRE(fe.prepare(s.hw, o).ok());
      REQUIRE(fe.classify(s.x, 0, static_cast<int>(s.x.rows()), 100, cls[b], &codes[b]).ok());
      CHECK(fe.stats().failures == 0);
      sweeps[b] = fe.stats().sweeps;
      newton[b] = fe.stats().newton;
    }
    CHECK(cls[0] == cls[1]);
    CHECK(codes[0] == codes[1]);
    // The same algorithm lane by lane: the same work, up to rounding-level differences in a decision.
    CHECK(std::abs(sweeps[1] - sweeps[0]) <= sweeps[0] / 50);
    CHECK(std::abs(newton[1] - newton[0]) <= newton[0] / 20);
    MESSAGE(mode_s << " level " << level << ": sweeps " << sweeps[0] << " / " << sweeps[1] << ", Newton "
                   << newton[0] << " / " << newton[1]);
  });
}

TEST_CASE("nn exact: an ideal periphery is evaluated by products alone, with the sweeps' codes") {
  // Hybrid mode with level-0 op-amps: FastOptions::direct evaluates each layer as one product. Its ADC codes must be
  // the sweeps' for every image, with read noise, with DAC row pairs that are exact opposites (the pair product)
  // and with DAC INL that makes them differ (every row).
  for (double inl : {0.0, 0.5}) {
    CAPTURE(inl);
    Small s;
    HardwareConfig c = small_config(MappingMode::Hybrid, 0);
    c.read_noise = 2e-7;
    c.dac_inl_sigma = inl;
    REQUIRE(map_network(s.net, c, s.x, s.map).ok());
    realize(s.map, 9, 1, s.hw);
    std::vector<int> cls[2];
    std::vector<long> codes[2];
    long sweeps[2];
    for (int d : {0, 1}) {
      FastEvaluator fe;
      FastOptions o;
      o.direct = d == 1;
      o.chunk = 4;  // several chunks
      REQUIRE(fe.prepare(s.hw, o).ok());
      REQUIRE(fe.classify(s.x, 0, static_cast<int>(s.x.rows()), 100, cls[d], &codes[d]).ok());
      CHECK(fe.stats().failures == 0);
      sweeps[d] = fe.stats().sweeps;
    }
    CHECK(sweeps[0] > 0);
    CHECK(sweeps[1] == 0);
    CHECK(cls[0] == cls[1]);
    CHECK(codes[0] == codes[1]);
  }
}

// ---- slow: the shipped 784-128-10 model on MNIST (CTest label "slow") ----------------------------------------

namespace {

struct Mnist {
  Mlp net;
  HardwareConfig cfg;
  Dataset train, test;
};

void load_mnist(Mnist& m) {
  REQUIRE(load_model(std::string(ANASIM_SOURCE_DIR) + "/data/mlp_784_128_10.h5", m.net).ok());
  REQUIRE(load_hardware_config(std::string(ANASIM_SOURCE_DIR) + "/data/examples/mnist_hw.yaml", m.cfg).ok());
  std::string dir;
  const Status st = find_data_dir(DatasetKind::Mnist, "", true, dir);
  INFO(st.to_string());
  REQUIRE(st.ok());
  REQUIRE(load_split(dir, Split::Train, m.train).ok());
  REQUIRE(load_split(dir, Split::Test, m.test).ok());
}

}  // namespace

TEST_CASE("nn slow: 784-128-10 through the mapped circuit equals the MNA solve on 200 images" * doctest::skip()) {
  Mnist m;
  load_mnist(m);
  for (MappingMode mode : {MappingMode::Analog, MappingMode::Hybrid}) {
    const std::string mode_s = mode_name(mode);
    CAPTURE(mode_s);
    HardwareConfig c = m.cfg;
    c.mode = mode;
    EvalReport r;
    const Status st = run_eval(m.net, c, m.train.images, m.test, 200, 200, r, /*warm_reference=*/true);
    INFO(st.to_string());
    REQUIRE(st.ok());
    MESSAGE(mode_s << ": " << r.reference.samples << " samples, " << r.reference.unknowns << " MNA unknowns, "
                   << r.reference.seconds_per_sample << " s/sample; max rel diff " << r.reference.max_rel
                   << ", max abs diff " << r.reference.max_abs << " V (" << r.reference.worst << "), "
                   << r.reference.saturated << " samples with saturated op-amps");
    CHECK(r.reference.samples == 200);
    CHECK(r.reference.max_rel <= 1e-6);
    CHECK(r.reference.code_mismatches == 0);
  }
}

TEST_CASE("nn slow: 784-128-10 analog accuracy within 0.3 points of digital on the full test set" * doctest::skip()) {
  Mnist m;
  load_mnist(m);
  for (MappingMode mode : {MappingMode::Analog, MappingMode::Hybrid}) {
    const std::string mode_s = mode_name(mode);
    CAPTURE(mode_s);
    HardwareConfig c = m.cfg;
    c.mode = mode;
    EvalReport r;
    const Status st = run_eval(m.net, c, m.train.images, m.test, 0, 0, r);
    INFO(st.to_string());
    REQUIRE(st.ok());
    MESSAGE(mode_s << ": digital " << 100 * r.digital_accuracy << "%, analog " << 100 * r.analog_accuracy
                   << "%, agreement " << 100 * r.agreement << "%, " << r.seconds << " s");
    CHECK(r.samples == 10000);
    CHECK(std::fabs(r.analog_accuracy - r.digital_accuracy) <= 0.003);
    CHECK(r.stats.failures == 0);
  }
}
