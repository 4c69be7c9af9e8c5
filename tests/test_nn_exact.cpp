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
#include <omp.h>
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

TEST_CASE("nn exact: fast evaluator equals the MNA solve on every layer output") {
  for (MappingMode mode : {MappingMode::Analog, MappingMode::Hybrid})
    for (int level : {1, 2, 0}) {
      CAPTURE(mode_name(mode));
      CAPTURE(level);
      Small s;
      make_small(s, mode, level);
      // Saturate one TIA per layer: a feedback resistor 40x too large (the headroom shrunk below zero).
      for (auto& li : s.hw.layers) li.res[1 * kNumPeripheryRes + kResRf] *= 40;
      FastEvaluator fe;
      REQUIRE(fe.prepare(s.hw).ok());
      ReferenceReport rep;
      const Status st = compare_reference(s.hw, fe, s.x, 4, rep);
      INFO(st.to_string());
      REQUIRE(st.ok());
      INFO("worst: " << rep.worst << " max abs " << rep.max_abs);
      CHECK(rep.samples == 4);
      MESSAGE("max_rel " << rep.max_rel << " max_abs " << rep.max_abs << " worst " << rep.worst << " ms/sample " << 1e3 * rep.seconds_per_sample);
      CHECK(rep.max_rel <= 1e-6);
      CHECK(rep.saturated >= 1);
      CHECK(rep.code_mismatches == 0);
    }
}
