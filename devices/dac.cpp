// Digital-to-analog converter (see dac.hpp): transfer function, stamps (ideal source or Norton equivalent
// of a source behind rout), probes code(<inst>) and energy(<inst>), and SPICE export as V source + R.
#include "devices/dac.hpp"
#include <cmath>
#include <fmt/format.h>
#include "devices/random.hpp"
#include "devices/registry.hpp"

namespace anasim {

Status validate_dac(const DacSpec& s, std::string* param) {
  auto bad = [&](const char* p, std::string msg) {
    if (param) *param = p;
    return Status::input(std::move(msg));
  };
  if (param) param->clear();
  if (s.bits < 1 || s.bits > 24) return bad("bits", fmt::format("DAC bits must lie in 1..24, got {}", s.bits));
  if (!(s.vmax > s.vmin) || !std::isfinite(s.vmax) || !std::isfinite(s.vmin))
    return bad("vmax", fmt::format("DAC range needs finite vmin < vmax, got {} .. {} V", s.vmin, s.vmax));
  const size_t codes = static_cast<size_t>(dac_max_code(s)) + 1;
  if (!s.inl.empty() && s.inl.size() != codes)
    return bad("inl", fmt::format("DAC inl lists one error per code: {} values for {} bits, got {}", codes, s.bits,
                                  s.inl.size()));
  if (!s.dnl.empty() && s.dnl.size() != codes - 1)
    return bad("dnl", fmt::format("DAC dnl lists one error per step: {} values for {} bits, got {}", codes - 1, s.bits,
                                  s.dnl.size()));
  if (!(s.rout >= 0) || !std::isfinite(s.rout)) return bad("rout", "DAC rout must be finite and >= 0");
  if (!(s.noise >= 0) || !(s.inl_sigma >= 0) || !(s.dnl_sigma >= 0))
    return bad("noise", "DAC noise, inl_sigma and dnl_sigma must be >= 0");
  return {};
}

double dac_output(const DacSpec& s, long code) {
  double e = s.inl.empty() ? 0.0 : s.inl[code];
  if (s.inl_sigma > 0) e += s.inl_sigma * rnd::normal(s.seed, rnd::kInl, code);
  if (!s.dnl.empty())
    for (long m = 0; m < code; ++m) e += s.dnl[m];
  if (s.dnl_sigma > 0)
    for (long m = 0; m < code; ++m) e += s.dnl_sigma * rnd::normal(s.seed, rnd::kDnl, m);
  return s.vmin + (static_cast<double>(code) + e) * dac_lsb(s);
}

double dac_noise(const DacSpec& s) { return s.noise > 0 ? s.noise * rnd::normal(s.seed, rnd::kDacNoise, 0) : 0.0; }

Dac::Dac(std::string name, SourceLoc loc, const DacSpec& spec, long code, NodeId out, NodeId ref)
    : Device(std::move(name), std::move(loc)), spec_(spec), code_(code), out_(out), ref_(ref) {
  spec_.seed = rnd::effective_seed(spec_.seed, this->name());
  v_ = dac_voltage(spec_, code_);
}

void Dac::allocate(Allocator& a) {
  if (spec_.rout == 0) br_ = a.add_branch(*this);
}

void Dac::declare(PatternBuilder& p) {
  const UnknownIndex uo = p.unknown(out_), ur = p.unknown(ref_);
  if (spec_.rout == 0) {
    b_.declare(p, uo, ur, br_);
  } else {
    y_.declare(p, uo, ur);
    i_.declare(p, ur, uo);
  }
}

void Dac::load(LoadContext& ctx) {
  const double v = v_ * ctx.srcfact;
  if (spec_.rout == 0) {
    b_.stamp_incidence(ctx.A);
    ctx.b[b_.rhs] += v;
  } else {
    y_.stamp(ctx.A, 1.0 / spec_.rout);
    i_.stamp(ctx.b, v / spec_.rout);
  }
}

void Dac::load_ac(AcLoadContext& ctx) {  // a DC source: no small-signal excitation
  if (spec_.rout == 0) b_.stamp_incidence(ctx.A);
  else y_.stamp(ctx.A, std::complex<double>(1.0 / spec_.rout));
}

void Dac::dc_paths(std::vector<NodePair>& out) const {
  if (spec_.rout > 0) out.emplace_back(out_, ref_);
}

void Dac::voltage_edges(std::vector<NodePair>& out) const {
  if (spec_.rout == 0) out.emplace_back(out_, ref_);
}

void Dac::probes(std::vector<std::pair<std::string, std::string>>& out) const {
  out.emplace_back(fmt::format("code({})", name()), "");
  if (spec_.energy_per_conversion > 0) out.emplace_back(fmt::format("energy({})", name()), "J");
}

void Dac::probe_values(const double*, double, std::vector<double>& out) const {
  out.push_back(static_cast<double>(code_));
  if (spec_.energy_per_conversion > 0) out.push_back(spec_.energy_per_conversion);
}

const ParamTable& dac_params() {
  using S = DacSpec;
  using P = ParamDecl;
  static const ParamTable t = {
      P("bits").def(8).range(1, 24).doc("resolution N").bind<&S::bits>(),
      P("vmin").unit("V").def(0).doc("output of code 0").bind<&S::vmin>(),
      P("vmax").unit("V").def(1).doc("output of code 2^N - 1").bind<&S::vmax>(),
      P("code").def(0).range(0, 16777215).doc("input code (integer)").bind<&DacInput::code>(),
      P("value").unit("V").def(0).doc("input value, quantized to the nearest code (instead of code)")
          .bind<&DacInput::value>(),
      P("inl").unit("LSB").kind(ParamKind::List).doc("per-code INL, 2^N values").bind<&S::inl>(),
      P("dnl").unit("LSB").kind(ParamKind::List).doc("per-step DNL, 2^N - 1 values").bind<&S::dnl>(),
      P("inl_sigma").unit("LSB").def(0).range(0, kInf).doc("random per-code INL (std)").bind<&S::inl_sigma>(),
      P("dnl_sigma").unit("LSB").def(0).range(0, kInf).doc("random per-step DNL (std)").bind<&S::dnl_sigma>(),
      P("noise").unit("V").def(0).range(0, kInf).doc("output noise (std, one draw per instance)").bind<&S::noise>(),
      P("rout").unit("ohm").def(0).range(0, kInf).doc("output resistance (0 = ideal)").bind<&S::rout>(),
      P("energy_per_conversion").alias("energy").unit("J").def(0).range(0, kInf)
          .doc("energy per conversion (probe energy(<inst>))").bind<&S::energy_per_conversion>(),
      P("seed").def(0).range(0, 9007199254740992.0).doc("seed of INL/DNL and noise (0 = from the instance name)")
          .bind<&S::seed>(),
  };
  return t;
}

namespace {

class DacType : public DeviceType {
 public:
  DacType() {
    key = "dac";
    supply = true;
    long_name = "dac";
    description = "N-bit DAC: static voltage source with INL/DNL, noise and output resistance";
    pins = {"out", "ref"};
    params = dac_params();
  }

