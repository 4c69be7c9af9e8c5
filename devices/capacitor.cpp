// Linear capacitor C between p and n, as ngspice 39's: a value or a .model (type c: CJ per area and CJSW per
// perimeter with L, W, NARROW, SHORT, or a default CAP), multipliers m and scale, temperature coefficients tc1,
// tc2 about the model's TNOM; optional initial voltage ic [V] (used with uic).
#include <cmath>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
// Instance lines (ngspice 39 cap.c); empty = not given.
struct CapacitorParams {
  std::optional<double> c;       // [F]
  std::optional<double> ic;      // [V] initial voltage (with uic)
  std::optional<double> l, w;    // [m] (default: 0 and the model's defw)
  double m = 1, scale = 1;
  std::optional<double> tc1, tc2;
  std::optional<double> temp;    // [C]
  double dtemp = 0;              // [K]
};

// .model <name> c(...) lines.
struct CapacitorModel {
  std::optional<double> cap;     // [F] default capacitance
  double cj = 0;                 // [F/m^2] bottom capacitance per area
  double cjsw = 0;               // [F/m] sidewall capacitance per length
  double defw = 10e-6;           // [m] default width
  double narrow = 0, shrt = 0;   // [m] width and length reductions
  std::optional<double> tc1, tc2;
  std::optional<double> tnom;    // [C]
};

// The capacitance at the nominal temperature and what moves it with temperature.
struct CapacitorValues {
  double c = 0;                  // [F] before m, scale and temperature
  double m = 1, scale = 1;
  double tc1 = 0, tc2 = 0;       // [1/K], [1/K^2]
  double tnom = std::nan("");    // [C] NaN: the circuit's
  double temp = std::nan("");    // [C] NaN: the circuit's
  double dtemp = 0;              // [K]
  std::optional<double> ic;      // [V]
};

// Instance over model, capacitance from CJ and CJSW when neither gives a value (ngspice 39 captemp.c).
Status capacitor_values(const FlatDevice& fd, CapacitorValues& v) {
  CapacitorParams in;
  CapacitorModel md;
  // The instance is named in messages only when one is made (see resistor_values); apply_params cannot fail on
  // these structs of reals, so its label is the type.
  auto what = [&] { return fmt::format("capacitor '{}'", fd.name); };
  if (Status e = apply_params(fd.params, in, "capacitor"); !e) return e;
  if (Status e = apply_params(fd.model, md, "capacitor"); !e) return e;
  if (in.c) v.c = *in.c;
  else if (md.cap) v.c = *md.cap;
  else if (fd.model_name.empty())
    return Status::input(fmt::format("{} needs a capacitance: a value, c=, or a .model", what()), fd.loc);
  else {
    const double w = in.w.value_or(md.defw) - md.narrow, l = in.l.value_or(0.0) - md.shrt;  // ngspice: no defl
    v.c = md.cj * w * l + md.cjsw * 2 * (l + w);
  }
  if (!(v.c >= 0) || !std::isfinite(v.c))
    return Status::input(fmt::format("{} has capacitance {} F; it must be >= 0", what(), v.c), fd.loc);
  v.m = in.m;
  v.scale = in.scale;
  v.tc1 = in.tc1 ? *in.tc1 : md.tc1.value_or(0.0);
  v.tc2 = in.tc2 ? *in.tc2 : md.tc2.value_or(0.0);
  if (md.tnom) v.tnom = *md.tnom;
  if (in.temp) v.temp = *in.temp;
  v.dtemp = in.dtemp;
  v.ic = in.ic;
  return {};
}

class Capacitor : public Device {
 public:
  Capacitor(const FlatDevice& fd, const CapacitorValues& v)
      : Device(fd.name, fd.loc), c_(v.c), p_(fd.nodes[0]), n_(fd.nodes[1]), v_(v), ic_(v.ic.value_or(0.0)),
        has_ic_(v.ic.has_value()) {}
  // c * factor * scale * m, factor = 1 + tc1 dT + tc2 dT^2 (ngspice 39 captemp.c, capload.c); c exactly at the
  // defaults.
  void set_temperature(const Temperature& t) override {
    const double temp = (std::isnan(v_.temp) ? t.temp : v_.temp + Temperature::kCtoK) + v_.dtemp;
    const double tnom = std::isnan(v_.tnom) ? t.tnom : v_.tnom + Temperature::kCtoK;
    const double d = temp - tnom;
    c_ = v_.c * (1.0 + v_.tc1 * d + v_.tc2 * d * d) * v_.scale * v_.m;
  }
  void allocate(Allocator& a) override { state_ = a.add_states(1); }
  void declare(PatternBuilder& p) override {
    up_ = p.unknown(p_);
    un_ = p.unknown(n_);
    y_.declare(p, up_, un_);
    i_.declare(p, up_, un_);
  }
  void load(LoadContext& ctx) override {
    Capacitor::load_rhs(ctx);
    if (ctx.transient()) y_.stamp(ctx.A, ctx.ag0 * c_);
  }
  RhsSplit rhs_split() const override { return RhsSplit::Rhs; }
  // The charge and, in a transient, the companion current source.
  void load_rhs(LoadContext& ctx) override {
    const double r = ctx.linear_charge(state_, c_, ctx.v(up_) - ctx.v(un_));
    if (ctx.transient()) i_.stamp(ctx.b, r);
  }
  void update_states(LoadContext& ctx) override { ctx.q[state_] = c_ * (ctx.v(up_) - ctx.v(un_)); }
  bool linear_charges(std::vector<LinearCharge>& out) const override {
    out.push_back({state_, c_, up_, un_, i_.a, i_.b});
    return true;
  }
  void init_uic(LoadContext& ctx) override {
    const double v = has_ic_ ? ic_ : ctx.v(up_) - ctx.v(un_);
    ctx.q[state_] = c_ * v;
  }
  void load_ac(AcLoadContext& ctx) override { y_.stamp(ctx.A, std::complex<double>(0.0, ctx.omega * c_)); }
 private:
  // What a transient step reads (load_rhs, update_states) first, next to the base class: two cache lines per
  // capacitor instead of four (the 256x256 crossbar transient streams 132,352 of them twice per step).
  UnknownIndex up_, un_;
  double c_;  // [F] at the circuit temperature
  int state_ = 0;
  CurrentStamp i_;
  AdmittanceStamp y_;
  NodeId p_, n_;
  CapacitorValues v_;
  double ic_;  // [V]
  bool has_ic_;
};

