// Analog-to-digital converter: samples K node voltages (pins in_0 .. in_{K-1}, then ref) and reports N-bit
// codes as device probes "code(<inst>)" (K = 1) or "code(<inst>.<k>)" (k = 0..K-1), written to every
// analysis's results. YAML type "adc" (variadic pins). Electrically only its input resistances rin.
//
// Transfer (mid-tread, the inverse of the DAC's): lsb = (vmax - vmin) / (2^N - 1) and
//   code = clip(round((v * (1 + gain_error) + offset + noise * n - vmin) / lsb), 0, 2^N - 1)
// with v = v(in_k) - v(ref) and round half away from zero; codes outside the range clip to 0 / 2^N - 1.
// Comparator noise: a fresh gaussian draw n per input and per recorded sample (each op point, dc sweep point
// or transient timepoint written to the results), a pure function of (seed, sample number, input): the same
// seed and netlist give identical codes. Seed 0 (default) derives one from the instance name.
#pragma once
#include <cstdint>
#include <vector>
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"
#include "devices/quantizer.hpp"

namespace anasim {

struct AdcSpec {
  int bits = 8;                   // N, 1..30
  double vmin = 0.0;              // [V] input of code 0 (code centre)
  double vmax = 1.0;              // [V] input of code 2^N - 1 (> vmin)
  double offset = 0.0;            // [V] added to the input
  double gain_error = 0.0;        // relative: the input is scaled by 1 + gain_error
  double noise = 0.0;             // [V] comparator noise (std) per conversion
  double rin = 1e12;              // [ohm] input resistance to ref; kInf = no stamp
  double energy_per_conversion = 0.0;  // [J] per converted input; probe energy(<inst>) = K * this per sample
  std::uint64_t seed = 0;         // 0 = derived from the instance name by the device
};

// The adc device's parameter table, bound to AdcSpec (a netlist's rin 0 becomes kInf after apply_params).
const ParamTable& adc_params();

Status validate_adc(const AdcSpec& s, std::string* param = nullptr);
inline long adc_max_code(const AdcSpec& s) { return (1L << s.bits) - 1; }
inline double adc_lsb(const AdcSpec& s) { return (s.vmax - s.vmin) / static_cast<double>(adc_max_code(s)); }
// The comparator-noise draw n (standard normal) of input k at sample number `sample`, from s.seed as is.
double adc_noise_draw(const AdcSpec& s, std::uint64_t sample, int k);
// Code of input voltage v [V] for input k at sample number `sample` (noise drawn from s.seed as is). inl (nullptr,
// or 2^N values [LSB], static per-code INL): the threshold between codes k-1 and k moves from k - 0.5 to
// k - 0.5 + inl[k] LSB (with the thresholds in increasing order, the code is the number of them below the input);
// inl[0] is unused.
// The input after gain and offset [V] (before comparator noise) of input voltage v [V].
inline double adc_input(const AdcSpec& s, double v) { return v * (1.0 + s.gain_error) + s.offset; }
// Code of x, the input after gain, offset and noise [V], without INL (vectorizes in loops).
inline long adc_quantize(const AdcSpec& s, double x) {
  return quantize_code((x - s.vmin) / adc_lsb(s), static_cast<double>(adc_max_code(s)));
}
// Inline: the NN evaluation converts every output of every image.
inline long adc_convert(const AdcSpec& s, double v, std::uint64_t sample, int k, const double* inl = nullptr) {
  double x = adc_input(s, v);
  if (s.noise > 0) x += s.noise * adc_noise_draw(s, sample, k);
  long code = adc_quantize(s, x);
  if (!inl) return code;
  const double u = (x - s.vmin) / adc_lsb(s);  // [LSB]
  const long kmax = adc_max_code(s);
  while (code > 0 && u < static_cast<double>(code) - 0.5 + inl[code]) --code;
  while (code < kmax && u >= static_cast<double>(code) + 0.5 + inl[code + 1]) ++code;
  return code;
}

class Adc : public Device {
 public:
  // inputs: the K sampled nodes; ref: the reference node. `spec` must be valid.
  Adc(std::string name, SourceLoc loc, const AdcSpec& spec, std::vector<NodeId> inputs, NodeId ref);
  const AdcSpec& spec() const { return spec_; }  // spec().seed is the seed used
  int inputs() const { return static_cast<int>(in_.size()); }

  void declare(PatternBuilder& p) override;
  void load(LoadContext& ctx) override;
  void load_ac(AcLoadContext& ctx) override;
  void dc_paths(std::vector<NodePair>& out) const override;
  void probes(std::vector<std::pair<std::string, std::string>>& out) const override;
  // Converts every input at x; each call is one sample (advances the noise sequence).
  void probe_values(const double* x, double t, std::vector<double>& out) const override;

 private:
  AdcSpec spec_;
  std::vector<NodeId> in_;
  NodeId ref_;
  std::vector<UnknownIndex> uin_;
  UnknownIndex uref_;
  std::vector<AdmittanceStamp> y_;  // 1/rin per input (empty if rin is infinite)
  mutable std::uint64_t sample_ = 0;  // samples converted so far
};

}  // namespace anasim
