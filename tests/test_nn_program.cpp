// Tests for nn/program.cpp (hardware key program: compensated): the compensated conductances make the full
// netlist's column currents, solved by the MNA engine, equal the ideal weighted sums within the reported residual,
// and the error the residual predicts is the one the MNA solve shows (1e-6 relative on the error itself).
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>
#include <fmt/format.h>
#include "devices/dac.hpp"
#include "devices/registry.hpp"
#include "engine/circuit.hpp"
#include "engine/newton.hpp"
#include "nn/evaluate.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/netlist_builder.hpp"
#include "nn/program.hpp"
#include "nn_test_support.hpp"

using namespace anasim;
using namespace anasim::nn;

namespace {

// 64-16-10 with strong IR drop: 5 ohm per segment, 3 row tiles in layer 0, 2 column tiles in the hidden layer,
// DAC output resistance; level-0 op-amps (nullors) so that the column ports sit at exactly 0 V.
HardwareConfig ir_config(int levels) {
  HardwareConfig c = default_hardware_config();
  c.tile_rows = 48;
  c.tile_cols = 8;
  c.rwire_row = c.rwire_col = 5.0;
  c.dac_rout = 50;
  c.levels = levels;
  c.calib_samples = 200;
  REQUIRE(set_hardware_param(c, "opamp.level", "0").ok());
  REQUIRE(set_hardware_param(c, "program", "compensated").ok());
  return c;
}

// The layer's programmed conductances (physical rows x outputs) assembled from its tiles.
std::vector<double> layer_g(const HardwareInstance& hw, int l) {
  const LayerMapping& m = hw.map->layers[l];
  std::vector<double> g(static_cast<size_t>(m.physical_rows()) * m.outputs);
  for (const TileInstance& t : hw.layers[l].tiles)
    for (int i = 0; i < t.spec.rows; ++i)
      for (int j = 0; j < t.spec.cols; ++j)
        g[static_cast<size_t>(t.row0 + i) * m.outputs + t.col0 + j] = t.g[static_cast<size_t>(i) * t.spec.cols + j];
  return g;
}

struct Solved {
  std::vector<std::vector<double>> row_v;  // per layer: row-port voltages (DAC sources, or h / hn nodes)
  std::vector<std::vector<double>> col_i;  // per layer: current from the arrays into each TIA summing node [A]
  std::vector<std::vector<double>> col_v;  // per layer: summing-node voltages [V]
};

// MNA operating point of build_netlist's circuit for image x.
Solved mna_solve(const HardwareInstance& hw, const float* x) {
  const MappedNetwork& map = *hw.map;
  LayerCodes codes(map.layers.size());
  codes[0] = input_codes(map.layers[0], x);
  FlatNetlist fn;
  NetlistNames names;
  REQUIRE(build_netlist(hw, codes, 0, fn, names).ok());
  Circuit circuit;
  REQUIRE(circuit.build(fn, builtin_catalog()).ok());
  NewtonSolver solver(circuit, fn.options);
  const Status st = solver.operating_point();
  INFO(st.to_string());
  REQUIRE(st.ok());
  std::unordered_map<std::string, int> id;
  const auto& cn = circuit.node_names();
  for (size_t i = 0; i < cn.size(); ++i) id[cn[i]] = static_cast<int>(i);
  auto volt = [&](const std::string& node) {
    const UnknownIndex u = circuit.node_unknown(NodeId(id.at(node)));
    return u.is_ground() ? 0.0 : solver.x()[u.v];
  };
  Solved s;
  for (size_t l = 0; l < map.layers.size(); ++l) {
    const LayerMapping& m = map.layers[l];
    const LayerInstance& li = hw.layers[l];
    std::vector<double> rv(m.physical_rows());
    for (int p = 0; p < m.physical_rows(); ++p) {
      const bool dac = m.dac_rows || p >= 2 * m.inputs;
      if (dac) {  // the DAC source (odd rows: swapped pins); bias rows at full scale
        const DacSpec& d = li.dac_of_row(p, m.inputs);
        const long code = p / 2 < m.inputs ? codes[l][p / 2] : dac_max_code(d);
        rv[p] = (p % 2 == 0 ? 1.0 : -1.0) * dac_voltage(d, code);
      } else {
        rv[p] = volt(fmt::format(p % 2 == 0 ? "h{}_{}" : "hn{}_{}", l - 1, p / 2));
      }
    }
    std::vector<double> ci(m.outputs), cv(m.outputs);
    for (int j = 0; j < m.outputs; ++j) {
      const double vc = volt(names.tia_in[l][j]), y = volt(names.tia_out[l][j]);
      cv[j] = vc;
      ci[j] = (vc - y) / li.res[static_cast<size_t>(j) * kNumPeripheryRes + kResRf];  // nullor: no input current
    }
    s.row_v.push_back(rv);
    s.col_i.push_back(ci);
    s.col_v.push_back(cv);
  }
  return s;
}

// Ideal weighted sums of layer l: sum_i W(i, j) (v_2i - v_2i+1) / 2, W the ideal mapping's differences at the
// programmed scale.
std::vector<double> ideal_sums(const LayerMapping& ideal, double factor, const std::vector<double>& v) {
  const int C = ideal.outputs;
  std::vector<double> s(C, 0.0);
  for (int i = 0; i <= ideal.inputs; ++i)
    for (int j = 0; j < C; ++j) {
      const double w = factor * (ideal.g_target[static_cast<size_t>(2 * i) * C + j] -
                                 ideal.g_target[static_cast<size_t>(2 * i + 1) * C + j]);
      s[j] += w * 0.5 * (v[2 * i] - v[2 * i + 1]);
    }
  return s;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

}  // namespace

TEST_CASE("nn program: ideal is the default and leaves the mapping as it was") {
  const Mlp net = nn_test::net_64_16_10();
  const MatrixRf x = nn_test::code_inputs(50, 64, 4);
  HardwareConfig c = default_hardware_config();
  CHECK(c.program == ProgramMode::Ideal);
  MappedNetwork a, b;
  REQUIRE(map_network(net, c, x, a).ok());
  REQUIRE(set_hardware_param(c, "program", "ideal").ok());
  REQUIRE(map_network(net, c, x, b).ok());
  CHECK(a.program.empty());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    CHECK(a.layers[l].g_target == b.layers[l].g_target);
    CHECK(a.layers[l].rf == b.layers[l].rf);
  }
  CHECK(!set_hardware_param(c, "program", "exact").ok());
}

