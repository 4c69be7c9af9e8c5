// Tests for nn/energy.cpp and the transient option of nn/netlist_builder.cpp: the engine's transient of the
// full mapped circuit of a small network (64-16-10, level-2 op-amps) settles to the DC operating point, its
// energy breakdown adds up to what the sources deliver, and a step from the same codes costs no settling; slow
// cases: the final outputs equal the DC operating point, the exported deck in ngspice gives the same energy.
#include <doctest/doctest.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "engine/export_spice.hpp"
#include "engine/rawfile.hpp"
#include "engine/simulate.hpp"
#include "nn/energy.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/model_io.hpp"
#include "nn/netlist_builder.hpp"
#include "ngspice_helpers.hpp"
#include "nn_test_support.hpp"

using namespace anasim;
using namespace anasim::nn;
using namespace anasim::nn_test;

namespace {

struct SmallTransient {
  Mlp net = net_64_16_10();
  MatrixRf x = code_inputs(24, 64, 5);
  HardwareConfig cfg = default_hardware_config();
  MappedNetwork map;
  HardwareInstance hw;
  FastEvaluator fe;
  explicit SmallTransient(MappingMode mode = MappingMode::Analog) {
    cfg.mode = mode;
    cfg.tile_rows = 48;
    cfg.tile_cols = 8;
    cfg.dac_rout = 50;
    cfg.calib_samples = 24;
    REQUIRE(set_hardware_param(cfg, "opamp.level", "2").ok());
    REQUIRE(map_network(net, cfg, x, map).ok());
    realize(map, cfg.seed, 0, hw);
    REQUIRE(fe.prepare(hw).ok());
  }
  LayerCodes codes(int k, std::vector<LayerVoltages>* v = nullptr) {
    std::vector<LayerVoltages> fv;
    LayerCodes c;
    REQUIRE(fe.evaluate_one(x.row(k).data(), static_cast<std::uint64_t>(k), fv, &c).ok());
    if (v) *v = fv;
    return c;
  }
};

}  // namespace

// The default part settles in ~7 us here (measured: 5.9, 6.5, 7.1 us on images 0..2); 25 us is a fixed run
// length that keeps the fast suite at two engine runs.
constexpr double kTstop = 25e-6;

TEST_CASE("nn energy: the transient settles, the breakdown sums to the delivered energy, no step no settling") {
  SmallTransient s;
  TransientOptions opt;
  opt.tstop = kTstop;
  const int k = 0;
  const LayerCodes c = s.codes(k);
  ImageTransient it;
  Status st = image_transient(s.hw, c, {}, k, opt, {0.2 * kTstop, kTstop}, it);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  MESSAGE(fmt::format("settle {:.4g} s of {:.4g} s, energy {:.4g} J, {} points, {:.2f} s", it.settle_s, it.tstop_s,
                      it.energy_j, it.timepoints, it.seconds));
  CHECK(it.settle_s > 1e-6);
  CHECK(it.settle_s < 0.5 * it.tstop_s);
  CHECK(it.energy_j > 0);
  double sum = 0;
  for (double e : it.energy_parts_j) sum += e;
  CHECK(sum == doctest::Approx(it.energy_j).epsilon(1e-6));  // Tellegen: absorbed = delivered
  CHECK(it.energy_parts_j[kPartCrossbar] > 0);
  CHECK(it.energy_parts_j[kPartOpamps] > 0);
  CHECK(it.energy_parts_j[kPartActivation] > 0);
  CHECK(it.energy_parts_j[kPartDacs] > 0);
  // The settled class is the fast DC path's (argmax of the last ADC codes), also sampled at tstop.
  std::vector<int> cls;
  REQUIRE(s.fe.classify(s.x, k, 1, k, cls).ok());
  CHECK(it.cls == cls[0]);
  REQUIRE(it.cls_at.size() == 2);
  CHECK(it.cls_at[1] == it.cls);
  // Stepping from the input's own codes (previous state = this one): the outputs never leave the band.
  opt.from_previous = true;
  ImageTransient same;
  REQUIRE(image_transient(s.hw, c, c, k, opt, {}, same).ok());
  CHECK(same.settle_s == 0);
  CHECK(same.cls == it.cls);
}

TEST_CASE("nn slow: network transient's final outputs equal the DC operating point" * doctest::skip()) {
  SmallTransient s;
  const LayerCodes c = s.codes(1);
  FlatNetlist fn;
  NetlistNames names;
  TranSpec ts;
  ts.tstop = kTstop;
  ts.tmax = ts.tstop / 500;
  REQUIRE(build_netlist(s.hw, c, 1, fn, names, &ts).ok());
  RunResults tr;
  REQUIRE(simulate(fn, builtin_catalog(), tr).ok());
  REQUIRE(build_netlist(s.hw, c, 1, fn, names).ok());
  RunResults op;
  REQUIRE(simulate(fn, builtin_catalog(), op).ok());
  const double swing = std::max(s.map.vhi, -s.map.vlo);
  for (const auto& y : names.tia_out.back()) {
    const Signal* a = tr.analyses[0].find("v(" + y + ")");
    const Signal* b = op.analyses[0].find("v(" + y + ")");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(std::fabs(a->re.back() - b->re[0]) < 1e-4 * swing);
  }
}

