// Analog-to-digital converter (see adc.hpp): transfer function, input-resistance stamps, code probes and
// SPICE export as the input resistors only (the codes are computed by anasim).
#include "devices/adc.hpp"
#include <cmath>
#include <fmt/format.h>
#include "devices/random.hpp"
#include "devices/registry.hpp"

namespace anasim {

namespace {
constexpr int kMaxInputs = 1 << 20;  // noise draw index = sample * kMaxInputs + input
}

Status validate_adc(const AdcSpec& s, std::string* param) {
  auto bad = [&](const char* p, std::string msg) {
    if (param) *param = p;
    return Status::input(std::move(msg));
  };
  if (param) param->clear();
  if (s.bits < 1 || s.bits > 30) return bad("bits", fmt::format("ADC bits must lie in 1..30, got {}", s.bits));
  if (!(s.vmax > s.vmin) || !std::isfinite(s.vmax) || !std::isfinite(s.vmin))
    return bad("vmax", fmt::format("ADC range needs finite vmin < vmax, got {} .. {} V", s.vmin, s.vmax));
  if (!(s.rin > 0)) return bad("rin", "ADC rin must be > 0 (infinite: no input stamp)");
  if (!(s.noise >= 0)) return bad("noise", "ADC noise must be >= 0");
  if (!std::isfinite(s.offset) || !std::isfinite(s.gain_error) || !(1 + s.gain_error > 0))
    return bad("gain_error", "ADC offset must be finite and gain_error > -1");
  return {};
}

double adc_noise_draw(const AdcSpec& s, std::uint64_t sample, int k) {
  return rnd::normal(s.seed, rnd::kAdcNoise, sample * kMaxInputs + static_cast<std::uint64_t>(k));
}

Adc::Adc(std::string name, SourceLoc loc, const AdcSpec& spec, std::vector<NodeId> inputs, NodeId ref)
    : Device(std::move(name), std::move(loc)), spec_(spec), in_(std::move(inputs)), ref_(ref) {
  spec_.seed = rnd::effective_seed(spec_.seed, this->name());
}

void Adc::declare(PatternBuilder& p) {
  uref_ = p.unknown(ref_);
  uin_.clear();
  for (NodeId n : in_) uin_.push_back(p.unknown(n));
  y_.assign(std::isfinite(spec_.rin) ? in_.size() : 0, AdmittanceStamp{});
  for (size_t k = 0; k < y_.size(); ++k) y_[k].declare(p, uin_[k], uref_);
}

void Adc::load(LoadContext& ctx) {
  for (const AdmittanceStamp& y : y_) y.stamp(ctx.A, 1.0 / spec_.rin);
}

void Adc::load_ac(AcLoadContext& ctx) {
  for (const AdmittanceStamp& y : y_) y.stamp(ctx.A, std::complex<double>(1.0 / spec_.rin));
}

void Adc::dc_paths(std::vector<NodePair>& out) const {
  if (!y_.empty())
    for (NodeId n : in_) out.emplace_back(n, ref_);
}

void Adc::probes(std::vector<std::pair<std::string, std::string>>& out) const {
  if (in_.size() == 1) out.emplace_back(fmt::format("code({})", name()), "");
  else
    for (size_t k = 0; k < in_.size(); ++k) out.emplace_back(fmt::format("code({}.{})", name(), k), "");
  if (spec_.energy_per_conversion > 0) out.emplace_back(fmt::format("energy({})", name()), "J");
}

void Adc::probe_values(const double* x, double, std::vector<double>& out) const {
  auto v = [x](UnknownIndex u) { return u.v < 0 ? 0.0 : x[u.v]; };
  const double vref = v(uref_);
  for (size_t k = 0; k < uin_.size(); ++k)
    out.push_back(static_cast<double>(adc_convert(spec_, v(uin_[k]) - vref, sample_, static_cast<int>(k))));
  if (spec_.energy_per_conversion > 0) out.push_back(spec_.energy_per_conversion * static_cast<double>(in_.size()));
  ++sample_;
}

const ParamTable& adc_params() {
  using S = AdcSpec;
  using P = ParamDecl;
  static const ParamTable t = {
      P("bits").def(8).range(1, 30).doc("resolution N").bind<&S::bits>(),
      P("vmin").unit("V").def(0).doc("input of code 0").bind<&S::vmin>(),
      P("vmax").unit("V").def(1).doc("input of code 2^N - 1").bind<&S::vmax>(),
      P("offset").unit("V").def(0).doc("input offset error").bind<&S::offset>(),
      P("gain_error").def(0).doc("relative gain error").bind<&S::gain_error>(),
      P("noise").unit("V").def(0).range(0, kInf).doc("comparator noise (std, per sample)").bind<&S::noise>(),
      P("rin").unit("ohm").def(1e12).range(0, kInf).doc("input resistance to ref (0 = infinite, no stamp)")
          .bind<&S::rin>(),
      P("energy_per_conversion").alias("energy").unit("J").def(0).range(0, kInf)
          .doc("energy per converted input (probe energy(<inst>))").bind<&S::energy_per_conversion>(),
      P("seed").def(0).range(0, 9007199254740992.0).doc("seed of the comparator noise (0 = from the instance name)")
          .bind<&S::seed>(),
  };
  return t;
}

namespace {

class AdcType : public DeviceType {
 public:
  AdcType() {
    key = "adc";
    long_name = "adc";
    description = "N-bit ADC sampling K node voltages (codes as probes code(<inst>[.k])) (YAML only)";
    pins = {"in...", "ref"};
    variadic_pins = true;
    params = adc_params();
  }