  // Spec and code of a netlist DAC, errors located at the offending parameter.
  static Status from_flat(const FlatDevice& fd, DacSpec& s, long& code) {
    const ParamValues& p = fd.params;
    const std::string what = fmt::format("dac '{}'", fd.name);
    auto fail = [&](const char* name, std::string msg) {
      const int idx = p.index_of(name);
      return Status::input(fmt::format("{}: {}", what, msg), idx >= 0 && p.loc(idx).valid() ? p.loc(idx) : fd.loc);
    };
    DacInput in;
    if (Status st = apply_params(p, s, what.c_str()); !st) return st;
    if (Status st = apply_params(p, in, what.c_str()); !st) return st;
    std::string bad;
    if (Status st = validate_dac(s, &bad); !st) return fail(bad.empty() ? "bits" : bad.c_str(), st.errors[0].message);
    const bool has_code = p.has(p.index_of("code")), has_value = p.has(p.index_of("value"));
    if (has_code && has_value) return fail("value", "give either code or value, not both");
    if (has_value) {
      code = dac_quantize(s, in.value);
    } else {
      code = in.code;
      if (code > dac_max_code(s))
        return fail("code", fmt::format("code {} exceeds the largest {}-bit code {}", code, s.bits, dac_max_code(s)));
    }
    return {};
  }

  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    DacSpec s;
    long code = 0;
    if (Status e = from_flat(fd, s, code); !e) {
      st.merge(e);
      return nullptr;
    }
    return std::make_unique<Dac>(fd.name, fd.loc, s, code, fd.nodes[0], fd.nodes[1]);
  }

  // V source (the open-circuit voltage, noise included) in series with rout.
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    DacSpec s;
    long code = 0;
    if (Status e = from_flat(fd, s, code); !e)
      return fmt::format("* dac {} not exported: {}", fd.name, e.errors[0].message);
    const Dac d(fd.name, fd.loc, s, code, fd.nodes[0], fd.nodes[1]);
    const std::string& out = pins[0];
    const std::string& ref = pins[1];
    std::string head = fmt::format("* dac {}: {} bits, code {}", fd.name, s.bits, code);
    if (s.rout == 0) return fmt::format("{}\n{} {} {} dc {}", head, spice_instance_name("v", fd.name), out, ref, d.voltage());
    const std::string mid = fd.name + "_int";
    return fmt::format("{}\n{} {} {} dc {}\n{} {} {} {}", head, spice_instance_name("v", fd.name), mid, ref,
                       d.voltage(), spice_instance_name("r", fd.name), mid, out, s.rout);
  }
};

}  // namespace

std::unique_ptr<DeviceType> make_dac_type() { return std::make_unique<DacType>(); }

}  // namespace anasim
