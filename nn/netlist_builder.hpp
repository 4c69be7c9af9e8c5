// The full mapped circuit of one input as a netlist: every crossbar tile (all wire nodes), DAC, TIA, rectifier,
// inverter and ADC as a device of the ordinary catalog. Used by the MNA reference (`nn eval --reference`) and the
// exports (`nn export-spice`, YAML).
//
// Nodes (layer l, neuron j, physical row p): v<l>_<p> DAC-driven row, c<l>_<j> TIA summing node, y<l>_<j> TIA
// output; rectifier layers also s<l>_<j> (rectifier summing node), a<l>_<j> (rectifier op-amp output), h<l>_<j>
// (ReLU output = row 2j of layer l+1), t<l>_<j> (inverter summing node), hn<l>_<j> (-h = row 2j+1 of layer l+1).
// Devices: dac<l>_<p>, xb<l>_<rt>_<ct>, utia/urect/uinv<l>_<j> (op-amps), rf/r1/r2/rl/ri1/ri2<l>_<j>,
// d1/d2<l>_<j>, adc<l>, in<l>_<j> (read-noise current sources, only with read_noise > 0).
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "engine/elaborate.hpp"
#include "nn/hardware.hpp"

namespace anasim::nn {

// Node and device names of the layer outputs, per layer and neuron.
struct NetlistNames {
  std::vector<std::vector<std::string>> tia_in, tia_out;     // c, y
  std::vector<std::vector<std::string>> rect_out, inv_out;   // h, hn (rectifier layers; else empty)
  std::vector<std::vector<std::string>> dacs;                // DAC device names, in LayerInstance::row_dacs order
};

// DAC input codes of every layer for one sample: codes[l] has `inputs` entries for DAC-driven layers (layer 0:
// the input; hybrid layers: requantized ADC codes of layer l-1), and is empty for analog layers.
using LayerCodes = std::vector<std::vector<long>>;

// DAC codes of a network input row x (values in [0, 1]) for layer 0.
std::vector<long> input_codes(const LayerMapping& lm, const float* x);

// The network transient of one input (build_netlist with a TranSpec): the input DACs step at t = 0 from the codes
// `from` to the sample's codes. Each DAC becomes a voltage source "dac<l>_<p>" with a PWL edge of hardware key
// dac_tr (0 -> dac_tr) between the open-circuit outputs of the two codes (dac_voltage: INL and noise draw
// included; the DAC has no dynamics of its own beyond this edge), behind "rdac<l>_<p>" = dac_rout when > 0.
// Op-amps get supply pins on nodes vcc/vee driven by the sources "vrailp"/"vrailn" (the part's vpos/vneg), so
// that every joule is delivered by an explicit source; crossbars get hardware key cwire per wire segment.
// The analysis is one .tran 0..tstop with output step and largest step tmax, power probes on.
struct TranSpec {
  LayerCodes from;      // codes before the step; empty = reset state (input DACs at code 0, bias DACs as always)
  double tstop = 0;     // [s] end of the run (> 0)
  double tmax = 0;      // [s] largest time step (> 0)
  // Tolerances of the transient (Newton and truncation error; the DC netlist's are below): its truncation error ten
  // times tighter than the fast path's (FastTranOptions::reltol 1e-3), its Newton the fast path's solves' reltol
  // (1e-4) with 1e-7 V for their 100 uV, so that the engine is the reference the fast path is held to (energy 1e-3,
  // settling time 1e-2). Measured (24-8-4 analog test network, 20 images, 2026-12-02):
  // energies and settling times within 7.5e-5 of a run at the DC netlist's 1e-7 and 1e-10 V (1e-5 and 1e-8 V: 4.9e-5),
  // with 2.0x fewer time points (1.8x).
  double reltol = 1e-4;
  double vntol = 1e-7;  // [V]
};

// Builds the circuit of `hw` for one sample (`sample` selects the read-noise draw). The netlist has one .op
// analysis and Newton tolerances reltol 1e-7, vntol 1e-10 V, abstol 1e-15 A (Newton converges
// quadratically: the final iterate is far more accurate, ~1e-11 relative in the tests; tighter settings stall on
// rounding noise at the rectifier op-amp outputs). With `tran` the netlist is the transient one (see TranSpec).
Status build_netlist(const HardwareInstance& hw, const LayerCodes& codes, std::uint64_t sample, FlatNetlist& fn,
                     NetlistNames& names, const TranSpec* tran = nullptr);

// The netlist as anasim YAML (devices with their parameters, the diode model, options, the op analysis).
std::string netlist_yaml(const FlatNetlist& fn);

}  // namespace anasim::nn