  static Status from_flat(const FlatDevice& fd, AdcSpec& s) {
    const ParamValues& p = fd.params;
    const std::string what = fmt::format("adc '{}'", fd.name);
    if (Status st = apply_params(p, s, what.c_str()); !st) return st;
    if (s.rin == 0) s.rin = kInf;  // rin 0 in a netlist: no input resistance
    std::string bad;
    if (Status st = validate_adc(s, &bad); !st) {
      const int idx = p.index_of(bad.empty() ? "bits" : bad);
      return Status::input(fmt::format("{}: {}", what, st.errors[0].message),
                           idx >= 0 && p.loc(idx).valid() ? p.loc(idx) : fd.loc);
    }
    if (fd.nodes.size() < 2 || fd.nodes.size() - 1 > static_cast<size_t>(kMaxInputs))
      return Status::input(fmt::format("adc '{}' needs the sampled input nodes followed by the reference node "
                                       "(2 to {} nodes), got {}", fd.name, kMaxInputs + 1, fd.nodes.size()),
                           fd.loc);
    return {};
  }

  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    AdcSpec s;
    if (Status e = from_flat(fd, s); !e) {
      st.merge(e);
      return nullptr;
    }
    std::vector<NodeId> in(fd.nodes.begin(), fd.nodes.end() - 1);
    return std::make_unique<Adc>(fd.name, fd.loc, s, std::move(in), fd.nodes.back());
  }

  // Input resistors only; the codes are anasim-side.
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    AdcSpec s;
    if (Status e = from_flat(fd, s); !e) return fmt::format("* adc {} not exported: {}", fd.name, e.errors[0].message);
    const size_t k_in = pins.size() - 1;
    std::string out = fmt::format("* adc {}: {} input(s), {} bits; codes are computed by anasim", fd.name, k_in, s.bits);
    if (std::isfinite(s.rin))
      for (size_t k = 0; k < k_in; ++k)
        out += fmt::format("\n{} {} {} {}", spice_instance_name("r", fmt::format("{}.in{}", fd.name, k)),
                           pins[k], pins.back(), s.rin);
    return out;
  }
};

}  // namespace

std::unique_ptr<DeviceType> make_adc_type() { return std::make_unique<AdcType>(); }

}  // namespace anasim
