// Resistor (see resistor.hpp): parameter tables, the resistance from an instance and its model, and the stamps.
#include "devices/resistor.hpp"
#include <cmath>
#include <optional>
#include <fmt/format.h>
#include "devices/registry.hpp"

namespace anasim {

namespace {
// Instance lines (ngspice 39 res.c); empty = not given.
struct ResistorInstance {
  std::optional<double> r;       // [ohm]
  std::optional<double> ac;      // [ohm] AC resistance
  std::optional<double> l, w;    // [m] length and width (default: the model's l and defw)
  double m = 1, scale = 1;
  std::optional<double> tc1, tc2, tce;
  std::optional<double> temp;    // [C]
  double dtemp = 0;              // [K]
};

// .model <name> r(...) lines; empty = not given.
struct ResistorModel {
  double rsh = 0;                // [ohm/square] sheet resistance
  double narrow = 0, shrt = 0;   // [m] width and length reductions (each side)
  double defw = 10e-6, defl = 10e-6;  // [m] default instance width and length
  std::optional<double> r;       // [ohm] default resistance
  std::optional<double> tc1, tc2, tce;
  std::optional<double> tnom;    // [C]
};

const char* const kNoise = "affects only noise analysis";
const char* const kBvMax = "ngspice only warns when it is exceeded";

// The values of fd: instance over model, resistance from the sheet resistance when L * W * RSH > 0 (as ngspice's
// RESupdate_conduct). Errors located at fd.loc.
Status resistor_values(const FlatDevice& fd, ResistorValues& v) {
  ResistorInstance in;
  ResistorModel md;
  // The instance is named in messages only when one is made (formatting the name of every resistor of a deck of
  // 10^5 cost 30% of building them); apply_params cannot fail on these structs of reals, so its label is the type.
  auto what = [&] { return fmt::format("resistor '{}'", fd.name); };
  if (Status e = apply_params(fd.params, in, "resistor"); !e) return e;
  if (Status e = apply_params(fd.model, md, "resistor"); !e) return e;
  const double l = in.l.value_or(md.defl), w = in.w.value_or(md.defw);
  if (in.r) v.r = *in.r;
  else if (l * w * md.rsh > 0) v.r = (l - 2 * md.shrt) / (w - 2 * md.narrow) * md.rsh;
  else if (md.r) v.r = *md.r;
  else
    return Status::input(fmt::format("{} needs a resistance: a value, r=, or a .model with r or rsh", what()), fd.loc);
  if (!(v.r > 0) || !std::isfinite(v.r))
    return Status::input(fmt::format("{} has resistance {} ohm; it must be > 0 (check l, w, narrow and short of its "
                                     "model)", what(), v.r), fd.loc);
  v.r_ac = in.ac.value_or(v.r);
  v.m = in.m;
  v.scale = in.scale;
  v.tc1 = in.tc1 ? *in.tc1 : md.tc1.value_or(0.0);
  v.tc2 = in.tc2 ? *in.tc2 : md.tc2.value_or(0.0);
  v.tce_given = in.tce || md.tce;
  v.tce = in.tce ? *in.tce : md.tce.value_or(0.0);
  if (md.tnom) v.tnom = *md.tnom;
  if (in.temp) v.temp = *in.temp;
  v.dtemp = in.dtemp;
  return {};
}

class ResistorType : public DeviceType {
 public:
  ResistorType() {
    key = "r";
    long_name = "resistor";
    description = "resistor (value or .model r: rsh, l, w, narrow, short; tc1, tc2, tce; m, scale, ac)";
    pins = {"p", "n"};
    positional = {"r"};
    model_type = "r";
    model_optional = true;
    spice_model_card = false;  // spice_line writes the resistance the model gives
    using I = ResistorInstance;
    using M = ResistorModel;
    using P = ParamDecl;
    params = {
        P("r").alias("resistance").unit("ohm").def(std::nan("")).above(0)
            .doc("resistance").bind<&I::r>(),
        P("ac").unit("ohm").def(0).above(0).doc("AC resistance (default: r)").bind<&I::ac>(),
        P("l").unit("m").def(0).above(0).doc("length (default: the model's l)").bind<&I::l>(),
        P("w").unit("m").def(0).above(0).doc("width (default: the model's defw)").bind<&I::w>(),
        P("m").def(1).above(0).doc("parallel multiplier").bind<&I::m>(),
        P("scale").def(1).above(0).doc("resistance scale factor").bind<&I::scale>(),
        P("tc1").alias("tc").unit("1/K").def(0).doc("first-order temperature coefficient (over the model's)")
            .bind<&I::tc1>(),
        P("tc2").unit("1/K^2").def(0).doc("second-order temperature coefficient (over the model's)").bind<&I::tc2>(),
        P("tce").unit("%/K").def(0).doc("exponential temperature coefficient: r * 1.01^(tce dT)").bind<&I::tce>(),
        P("temp").unit("C").def(0).range(-273.15, kInf).doc("instance temperature (default: circuit's)")
            .bind<&I::temp>(),
        P("dtemp").unit("K").def(0).doc("instance temperature offset from the circuit's").bind<&I::dtemp>(),
        P("noisy").alias("noise").def(1).range(0, 1).doc("thermal noise on (1) or off (0)").no_effect(kNoise),
        P("bv_max").unit("V").def(1e99).doc("maximum voltage").no_effect(kBvMax),
    };
    model_params = {
        P("rsh").unit("ohm").def(0).range(0, kInf).doc("sheet resistance (per square)").bind<&M::rsh>(),
        P("narrow").alias("dw").unit("m").def(0).doc("width reduction, each side").bind<&M::narrow>(),
        P("short").alias("dlr").unit("m").def(0).doc("length reduction, each end").bind<&M::shrt>(),
        P("defw").alias("w").unit("m").def(10e-6).above(0).doc("default width").bind<&M::defw>(),
        P("l").unit("m").def(10e-6).above(0).doc("default length").bind<&M::defl>(),
        P("r").alias("res").unit("ohm").def(std::nan("")).above(0).doc("default resistance").bind<&M::r>(),
        P("tc1").alias("tc1r").unit("1/K").def(0).doc("first-order temperature coefficient").bind<&M::tc1>(),
        P("tc2").alias("tc2r").unit("1/K^2").def(0).doc("second-order temperature coefficient").bind<&M::tc2>(),
        P("tce").unit("%/K").def(0).doc("exponential temperature coefficient").bind<&M::tce>(),
        P("tnom").unit("C").def(std::nan("")).range(-273.15, kInf)
            .doc("parameter measurement temperature (default: .options tnom)").bind<&M::tnom>(),
        P("kf").def(0).doc("flicker noise coefficient").no_effect(kNoise),
        P("af").def(1).doc("flicker noise exponent").no_effect(kNoise),
        P("lf").def(1).doc("flicker noise length exponent").no_effect(kNoise),
        P("wf").def(1).doc("flicker noise width exponent").no_effect(kNoise),
        P("ef").def(1).doc("flicker noise frequency exponent").no_effect(kNoise),
        P("bv_max").unit("V").def(1e99).doc("maximum voltage").no_effect(kBvMax),
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    ResistorValues v;
    if (Status e = resistor_values(fd, v); !e) {
      st.merge(e);
      return nullptr;
    }
    return std::make_unique<Resistor>(fd, v);
  }
  // The resistance the instance and model give, then the multipliers and temperature coefficients (no model card).
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    ResistorValues v;
    resistor_values(fd, v);  // elaboration and create() have checked it
    std::string s = spice_instance_name(key, fd.name);
    for (const auto& n : pins) s += " " + n;
    s += fmt::format(" {:.15g}", v.r);
    if (v.r_ac != v.r) s += fmt::format(" ac={:.15g}", v.r_ac);
    if (v.m != 1) s += fmt::format(" m={:.15g}", v.m);
    if (v.scale != 1) s += fmt::format(" scale={:.15g}", v.scale);
    if (v.tce_given) s += fmt::format(" tce={:.15g}", v.tce);
    if (v.tc1 != 0) s += fmt::format(" tc1={:.15g}", v.tc1);
    if (v.tc2 != 0) s += fmt::format(" tc2={:.15g}", v.tc2);
    if (!std::isnan(v.temp)) s += fmt::format(" temp={:.15g}", v.temp);
    if (v.dtemp != 0) s += fmt::format(" dtemp={:.15g}", v.dtemp);
    return s;
  }
};
}  // namespace

Resistor::Resistor(const FlatDevice& fd, const ResistorValues& v)
    : Device(fd.name, fd.loc), p_(fd.nodes[0]), n_(fd.nodes[1]), v_(v), g_(1.0 / v.r), g_ac_(1.0 / v.r_ac) {}

// ngspice 39 RESupdate_conduct: conductance m / (r * factor * scale), factor from tc1/tc2 or tce over
// dT = instance temperature - TNOM. At the defaults (m = scale = 1, no coefficients) g = 1 / r exactly.
void Resistor::set_temperature(const Temperature& t) {
  const double temp = (std::isnan(v_.temp) ? t.temp : v_.temp + Temperature::kCtoK) + v_.dtemp;
  const double tnom = std::isnan(v_.tnom) ? t.tnom : v_.tnom + Temperature::kCtoK;
  const double d = temp - tnom;
  const double factor = v_.tce_given ? std::pow(1.01, v_.tce * d) : (v_.tc2 * d + v_.tc1) * d + 1.0;
  g_ = v_.m / (v_.r * factor * v_.scale);
  g_ac_ = v_.m / (v_.r_ac * factor * v_.scale);
}

void Resistor::declare(PatternBuilder& p) {
  up_ = p.unknown(p_);
  un_ = p.unknown(n_);
  y_.declare(p, up_, un_);
}

void Resistor::load(LoadContext& ctx) { y_.stamp(ctx.A, g_); }
void Resistor::load_ac(AcLoadContext& ctx) { y_.stamp(ctx.A, std::complex<double>(g_ac_)); }

std::unique_ptr<DeviceType> make_resistor_type() { return std::make_unique<ResistorType>(); }

}  // namespace anasim
