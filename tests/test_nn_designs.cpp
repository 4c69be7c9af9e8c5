// Tests for the reference designs' hardware (data/examples/board_lm358.yaml, integrated_rram.yaml): the E96
// resistor series of a discrete board (hardware keys series, series_rmax in nn/hardware.cpp) and the component
// counts of a mapping (nn/energy.cpp's component_counts).
#include <doctest/doctest.h>
#include <cmath>
#include <string>
#include "nn/energy.hpp"
#include "nn/hardware.hpp"
#include "nn_test_support.hpp"

using namespace anasim;
using namespace anasim::nn;
using namespace anasim::nn_test;

namespace {

// True when r [ohm] is an E96 value (3 significant digits from the IEC 60063 table, any decade).
bool is_e96(double r) { return std::fabs(e96_nearest(r) / r - 1) < 1e-12; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("nn designs: E96 series values") {
  // Table values map to themselves in every decade; between them, the nearest in log R.
  for (double r : {1.0, 10.0, 1e3, 4.99e3, 97.6e3, 1e6, 0.499, 9.76e6}) CHECK(e96_nearest(r) == doctest::Approx(r));
  CHECK(e96_nearest(1015) == doctest::Approx(1020));   // 1015/1000 = 1.015 > 1020/1015 = 1.0049
  CHECK(e96_nearest(1009) == doctest::Approx(1000));
  CHECK(e96_nearest(9800) == doctest::Approx(9760));   // 9800/9760 < 10000/9800
  CHECK(e96_nearest(9900) == doctest::Approx(10000));
  // Over a fine log sweep of three decades the rounding error stays within half the largest step (the table's
  // 3-digit rounding makes some steps 2.9%) and the result is always a table value.
  double worst = 0;
  for (int k = 0; k <= 3000; ++k) {
    const double r = 100.0 * std::pow(10.0, k / 1000.0);
    const double e = e96_nearest(r);
    worst = std::max(worst, std::fabs(std::log(e / r)));
    CHECK(is_e96(e));
  }
  CHECK(worst < 0.015);
  CHECK(worst > 0.008);
}

TEST_CASE("nn designs: series conductances of a board") {
  HardwareConfig c = default_hardware_config();
  CHECK(c.series == CellSeries::None);  // defaults unchanged: conductances as mapped
  CHECK(series_conductance(c, 12.345e-6) == 12.345e-6);
  CHECK(series_resistance(c, 12.345e3) == 12.345e3);
  c.series = CellSeries::E96;
  c.gmin = 0;
  c.gmax = 1 / 10e3;
  c.series_rmax = 1e6;
  CHECK(series_conductance(c, 0.0) == 0.0);
  CHECK(series_conductance(c, 0.49e-6) == 0.0);                         // below half of 1/rmax: left open
  CHECK(series_conductance(c, 0.51e-6) == doctest::Approx(1e-6));       // rmax itself
  CHECK(series_conductance(c, 1 / 49.7e3) == doctest::Approx(1 / 49.9e3));
  CHECK(series_conductance(c, 1 / 9.9e3) == doctest::Approx(1 / 10e3));  // held at 1/gmax
  CHECK(series_conductance(c, 1e-3) == doctest::Approx(1 / 10e3));
  CHECK(series_resistance(c, 123.4e3) == doctest::Approx(124e3));
  // Nonuniform conductance steps: about 2.4% of g each, so a decade higher the step in S is about 10x larger
  // (1/10k - 1/10.2k against 1/97.6k - 1/100k: 7.97x).
  const double g1 = series_conductance(c, 1 / 100e3), g2 = series_conductance(c, 1 / 97.6e3);
  const double g3 = series_conductance(c, 1 / 10.2e3), g4 = series_conductance(c, 1 / 10e3);
  CHECK((g4 - g3) / (g2 - g1) == doctest::Approx((1 / 10e3 - 1 / 10.2e3) / (1 / 97.6e3 - 1 / 100e3)));
  CHECK((g4 - g3) / (g2 - g1) > 5);
}

TEST_CASE("nn designs: series keys in a hardware config") {
  HardwareConfig c;
  REQUIRE(parse_hardware_config("hardware:\n  gmin: 0\n  gmax: 100u\n  series: e96\n  series_rmax: 1meg\n", "hw.yaml",
                                c)
              .ok());
  CHECK(c.series == CellSeries::E96);
  CHECK(c.series_rmax == doctest::Approx(1e6));
  Status st = parse_hardware_config("hardware:\n  series: e96\n  levels: 16\n", "hw.yaml", c);
  REQUIRE(!st.ok());
  CHECK(contains(st.to_string(), "hw.yaml:3:3"));
  st = parse_hardware_config("hardware:\n  gmax: 100u\n  series: e96\n  series_rmax: 5k\n", "hw.yaml", c);
  REQUIRE(!st.ok());
  CHECK(contains(st.to_string(), "series_rmax"));
  st = parse_hardware_config("hardware:\n  series: e24\n", "hw.yaml", c);
  CHECK(contains(st.to_string(), "none or e96"));
}

TEST_CASE("nn designs: component counts and the series in a realized mapping") {
  const Mlp net = net_64_16_10();
  const MatrixRf x = code_inputs(32, 64, 5);
  HardwareConfig cfg = default_hardware_config();
  cfg.tile_rows = 48;
  cfg.tile_cols = 8;
  MappedNetwork map;
  REQUIRE(map_network(net, cfg, x, map).ok());
  HardwareInstance hw;
  realize(map, 1, 0, hw);
  ComponentCounts n = component_counts(hw);
  // 64-16-10 analog: 16 x (TIA, rectifier, inverter) + 10 TIAs; cells 2*(64+1) x 16 + 2*(16+1) x 10.
  CHECK(n.opamps == 58);
  CHECK(n.cells == 130 * 16 + 34 * 10);
  CHECK(n.cells_open == 0);  // gmin > 0: every cell conducts
  CHECK(n.resistors == 16 * 6 + 10);
  CHECK(n.diodes == 32);
  CHECK(n.dacs == 130 + 2);  // every row of layer 0, the two bias rows of layer 1
  CHECK(n.adcs == 10);

  cfg.mode = MappingMode::Hybrid;
  REQUIRE(map_network(net, cfg, x, map).ok());
  realize(map, 1, 0, hw);
  n = component_counts(hw);
  CHECK(n.opamps == 26);
  CHECK(n.resistors == 26);
  CHECK(n.diodes == 0);
  CHECK(n.dacs == 130 + 34);
  CHECK(n.adcs == 26);

  // E96 board: every cell is open or an E96 resistor within [1/gmax, series_rmax]; rf and r2 are E96 values.
  cfg.mode = MappingMode::Analog;
  cfg.gmin = 0;
  cfg.gmax = 1 / 10e3;
  cfg.series = CellSeries::E96;
  cfg.series_rmax = 1e6;
  REQUIRE(map_network(net, cfg, x, map).ok());
  realize(map, 1, 0, hw);
  n = component_counts(hw);
  CHECK(n.cells_open >= n.cells / 2);  // one of each differential pair carries no weight
  for (const LayerInstance& li : hw.layers) {
    for (const TileInstance& t : li.tiles)
      for (double g : t.g)
        if (g > 0) {
          CHECK(is_e96(1 / g));
          CHECK(1 / g >= 10e3 * (1 - 1e-12));
          CHECK(1 / g <= 1e6 * (1 + 1e-12));
        }
    CHECK(is_e96(li.res[kResRf]));
  }
  CHECK(is_e96(hw.layers[0].res[kResR2]));
}

TEST_CASE("nn designs: the reference designs load and map") {
  const Mlp net = net_64_16_10();
  const MatrixRf x = code_inputs(32, 64, 5);
  for (const char* f : {"board_lm358.yaml", "integrated_rram.yaml"}) {
    CAPTURE(f);
    HardwareConfig cfg;
    const Status st = load_hardware_config(std::string(ANASIM_SOURCE_DIR) + "/data/examples/" + f, cfg);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    CHECK(static_cast<int>(opamp_param(cfg, "level")) == 2);
    MappedNetwork map;
    REQUIRE(map_network(net, cfg, x, map).ok());
    CHECK(map.vhi > 0);
    CHECK(map.vlo < 0);
  }
}
