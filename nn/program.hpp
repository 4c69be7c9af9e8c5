// IR-drop-aware programming (hardware key `program: compensated`): the target conductances of every row block are
// chosen so that the exact port transfer of its arrays (cells, wires, driver and sink resistances, DAC output
// resistances) from the row ports to the column ports equals the intended differential weights.
//
// Method. The arrays are linear: with the column ports held at the TIAs' virtual ground and the row ports at the
// DAC sources (behind dac_rout) or at the previous layer's op-amp outputs, the column currents are
// I = G_eff(g) v exactly, for every input (the IR drop depends on the inputs, this transfer does not). Each
// (input, neuron) pair of cells carries one unknown u = g+ - g- (the other cell of the pair at gmin); the targets
// are the ideal mapping's differences W = g_target(+) - g_target(-). Per iteration the exact port admittance of
// every row block is computed by the port reduction (nn/port_reduction.hpp, symbolic analysis reused), and u moves
// by the error over the cell's own attenuation (G_eff of the cell over its conductance: a diagonal Newton step),
// the steps combined over the last iterates by Anderson acceleration (a multisecant update of the diagonal model
// from the exact solves already made: fewer exact solves for the same residual).
// When the compensated values would leave the window [gmin, gmax], the layer's scale is lowered (the TIA feedback
// resistor rises by the same factor, so every voltage of the mapping stays) until they fit; levels are applied at
// the end and the residual reported after them. Deterministic (no draws; blocks are independent).
// Contract: compensate_targets leaves every LayerMapping field as map_network made it except g_target, scale and
// rf, and fills map.program (one LayerProgram per layer).
#pragma once
#include <vector>
#include "nn/hardware.hpp"

namespace anasim::nn {

// Calibration inputs of one layer in network units, row-major (images x inputs).
struct LayerInputs {
  int images = 0, inputs = 0;
  std::vector<double> a;
};

// Compensates the targets of every layer of `map` in place (see the file comment). `inputs`: per layer, the
// calibration images' inputs to that layer (float forward pass), used for the output-referred residual.
Status compensate_targets(MappedNetwork& map, const std::vector<LayerInputs>& inputs);

// The exact port transfer of layer l's arrays programmed with `g` (physical rows x outputs, row-major [S]):
// geff (outputs x physical rows, row-major [S]) = current from the arrays into each column port per volt on each
// row port, every other port at 0 V (the column ports at virtual ground). Row ports are the DAC sources behind
// dac_rout on DAC-driven rows, else the row pins.
Status layer_transfer(const MappedNetwork& map, int l, const std::vector<double>& g, std::vector<double>& geff);

}  // namespace anasim::nn