TEST_CASE("nn program: compensated conductances give the ideal weighted sums in the MNA solve of the netlist") {
  const Mlp net = nn_test::net_64_16_10();
  const MatrixRf x = nn_test::code_inputs(200, 64, 4);
  for (int levels : {0, 64}) {
    CAPTURE(levels);
    const HardwareConfig c = ir_config(levels);
    HardwareConfig ci = c;
    ci.program = ProgramMode::Ideal;
    MappedNetwork map, ideal;
    const Status st = map_network(net, c, x, map);
    INFO(st.to_string());
    REQUIRE(st.ok());
    REQUIRE(map_network(net, ci, x, ideal).ok());
    REQUIRE(map.program.size() == 2);
    HardwareInstance hw, hw_ideal;
    realize(map, 3, 0, hw);
    realize(ideal, 3, 0, hw_ideal);
    for (int l = 0; l < 2; ++l) {
      const LayerProgram& p = map.program[l];
      MESSAGE(fmt::format("levels {} layer {}: residual {:.3g} (output-referred {:.3g}), scale x{:.4f}, {} port solves",
                          levels, l, p.residual, p.residual_out, p.scale_factor, p.iterations));
      if (levels == 0) {
        CHECK(p.residual <= 1e-9);
        CHECK(p.residual_out <= 1e-9);
      } else {
        CHECK(p.residual > 1e-4);  // the levels leave a residual large enough to check against the MNA solve
      }
      CHECK(p.scale_factor <= 1.0);
      CHECK(map.layers[l].rf * map.layers[l].scale == doctest::Approx(ideal.layers[l].rf * ideal.layers[l].scale));
      // What the tiles carry is what the compensation solved for (programming adds nothing without mismatch).
      const std::vector<double> programmed = layer_g(hw, l);
      double dmax = 0;
      for (size_t k = 0; k < programmed.size(); ++k)
        dmax = std::max(dmax, std::fabs(programmed[k] - map.layers[l].g_target[k]));
      CHECK(dmax <= 1e-12 * c.gmax);  // levels: program_crossbar rounds again (rounding of the level arithmetic)
      for (double g : map.layers[l].g_target) {
        CHECK(g >= c.gmin);
        CHECK(g <= c.gmax * (1 + 1e-12));
      }
    }
    // The residual's own error prediction: W_eff from the port transfer of the programmed conductances.
    std::vector<std::vector<double>> geff(2);
    for (int l = 0; l < 2; ++l) REQUIRE(layer_transfer(map, l, layer_g(hw, l), geff[l]).ok());
    for (int k : {0, 7, 19}) {
      CAPTURE(k);
      const Solved s = mna_solve(hw, x.row(k).data());
      const Solved s0 = mna_solve(hw_ideal, x.row(k).data());
      for (int l = 0; l < 2; ++l) {
        CAPTURE(l);
        const LayerMapping& m = map.layers[l];
        const int C = m.outputs, P = m.physical_rows();
        CHECK(max_abs(s.col_v[l]) <= 1e-15);  // nullor TIAs: the column ports are at 0 V
        const std::vector<double> want = ideal_sums(ideal.layers[l], map.program[l].scale_factor, s.row_v[l]);
        std::vector<double> err(C), pred(C);
        for (int j = 0; j < C; ++j) {
          double i_pred = 0;
          for (int q = 0; q < P; ++q) i_pred += geff[l][static_cast<size_t>(j) * P + q] * s.row_v[l][q];
          err[j] = s.col_i[l][j] - want[j];
          pred[j] = i_pred - want[j];
        }
        // Within the reported residual: |error| <= residual * max|W| * sum of the differential row voltages.
        double wmax = 0, vsum = 0;
        for (int i = 0; i <= m.inputs; ++i) {
          vsum += 0.5 * std::fabs(s.row_v[l][2 * i] - s.row_v[l][2 * i + 1]);
          for (int j = 0; j < C; ++j)
            wmax = std::max(wmax, std::fabs(ideal.layers[l].g_target[static_cast<size_t>(2 * i) * C + j] -
                                            ideal.layers[l].g_target[static_cast<size_t>(2 * i + 1) * C + j]));
        }
        const double bound = std::max(map.program[l].residual, 1e-9) * map.program[l].scale_factor * wmax * vsum;
        CHECK(max_abs(err) <= bound);
        // The MNA's error is the one the port transfer predicts, to 1e-6 of the error itself (levels) or of
        // the sums (no levels: the error is rounding).
        double diff = 0;
        for (int j = 0; j < C; ++j) diff = std::max(diff, std::fabs(err[j] - pred[j]));
        const double ref = levels > 0 ? max_abs(pred) : max_abs(want);
        MESSAGE(fmt::format("levels {} image {} layer {}: max |I - ideal| {:.3e} A (ideal sums up to {:.3e} A), "
                            "predicted {:.3e}, |MNA - predicted| {:.2e}; uncompensated max |I - ideal| {:.3e} A",
                            levels, k, l, max_abs(err), max_abs(want), max_abs(pred), diff,
                            [&] {
                              const std::vector<double> w0 = ideal_sums(ideal.layers[l], 1.0, s0.row_v[l]);
                              double e = 0;
                              for (int j = 0; j < C; ++j) e = std::max(e, std::fabs(s0.col_i[l][j] - w0[j]));
                              return e;
                            }()));
        CHECK(diff <= 1e-6 * ref);
      }
    }
  }
}

