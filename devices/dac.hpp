// Digital-to-analog converter: an N-bit static voltage source between pins (out, ref) with per-code INL/DNL,
// output noise and output resistance. YAML/SPICE type "dac"; the transfer functions are also used directly
// by the neural-network layer.
//
// Transfer: lsb = (vmax - vmin) / (2^N - 1), so code 0 is vmin and code 2^N - 1 is vmax (ideally), and
//   v(out) - v(ref) = vmin + (code + e(code)) * lsb + noise * n        (open circuit, behind rout)
//   e(code) = inl[code] + sum_{m < code} dnl[m] + inl_sigma * n_inl(code) + sum_{m < code} dnl_sigma * n_dnl(m)
// in LSB: `inl` lists the error of each of the 2^N codes, `dnl` the width error of each of the 2^N - 1 steps
// (dnl[m] = step from code m to m+1, minus 1 LSB); both may be given and add up. The random parts are
// gaussian, drawn per code/step from the seed. A real `value` [V] is quantized to the nearest code
// (round half away from zero) and clipped to 0 .. 2^N - 1.
// Noise: the DAC holds one static code, so there is one noise draw n per device instance, fixed when the
// circuit is built (all analyses of a run see the same draw; op/dc/tran alike). Change `seed` to draw again.
// Seeds: 0 (default) derives one from the instance name (instances differ, runs repeat; rnd::effective_seed).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"
#include "devices/quantizer.hpp"

namespace anasim {

struct DacSpec {
  int bits = 8;                   // N, 1..24
  double vmin = 0.0;              // [V] ideal output of code 0
  double vmax = 1.0;              // [V] ideal output of code 2^N - 1 (> vmin)
  std::vector<double> inl;        // empty or size 2^N: per-code error [LSB]
  std::vector<double> dnl;        // empty or size 2^N - 1: per-step width error [LSB]
  double inl_sigma = 0.0;         // [LSB] random per-code INL (std)
  double dnl_sigma = 0.0;         // [LSB] random per-step DNL (std)
  double noise = 0.0;             // [V] output noise (std), one draw per instance
  double rout = 0.0;              // [ohm] output resistance (0 = ideal voltage source)
  double energy_per_conversion = 0.0;  // [J] reported as the probe energy(<inst>)
  std::uint64_t seed = 0;         // 0 = derived from the instance name by the device
};

// The input of a netlist DAC (the dac device's lines besides the converter's).
struct DacInput {
  long code = 0;                  // input code, 0 .. 2^N - 1
  double value = 0.0;             // [V] input value, quantized to the nearest code (given instead of code)
};

// The dac device's parameter table: lines bound to DacSpec and to DacInput.
const ParamTable& dac_params();

// Size checks and ranges; *param names the offending parameter.
Status validate_dac(const DacSpec& s, std::string* param = nullptr);
inline long dac_max_code(const DacSpec& s) { return (1L << s.bits) - 1; }
inline double dac_lsb(const DacSpec& s) { return (s.vmax - s.vmin) / static_cast<double>(dac_max_code(s)); }
// Nearest code to value [V] (halves away from zero, as std::round), clipped to 0 .. 2^N - 1; NaN gives 0. Inline:
// it quantizes every pixel of every image.
inline long dac_quantize(const DacSpec& s, double value) {
  return quantize_code((value - s.vmin) / dac_lsb(s), static_cast<double>(dac_max_code(s)));
}
// Static (noise-free) output of a code [V], INL/DNL included; O(code) with DNL, else O(1). The random draws
// use s.seed as is.
double dac_output(const DacSpec& s, long code);
// The instance's output-noise draw [V] (noise * n, from s.seed).
double dac_noise(const DacSpec& s);
// Open-circuit output of a code with the instance's noise draw [V]: dac_output + dac_noise, what the device drives.
inline double dac_voltage(const DacSpec& s, long code) { return dac_output(s, code) + dac_noise(s); }

class Dac : public Device {
 public:
  // nodes: out, ref. `spec` must be valid and code in range.
  Dac(std::string name, SourceLoc loc, const DacSpec& spec, long code, NodeId out, NodeId ref);
  const DacSpec& spec() const { return spec_; }  // spec().seed is the seed used
  long code() const { return code_; }
  double voltage() const { return v_; }  // open-circuit output v(out) - v(ref) [V], noise included
  // Changes the code (0 .. 2^N - 1) between solves, e.g. to apply the next input to a built circuit.
  void set_code(long code) {
    code_ = code;
    v_ = dac_voltage(spec_, code_);
  }

  void allocate(Allocator& a) override;
  void declare(PatternBuilder& p) override;
  void load(LoadContext& ctx) override;
  void load_ac(AcLoadContext& ctx) override;
  void dc_paths(std::vector<NodePair>& out) const override;
  void voltage_edges(std::vector<NodePair>& out) const override;
  void probes(std::vector<std::pair<std::string, std::string>>& out) const override;
  void probe_values(const double* x, double t, std::vector<double>& out) const override;

 private:
  DacSpec spec_;
  long code_;
  double v_;          // [V]
  NodeId out_, ref_;
  UnknownIndex br_;   // branch current (rout = 0)
  BranchStamp b_;
  AdmittanceStamp y_;  // 1/rout (rout > 0)
  CurrentStamp i_;     // v_/rout from ref through the device to out (rout > 0)
};

}  // namespace anasim