class CapacitorType : public DeviceType {
 public:
  CapacitorType() {
    key = "c";
    long_name = "capacitor";
    description = "capacitor (value or .model c: cj, cjsw, l, w, narrow, short; tc1, tc2; m, scale)";
    pins = {"p", "n"};
    positional = {"c"};
    model_type = "c";
    model_optional = true;
    spice_model_card = false;  // spice_line writes the capacitance the model gives
    using I = CapacitorParams;
    using M = CapacitorModel;
    using P = ParamDecl;
    params = {
        P("c").alias("capacitance").unit("F").def(std::nan("")).range(0, kInf).doc("capacitance")
            .bind<&I::c>(),
        P("ic").unit("V").def(0).doc("initial voltage (with uic)").bind<&I::ic>(),
        P("l").unit("m").def(0).above(0).doc("length (default 0)").bind<&I::l>(),
        P("w").unit("m").def(0).above(0).doc("width (default: the model's defw)").bind<&I::w>(),
        P("m").def(1).above(0).doc("parallel multiplier").bind<&I::m>(),
        P("scale").def(1).above(0).doc("capacitance scale factor").bind<&I::scale>(),
        P("tc1").unit("1/K").def(0).doc("first-order temperature coefficient (over the model's)").bind<&I::tc1>(),
        P("tc2").unit("1/K^2").def(0).doc("second-order temperature coefficient (over the model's)")
            .bind<&I::tc2>(),
        P("temp").unit("C").def(0).range(-273.15, kInf).doc("instance temperature (default: circuit's)")
            .bind<&I::temp>(),
        P("dtemp").unit("K").def(0).doc("instance temperature offset from the circuit's").bind<&I::dtemp>(),
        P("bv_max").unit("V").def(1e99).doc("maximum voltage").no_effect("ngspice only warns when it is exceeded"),
    };
    model_params = {
        P("cap").unit("F").def(std::nan("")).range(0, kInf).doc("default capacitance").bind<&M::cap>(),
        P("cj").alias("cox").unit("F/m^2").def(0).range(0, kInf).doc("bottom capacitance per area").bind<&M::cj>(),
        P("cjsw").alias("capsw").unit("F/m").def(0).range(0, kInf).doc("sidewall capacitance per length")
            .bind<&M::cjsw>(),
        P("defw").alias("w").unit("m").def(10e-6).above(0).doc("default width").bind<&M::defw>(),
        P("defl").alias("l").unit("m").def(0).range(0, kInf).doc("default length")
            .no_effect("ngspice 39 ignores it: an instance without l has length 0"),
        P("narrow").unit("m").def(0).doc("width reduction").bind<&M::narrow>(),
        P("short").unit("m").def(0).doc("length reduction").bind<&M::shrt>(),
        P("tc1").unit("1/K").def(0).doc("first-order temperature coefficient").bind<&M::tc1>(),
        P("tc2").unit("1/K^2").def(0).doc("second-order temperature coefficient").bind<&M::tc2>(),
        P("tnom").unit("C").def(std::nan("")).range(-273.15, kInf)
            .doc("parameter measurement temperature (default: .options tnom)").bind<&M::tnom>(),
        P("bv_max").unit("V").def(1e99).doc("maximum voltage").no_effect("ngspice only warns when it is exceeded"),
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    CapacitorValues v;
    if (Status e = capacitor_values(fd, v); !e) {
      st.merge(e);
      return nullptr;
    }
    return std::make_unique<Capacitor>(fd, v);
  }
  // The capacitance the instance and model give, then the multipliers and temperature coefficients (no model card).
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    CapacitorValues v;
    capacitor_values(fd, v);  // elaboration and create() have checked it
    std::string s = spice_instance_name(key, fd.name);
    for (const auto& n : pins) s += " " + n;
    s += fmt::format(" {:.15g}", v.c);
    if (v.ic) s += fmt::format(" ic={:.15g}", *v.ic);
    if (v.m != 1) s += fmt::format(" m={:.15g}", v.m);
    if (v.scale != 1) s += fmt::format(" scale={:.15g}", v.scale);
    if (v.tc1 != 0) s += fmt::format(" tc1={:.15g}", v.tc1);
    if (v.tc2 != 0) s += fmt::format(" tc2={:.15g}", v.tc2);
    if (!std::isnan(v.temp)) s += fmt::format(" temp={:.15g}", v.temp);
    if (v.dtemp != 0) s += fmt::format(" dtemp={:.15g}", v.dtemp);
    return s;
  }
};
}  // namespace

std::unique_ptr<DeviceType> make_capacitor_type() { return std::make_unique<CapacitorType>(); }

}  // namespace anasim
