// Tests for nn/hardware.cpp and nn/netlist_builder.cpp: the hardware config (defaults, YAML, errors, sweeps),
// the weight mapping (differential pairs, tiles, calibration) and the netlist of the mapped circuit.
#include <doctest/doctest.h>
#include "nn/hardware.hpp"

using namespace anasim;
using namespace anasim::nn;

TEST_CASE("nn mapping: default hardware config") {
  const HardwareConfig c = default_hardware_config();
  CHECK(c.gmin == 1e-6);
  CHECK(c.gmax == 100e-6);
  CHECK(c.tile_rows == 256);
}