TEST_CASE("nn program: Monte Carlo draws every trial's mismatch around the compensated targets") {
  // run_mc (nn mc, the nn_mc analysis and Python's monte_carlo all run it) maps once per point, compensation
  // included, and draws each trial's cells around those targets: every trial's accuracy is that of the
  // compensated mapping realized with the trial's draw, and the point reports the compensation's residual.
  const Mlp net = nn_test::net_64_16_10();
  const MatrixRf x = nn_test::code_inputs(200, 64, 4);
  HardwareConfig c = ir_config(0);
  c.sigma_g = 0.05;
  Dataset test;
  test.images = x.topRows(40);
  const std::vector<int> digital = predict(net, test.images);
  test.labels = digital;  // the float network's classes as labels: the accuracy is the agreement with it
  McOptions mo;
  mo.trials = 3;
  mo.seed = 5;
  mo.sweep_param = "program";
  mo.sweep_values = {"ideal", "compensated"};
  McReport r;
  const Status st = run_mc(net, c, x, test, mo, r);
  INFO(st.to_string());
  REQUIRE(st.ok());
  REQUIRE(r.points.size() == 2);
  CHECK(r.points[0].program.empty());
  MappedNetwork map;
  REQUIRE(map_network(net, c, x, map).ok());
  const std::vector<LayerProgram>& rp = r.points[1].program;
  REQUIRE(rp.size() == 2);
  for (int l = 0; l < 2; ++l) {
    CHECK(rp[l].residual == map.program[l].residual);
    CHECK(rp[l].residual_out == map.program[l].residual_out);
    CHECK(rp[l].scale_factor == map.program[l].scale_factor);
    CHECK(rp[l].residual <= 1e-9);
  }
  for (int t = 0; t < mo.trials; ++t) {
    CAPTURE(t);
    HardwareInstance hw;
    realize(map, mo.seed, t, hw);
    // The draw deviates from the compensated targets.
    for (int l = 0; l < 2; ++l) {
      const TileInstance& tile = hw.layers[l].tiles[0];
      double dev = 0;
      for (size_t k = 0; k < tile.g.size(); ++k)
        dev = std::max(dev, std::fabs(tile.g[k] / tile.spec.g[k] - 1));
      CHECK(dev > 0.05);
      for (int i = 0; i < tile.spec.rows; ++i)
        for (int j = 0; j < tile.spec.cols; ++j)
          CHECK(tile.spec.g[static_cast<size_t>(i) * tile.spec.cols + j] ==
                map.layers[l].g_target[static_cast<size_t>(tile.row0 + i) * map.layers[l].outputs + tile.col0 + j]);
    }
    FastEvaluator fe;
    REQUIRE(fe.prepare(hw).ok());
    std::vector<int> cls;
    REQUIRE(fe.classify(test.images, 0, test.size(), 0, cls).ok());
    long same = 0;
    for (int i = 0; i < test.size(); ++i) same += cls[i] == test.labels[i];
    CHECK(r.points[1].accuracy[t] == static_cast<double>(same) / test.size());
  }
}
