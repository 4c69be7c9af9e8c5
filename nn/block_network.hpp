// The conductance network of one row block of a layer's arrays, with the ports the port reduction reduces onto:
// built once here for the fast evaluator's preparation (nn/fast_prepare.cpp) and compensated programming
// (nn/program.cpp).
#pragma once
#include <vector>
#include "nn/hardware.hpp"
#include "nn/port_reduction.hpp"

namespace anasim::nn::fast {

// One tile of a row block: spec (spec.rows = the block's rows; its conductances are not read), the conductances
// g (spec.rows x spec.cols, row-major [S]) and the first layer column it covers.
struct BlockTile {
  const CrossbarSpec* spec = nullptr;
  const std::vector<double>* g = nullptr;
  int col0 = 0;
};

// The port network of the row block of physical rows r0 .. r1-1 of a layer with `outputs` columns, made of `tiles`
// (the block's column tiles, in order). Ports: the block's rows in order (port i = physical row r0 + i), then every
// column of the layer (port r1 - r0 + j = column j). A DAC-driven row (physical row >= first_dac) with
// cfg.dac_rout > 0 has its pin inside, behind dac_rout from its port (the port is the DAC source). cap: as
// add_tile (wire capacitances per node [F], when the specs carry cwire).
PortNetwork row_block_network(const HardwareConfig& cfg, int r0, int r1, int first_dac, int outputs,
                              const std::vector<BlockTile>& tiles, std::vector<double>* cap = nullptr);

}  // namespace anasim::nn::fast