// The exported transient deck (rails and DACs as sources) in ngspice: the energy the sources deliver over the
// run and the last layer's output waveforms agree with the engine's (e(total), v(y1_*)).
TEST_CASE("nn slow: network transient deck in ngspice gives the same energy and outputs" * doctest::skip()) {
  if (!test::ngspice_available()) {
    MESSAGE("ngspice not found: skipped");
    return;
  }
  SmallTransient s;
  const LayerCodes c = s.codes(3);
  FlatNetlist fn;
  NetlistNames names;
  TranSpec ts;
  ts.tstop = kTstop;
  ts.tmax = ts.tstop / 500;
  REQUIRE(build_netlist(s.hw, c, 3, fn, names, &ts).ok());
  const auto dir = test::scratch_dir("nn_energy_spice");
  const auto deck = dir / "tran.cir";
  REQUIRE(export_spice(fn, deck.string()).ok());
  for (const auto& y : names.tia_out.back()) fn.outputs.push_back("v(" + y + ")");
  RunResults rr;
  REQUIRE(simulate(fn, builtin_catalog(), rr).ok());
  const AnalysisResult& a = rr.analyses[0];
  const Signal* etot = a.find("e(total)");
  REQUIRE(etot);
  const std::vector<RawPlot> plots = test::run_ngspice(deck);
  REQUIRE(!plots.empty());
  const RawPlot& p = plots[0];
  // Delivered power in ngspice: minus the sum over the sources of v(+) * i(source).
  std::vector<double> power(p.points(), 0.0);
  int sources = 0;
  for (const FlatDevice& d : fn.devices) {
    if (d.type->key != "v") continue;
    const int ki = p.find("i(" + spice_instance_name("v", d.name) + ")");
    INFO("source " << d.name);
    REQUIRE(ki >= 0);
    const std::string node = fn.node_names[d.nodes[0].v];
    const int kv = p.find("v(" + node + ")");
    REQUIRE(kv >= 0);
    for (int q = 0; q < p.points(); ++q) power[q] -= p.re[kv][q] * p.re[ki][q];
    ++sources;
  }
  double e_spice = 0;
  for (int q = 1; q < p.points(); ++q) e_spice += 0.5 * (power[q] + power[q - 1]) * (p.re[0][q] - p.re[0][q - 1]);
  MESSAGE(sources << " sources; energy anasim " << etot->re.back() << " J, ngspice " << e_spice << " J");
  CHECK(etot->re.back() == doctest::Approx(e_spice).epsilon(1e-3));
  const test::Comparison cmp = test::compare_tran(a, p);
  MESSAGE("outputs: worst " << cmp.worst << " of range at " << cmp.worst_name);
  CHECK(cmp.compared == static_cast<int>(names.tia_out.back().size()));
  CHECK(cmp.worst < 1e-3);
}

TEST_CASE("nn energy: the command prints the issue's fields and writes the per-sample CSV") {
  const fs::path dir = test_support::scratch_dir("nn_energy", "cli");
  const Mlp net = net_64_16_10();
  write_tiny_mnist(dir, net);
  ModelInfo info;
  REQUIRE(save_model((dir / "m.h5").string(), net, info).ok());
  {
    std::ofstream f(dir / "hw.yaml");
    f << "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n";
  }
  int rc = 0;
  const std::string d = dir.string();
  const std::string out = run(fmt::format("nn energy --model {0}/m.h5 --config {0}/hw.yaml --data {0} --samples 1 "
                                          "--tstop 25e-6 --json --per-sample {0}/ps.csv",
                                          d),
                              rc);
  INFO(out);
  REQUIRE(rc == 0);
  for (const char* key : {"\"samples\": 1", "\"accuracy\"", "\"latency_mean_s\"", "\"latency_p99_s\"",
                          "\"energy_mean_j\"", "\"energy_p99_j\"", "\"energy_breakdown_j\": {\"crossbar\"", "\"macs\": 1184",
                          "\"tops\"", "\"tops_per_w\"", "\"accuracy_vs_sample_time\"", "\"shortest_sample_time_s\"",
                          "\"seconds\""})
    CHECK(out.find(key) != std::string::npos);
  std::ifstream f(dir / "ps.csv");
  std::string header, row;
  std::getline(f, header);
  std::getline(f, row);
  CHECK(header == "sample,label,class,latency_s,energy_j");
  CHECK(row.rfind("0,", 0) == 0);
  CHECK(run(fmt::format("nn energy --model {0}/m.h5 --config {0}/hw.yaml --data {0} --tstop -1", d), rc).find(
            "--tstop must be >= 0") != std::string::npos);
  CHECK(rc == 2);
  fs::remove_all(dir);
}
