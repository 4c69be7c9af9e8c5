// Operational amplifier "opamp" (YAML type opamp; pins inp inn out, optionally vcc vee) at three levels:
//   level 0  ideal nullor: v(inp) = v(inn), the output current is a free branch unknown;
//   level 1  behavioural: gain a0, offset vos, input resistance rin, output resistance rout and a smooth
//            (tanh) saturation to the rails minus headroom;
//   level 2  macro model: level 1 plus a dominant pole (gbw), slew-rate limit (sr), output current limit
//            (ilim), input bias currents (ib), common-mode rejection (cmrr) and quiescent current (iq).
// A built-in parts table (model: ua741, lm358, opa1611) sets datasheet defaults; instance parameters override
// them. The equations are written once as templates and evaluated on dual numbers (value and gradient, for
// the Newton stamps) and on expression text (the ngspice B sources of the SPICE export).
#include <array>
#include <cmath>
#include <string>
#include <fmt/format.h>
#include "devices/opamp_model.hpp"
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {

using OpParams = opamp_model::Params;

// Instance and .model parameters share one table (an instance value overrides the model's).
const ParamTable& opamp_params() {
  using M = OpParams;
  using P = ParamDecl;
  static const ParamTable t = {
      P("level").def(2).range(0, 2).doc("0 ideal nullor, 1 behavioural, 2 macro model").bind<&M::level>(),
      P("a0").unit("V/V").def(1e5).range(1, kInf).doc("open-loop DC gain (levels 1, 2)").bind<&M::a0>(),
      P("gbw").unit("Hz").def(1e6).above(0).doc("gain-bandwidth product (level 2)").bind<&M::gbw>(),
      P("sr").unit("V/us").def(1.0).above(0).doc("slew rate (level 2)").bind<&M::sr>(),
      P("vos").unit("V").def(0).doc("input offset voltage, added to v(inp) (levels 1, 2)").bind<&M::vos>(),
      P("ib").unit("A").def(0).doc("bias current into each input, negative = out of the pins (level 2)")
          .bind<&M::ib>(),
      P("rin").unit("ohm").def(kInf).above(0).doc("differential input resistance, inf = none (levels 1, 2)")
          .bind<&M::rin>(),
      P("rout").unit("ohm").def(1.0).above(0).doc("open-loop output resistance (levels 1, 2)").bind<&M::rout>(),
      P("ilim").unit("A").def(kInf).above(0).doc("output current limit, inf = none (level 2)").bind<&M::ilim>(),
      P("cmrr").unit("dB").def(kInf).range(0, kInf).doc("common-mode rejection ratio, inf = none (level 2)")
          .bind<&M::cmrr>(),
      P("iq").unit("A").def(0).range(0, kInf).doc("quiescent current from vcc to vee (level 2; without supply pins "
                                                   "drawn from the internal rails, in the power probes only)")
          .bind<&M::iq>(),
      P("headroom_hi").unit("V").def(0).range(0, kInf).doc("output swing limit below the positive rail (levels 1, 2)")
          .bind<&M::hd_hi>(),
      P("headroom_lo").unit("V").def(0).range(0, kInf).doc("output swing limit above the negative rail (levels 1, 2)")
          .bind<&M::hd_lo>(),
      P("vpos").unit("V").def(15).doc("positive rail when there are no supply pins").bind<&M::vpos>(),
      P("vneg").unit("V").def(-15).doc("negative rail when there are no supply pins").bind<&M::vneg>(),
  };
  return t;
}

// Built-in parts: datasheet typical values at 25 C. `rout` is not tabulated in any of these datasheets
// (only as a curve, if at all); the values marked "assumed" are typical open-loop output resistances.
struct Part {
  const char* name;
  double a0, gbw, sr, vos, ib, rin, rout, ilim, cmrr, iq, hd_hi, hd_lo;
};
const Part kParts[] = {
    // TI uA741 (SLOS094): AVD 200 V/mV, B1 1 MHz, SR 0.5 V/us, VIO 1 mV, IIB 80 nA, ri 2 Mohm, ro 75 ohm,
    // short-circuit output current IOS +-25 mA, CMRR 90 dB, ICC 1.7 mA, VOM +-14 V at +-15 V (RL >= 10 k).
    {"ua741", 2e5, 1e6, 0.5, 1e-3, 80e-9, 2e6, 75, 25e-3, 90, 1.7e-3, 1.0, 1.0},
    // TI LM358 (SLOS068): AVD 100 V/mV, B1 0.7 MHz, SR 0.3 V/us, VIO 3 mV, IIB -20 nA (PNP inputs: out of
    // the pins), short-circuit IOS +-40 mA, CMRR 80 dB, ICC 0.7 mA for two amplifiers at 5 V, VOH = VCC - 1.5 V,
    // VOL 5 mV; ZID 10 Mohm from the LM358B table (not given for LM358); rout 50 ohm assumed.
    {"lm358", 1e5, 0.7e6, 0.3, 3e-3, -20e-9, 10e6, 50, 40e-3, 80, 0.35e-3, 1.5, 0.005},
    // TI OPA1611 (SBOS450), fast precision bipolar part: AOL 130 dB, GBW 40 MHz (G = +1), SR 27 V/us,
    // VOS 100 uV, IB 60 nA, ZID 20 kohm, output drive +-30 mA, CMRR 120 dB, IQ 3.6 mA, swing to 0.6 V
    // from the rails (2 kohm load); rout 40 ohm assumed.
    {"opa1611", 3.16e6, 40e6, 27, 100e-6, 60e-9, 20e3, 40, 30e-3, 120, 3.6e-3, 0.6, 0.6},
};

// Shape constants, coefficients and the scalar helpers live in opamp_model.hpp (shared with nn/fast_eval.cpp).
using opamp_model::kHs;
using opamp_model::kVs;
using opamp_model::kIsplit;
using opamp_model::kCpole;
using opamp_model::Coeffs;
using opamp_model::limit_tanh_arg;
using opamp_model::from_vcc;

// Controlling unknowns of the nonlinear currents: inputs, supplies, pole node, output.
enum { cInp, cInn, cVcc, cVee, cP, cOut, kNc };
// Pin position (in the netlist's node list: inp inn out vcc vee) of controlling unknown k.
constexpr int pin_of(int k) { return k == cInp ? 0 : k == cInn ? 1 : k == cOut ? 2 : k == cVcc ? 3 : 4; }

// ---- value types the equations are evaluated on -------------------------------------------------

// Forward-mode dual number: value and gradient with respect to the kNc controlling unknowns.
struct Dual {
  double v = 0;
  std::array<double, kNc> d{};
  Dual() = default;
  Dual(double c) : v(c) {}
  static Dual var(double value, int k) {
    Dual x(value);
    x.d[k] = 1;
    return x;
  }
};
Dual operator+(const Dual& a, const Dual& b) {
  Dual r(a.v + b.v);
  for (int k = 0; k < kNc; ++k) r.d[k] = a.d[k] + b.d[k];
  return r;
}
Dual operator-(const Dual& a, const Dual& b) {
  Dual r(a.v - b.v);
  for (int k = 0; k < kNc; ++k) r.d[k] = a.d[k] - b.d[k];
  return r;
}
Dual operator*(const Dual& a, const Dual& b) {
  Dual r(a.v * b.v);
  for (int k = 0; k < kNc; ++k) r.d[k] = a.d[k] * b.v + a.v * b.d[k];
  return r;
}
Dual operator/(const Dual& a, const Dual& b) {
  Dual r(a.v / b.v);
  for (int k = 0; k < kNc; ++k) r.d[k] = (a.d[k] - r.v * b.d[k]) / b.v;
  return r;
}
// f(x) with f(x.v) = fv and f'(x.v) = df.
Dual chain(const Dual& x, double fv, double df) {
  Dual r(fv);
  for (int k = 0; k < kNc; ++k) r.d[k] = df * x.d[k];
  return r;
}
// ln(1 + e^x), without overflow.
Dual softplus(const Dual& x) {
  const double e = std::exp(-std::fabs(x.v));
  const double sig = x.v >= 0 ? 1 / (1 + e) : e / (1 + e);
  return chain(x, std::max(x.v, 0.0) + std::log1p(e), sig);
}
Dual sqrt(const Dual& x) {
  const double s = std::sqrt(x.v);
  return chain(x, s, 0.5 / s);
}

// Expression text for an ngspice B source, with constant folding.
struct Sym {
  std::string s;
  bool is_const = false;
  double c = 0;
  Sym(double value) : s(value < 0 ? fmt::format("({:.17g})", value) : fmt::format("{:.17g}", value)),
                      is_const(true), c(value) {}
  explicit Sym(std::string text) : s(std::move(text)) {}
};
Sym operator+(const Sym& a, const Sym& b) {
  if (a.is_const && b.is_const) return Sym(a.c + b.c);
  if (a.is_const && a.c == 0) return b;
  if (b.is_const && b.c == 0) return a;
  return Sym("(" + a.s + "+" + b.s + ")");
}
Sym operator-(const Sym& a, const Sym& b) {
  if (a.is_const && b.is_const) return Sym(a.c - b.c);
  if (b.is_const && b.c == 0) return a;
  if (a.is_const && a.c == 0) return Sym("(-" + b.s + ")");
  return Sym("(" + a.s + "-" + b.s + ")");
}
Sym operator*(const Sym& a, const Sym& b) {
  if (a.is_const && b.is_const) return Sym(a.c * b.c);
  if ((a.is_const && a.c == 0) || (b.is_const && b.c == 0)) return Sym(0.0);
  if (a.is_const && a.c == 1) return b;
  if (b.is_const && b.c == 1) return a;
  return Sym("(" + a.s + "*" + b.s + ")");
}
Sym operator/(const Sym& a, const Sym& b) {
  if (a.is_const && b.is_const) return Sym(a.c / b.c);
  if (b.is_const && b.c == 1) return a;
  return Sym("(" + a.s + "/" + b.s + ")");
}
Sym softplus(const Sym& x) {
  if (x.is_const) return Sym(std::max(x.c, 0.0) + std::log1p(std::exp(-std::fabs(x.c))));
  return Sym("(uramp(" + x.s + ")+ln(1+exp(-abs(" + x.s + "))))");
}
Sym sqrt(const Sym& x) { return x.is_const ? Sym(std::sqrt(x.c)) : Sym("sqrt(" + x.s + ")"); }
Sym plain_tanh(const Sym& x, int) { return x.is_const ? Sym(std::tanh(x.c)) : Sym("tanh(" + x.s + ")"); }

// ---- the model equations, for T = Dual or Sym; th(x, slot) is tanh (slot: its limiting state) ------


template <class T> struct Pins {
  T inp, inn, vcc, vee, p, out;  // [V]; vcc/vee are the vpos/vneg constants without supply pins
};

// Output swing limits [V].
template <class T> void swing(const Coeffs& c, const Pins<T>& x, T& vhi, T& vlo) {
  vhi = x.vcc - T(c.hd_hi);
  vlo = x.vee + T(c.hd_lo);
}

// Differential input after offset and (level 2) common-mode error, referred to the swing centre vmid [V].
template <class T> T vdiff(const Coeffs& c, const Pins<T>& x, const T& vmid) {
  T vd = x.inp - x.inn + T(c.vos);
  if (c.level >= 2 && c.kcm != 0) vd = vd + T(c.kcm) * (T(0.5) * (x.inp + x.inn) - vmid);
  return vd;
}

// Level 1: current into `out` [A]: (vt - v(out)) / rout with vt = vmid + vhalf tanh(a0 vd / vhalf).
template <class T, class Th> T level1_iout(const Coeffs& c, const Pins<T>& x, Th&& th) {
  T vhi(0.0), vlo(0.0);
  swing(c, x, vhi, vlo);
  const T vmid = T(0.5) * (vhi + vlo);
  const T vhalf = T(kHs) * softplus(T(0.5 / kHs) * (vhi - vlo));  // = (vhi - vlo) / 2 unless the rails collapse
  const T vt = vmid + vhalf * th(T(c.a0) * vdiff(c, x, vmid) / vhalf, 0);
  return (vt - x.out) / T(c.rout);
}

// Level 2: net current into the pole node except the capacitor's [A]: the input stage (tanh-limited
// transconductance, at most imax = sr * C), the gain-setting leak to vmid, and the rail clamp.
template <class T, class Th> T level2_ipole(const Coeffs& c, const Pins<T>& x, Th&& th) {
  T vhi(0.0), vlo(0.0);
  swing(c, x, vhi, vlo);
  const T vmid = T(0.5) * (vhi + vlo);
  const T stage = T(c.imax) * th(vdiff(c, x, vmid) / T(c.vsr), 0);
  const T leak = (x.p - vmid) / T(c.r1);
  const T clamp = T(c.gcl) * (softplus((x.p - vhi) / T(kVs)) - softplus((vlo - x.p) / T(kVs)));
  return stage - leak - clamp;
}

// Level 2: current into `out` [A] through rout, smoothly limited to +-ilim.
template <class T, class Th> T level2_iout(const Coeffs& c, const Pins<T>& x, Th&& th) {
  if (!std::isfinite(c.ilim)) return (x.p - x.out) / T(c.rout);
  return T(c.ilim) * th((x.p - x.out) / T(c.rout * c.ilim), 1);
}


// ---- the device ---------------------------------------------------------------------------------

// A current i(x) from node a through the device to node b, linearised at the iterate x0 as
// i(x0) + sum_k g_k (x_k - x0_k): one transconductance per controlling unknown plus a constant current.
struct LinearisedCurrent {
  std::array<TransconductanceStamp, kNc> g;
  CurrentStamp i;
  std::array<double, kNc> grad{};  // [S] at the last load (the small-signal model)
  void declare(PatternBuilder& pb, UnknownIndex a, UnknownIndex b, const std::array<UnknownIndex, kNc>& ctl) {
    for (int k = 0; k < kNc; ++k) g[k].declare(pb, a, b, ctl[k], UnknownIndex());
    i.declare(pb, a, b);
  }
  void load(LoadContext& ctx, const Dual& f, const std::array<double, kNc>& x0) {
    grad = f.d;
    double ieq = f.v;
    for (int k = 0; k < kNc; ++k) {
      g[k].stamp(ctx.A, grad[k]);
      ieq -= grad[k] * x0[k];
    }
    i.stamp(ctx.b, ieq);
  }
  void load_ac(std::complex<double>* A) const {
    for (int k = 0; k < kNc; ++k) g[k].stamp(A, std::complex<double>(grad[k]));
  }
};

class Opamp : public Device {
 public:
  Opamp(const FlatDevice& fd, const Coeffs& c) : Device(fd.name, fd.loc), c_(c) {
    for (int k : {cInp, cInn, cOut, cVcc, cVee})
      if (pin_of(k) < static_cast<int>(fd.nodes.size())) node_[k] = fd.nodes[pin_of(k)];
  }

  bool nonlinear() const override { return c_.level > 0; }

  void allocate(Allocator& al) override {
    if (c_.level == 0) br_ = al.add_branch(*this);
    if (c_.level == 2) {
      node_[cP] = al.add_internal_node(*this, "p");
      state_ = al.add_states(1);
    }
  }

  void declare(PatternBuilder& pb) override {
    for (int k = 0; k < kNc; ++k) u_[k] = pb.unknown(node_[k]);
    const UnknownIndex gnd;
    if (c_.level == 0) {
      pb.entry(u_[cOut], br_, &out_br_);
      pb.entry(br_, u_[cInp], &br_inp_);
      pb.entry(br_, u_[cInn], &br_inn_);
      return;
    }
    if (std::isfinite(c_.rin)) rin_.declare(pb, u_[cInp], u_[cInn]);
    if (c_.supplied) {
      out_vcc_.declare(pb, u_[cVcc], u_[cOut], u_);
      out_vee_.declare(pb, u_[cVee], u_[cOut], u_);
    } else {
      out_gnd_.declare(pb, gnd, u_[cOut], u_);
    }
    if (c_.level == 2) {
      pole_.declare(pb, gnd, u_[cP], u_);
      cap_y_.declare(pb, u_[cP], gnd);
      cap_i_.declare(pb, u_[cP], gnd);
      ib_inp_.declare(pb, u_[cInp], gnd);
      ib_inn_.declare(pb, u_[cInn], gnd);
      iq_.declare(pb, u_[cVcc], u_[cVee]);
    }
  }

  void load(LoadContext& ctx) override {
    if (c_.level == 0) {
      ctx.A[out_br_] += 1;  // the branch current leaves `out` into the device
      ctx.A[br_inp_] += 1;  // branch equation: v(inp) - v(inn) = 0
      ctx.A[br_inn_] -= 1;
      return;
    }
    std::array<double, kNc> x0;
    for (int k = 0; k < kNc; ++k) x0[k] = ctx.v(u_[k]);
    Pins<Dual> x{Dual::var(x0[cInp], cInp), Dual::var(x0[cInn], cInn),
                 c_.supplied ? Dual::var(x0[cVcc], cVcc) : Dual(c_.vpos),
                 c_.supplied ? Dual::var(x0[cVee], cVee) : Dual(c_.vneg),
                 Dual::var(x0[cP], cP), Dual::var(x0[cOut], cOut)};
    // tanh with its argument limited against the previous iterate (not on the first iteration of an
    // operating point, which starts from the iterate as given); the tangent at the limited point stands in
    // for the function at the actual argument.
    auto th = [&](const Dual& a, int slot) {
      bool limited = false;
      const double xl = ctx.init_junctions || !ctx.limit_tanh ? a.v : limit_tanh_arg(a.v, xold_[slot], limited);
      const double t = std::tanh(xl), s = 1 - t * t;
      if (limited && std::fabs(std::tanh(a.v) - t) > 1e-12) ctx.noncon = true;
      xold_[slot] = xl;
      Dual r = chain(a, t, s);
      r.v = t + s * (a.v - xl);
      return r;
    };
    if (std::isfinite(c_.rin)) rin_.stamp(ctx.A, 1 / c_.rin);
    Dual io;
    if (c_.level == 1) {
      io = level1_iout(c_, x, th);
    } else {
      pole_.load(ctx, level2_ipole(c_, x, th), x0);
      const double q = kCpole * x0[cP];
      const double ic = ctx.ddt(state_, q);
      if (ctx.transient()) {
        cap_y_.stamp(ctx.A, ctx.ag0 * kCpole);
        cap_i_.stamp(ctx.b, ic - ctx.ag0 * q);
      }
      ib_inp_.stamp(ctx.b, ctx.srcfact * c_.ib);
      ib_inn_.stamp(ctx.b, ctx.srcfact * c_.ib);
      if (c_.supplied) iq_.stamp(ctx.b, ctx.srcfact * c_.iq);
      io = level2_iout(c_, x, th);
    }
    if (c_.supplied) {
      const Dual ip = from_vcc(io);
      out_vcc_.load(ctx, ip, x0);
      out_vee_.load(ctx, io - ip, x0);
    } else {
      out_gnd_.load(ctx, io, x0);
    }
  }

  void init_uic(LoadContext& ctx) override {
    if (c_.level == 2) ctx.q[state_] = kCpole * ctx.v(u_[cP]);
  }

  void load_ac(AcLoadContext& ctx) override {
    using C = std::complex<double>;
    if (c_.level == 0) {
      ctx.A[out_br_] += 1;
      ctx.A[br_inp_] += 1;
      ctx.A[br_inn_] -= 1;
      return;
    }
    if (std::isfinite(c_.rin)) rin_.stamp(ctx.A, C(1 / c_.rin));
    if (c_.supplied) {
      out_vcc_.load_ac(ctx.A);
      out_vee_.load_ac(ctx.A);
    } else {
      out_gnd_.load_ac(ctx.A);
    }
    if (c_.level == 2) {
      pole_.load_ac(ctx.A);
      cap_y_.stamp(ctx.A, C(0.0, ctx.omega * kCpole));
    }
  }

  void dc_paths(std::vector<NodePair>& out) const override {
    if (c_.level == 0) {
      out.emplace_back(node_[cOut], NodeId());
      return;
    }
    out.emplace_back(node_[cOut], c_.supplied ? node_[cVcc] : NodeId());
    if (c_.supplied) out.emplace_back(node_[cOut], node_[cVee]);
    if (std::isfinite(c_.rin)) out.emplace_back(node_[cInp], node_[cInn]);
    if (c_.level == 2) out.emplace_back(node_[cP], NodeId());
  }
  void voltage_edges(std::vector<NodePair>& out) const override {
    if (c_.level == 0) out.emplace_back(node_[cInp], node_[cInn]);  // the nullator
  }

  // Without supply pins the rails vpos/vneg are inside the device: they deliver the quiescent current (level 2)
  // across the rail span and the output current, split between the rails as with supply pins (from_vcc).
  bool has_internal_supply() const override { return !c_.supplied; }
  double internal_supply_power(const double* x) const override {
    if (c_.supplied) return 0.0;
    double io;  // [A] current the device drives into `out`
    if (c_.level == 0) {
      io = -x[br_.v];
    } else {
      auto v = [&](int k) { return Dual(u_[k].is_ground() ? 0.0 : x[u_[k].v]); };
      const Pins<Dual> p{v(cInp), v(cInn), Dual(c_.vpos), Dual(c_.vneg), v(cP), v(cOut)};
      auto th = [](const Dual& a, int) {
        const double t = std::tanh(a.v);
        return chain(a, t, 1 - t * t);
      };
      io = (c_.level == 1 ? level1_iout(c_, p, th) : level2_iout(c_, p, th)).v;
    }
    return opamp_model::rail_power(c_.level == 2 ? c_.iq : 0.0, c_.vpos, c_.vneg, io);
  }

 private:
  Coeffs c_;
  std::array<NodeId, kNc> node_{};     // ground where absent (supplies, pole node below level 2)
  std::array<UnknownIndex, kNc> u_{};
  UnknownIndex br_;                    // level 0: output current [A], leaving `out` into the device
  Offset out_br_ = 0, br_inp_ = 0, br_inn_ = 0;
  int state_ = 0;                      // level 2: pole capacitor charge [C]
  std::array<double, 2> xold_{};       // last (limited) tanh arguments: input stage, output current limit
  AdmittanceStamp rin_, cap_y_;
  CurrentStamp cap_i_, ib_inp_, ib_inn_, iq_;
  LinearisedCurrent pole_, out_gnd_, out_vcc_, out_vee_;
};

// The instance's parameters: the model's (part or table defaults), then the instance's given values over them.
Status op_params(const FlatDevice& fd, OpParams& p) {
  const std::string what = fmt::format("op-amp '{}'", fd.name);
  if (Status st = apply_params(fd.model, p, what.c_str()); !st) return st;
  if (Status st = apply_given_params(fd.params, p, what.c_str()); !st) return st;
  p.supplied = fd.nodes.size() == 5;
  return {};
}

Coeffs coeffs(const FlatDevice& fd) {
  OpParams p;
  op_params(fd, p);  // checked by create() first
  return opamp_model::coeffs(p);
}

class OpampType : public DeviceType {
 public:
  OpampType() {
    key = "opamp";
    long_name = "op-amp";
    description = "operational amplifier: level 0 ideal, 1 behavioural, 2 macro model; "
                  "model: ua741, lm358, opa1611 (YAML only; exported as ngspice primitives)";
    pins = {"inp", "inn", "out", "vcc", "vee"};
    variadic_pins = true;
    model_type = "opamp";
    model_optional = true;
    spice_model_card = false;
    params = opamp_params();
    model_params = opamp_params();
  }

  bool builtin_model(const std::string& name, ParamValues& model) const override {
    for (const Part& p : kParts) {
      if (name != p.name) continue;
      const std::pair<const char*, double> values[] = {
          {"a0", p.a0},     {"gbw", p.gbw},   {"sr", p.sr},     {"vos", p.vos},       {"ib", p.ib},
          {"rin", p.rin},   {"rout", p.rout}, {"ilim", p.ilim}, {"cmrr", p.cmrr},     {"iq", p.iq},
          {"headroom_hi", p.hd_hi},           {"headroom_lo", p.hd_lo}};
      for (const auto& [name, v] : values) {
        const int i = model.index_of(name);
        model.value[i] = v;
        model.given[i] = 1;
      }
      return true;
    }
    return false;
  }
  std::vector<std::string> builtin_model_names() const override {
    std::vector<std::string> names;
    for (const Part& p : kParts) names.push_back(p.name);
    return names;
  }

  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    if (fd.nodes.size() != 3 && fd.nodes.size() != 5) {
      st.merge(Status::input(fmt::format("op-amp '{}' needs 3 nodes (inp inn out) or 5 (inp inn out vcc vee), got {}",
                                         fd.name, fd.nodes.size()),
                             fd.loc));
      return nullptr;
    }
    const int li = fd.params.index_of("level");
    const double level = fd.params.has(li) ? fd.params[li] : fd.model.table ? fd.model[li] : model_params[li].def;
    if (level != 0 && level != 1 && level != 2) {  // before apply_params: a clearer message than "an integer"
      st.merge(Status::input(fmt::format("op-amp '{}': level must be 0, 1 or 2, got {}", fd.name, level), fd.loc));
      return nullptr;
    }
    OpParams p;
    if (Status e = op_params(fd, p); !e) {
      st.merge(e);
      return nullptr;
    }
    if (p.level > 0 && !(p.rout > 0)) {
      st.merge(Status::input(fmt::format("op-amp '{}': rout must be > 0 at level {} (use level 0 for an ideal "
                                         "output)", fd.name, p.level), fd.loc));
      return nullptr;
    }
    return std::make_unique<Opamp>(fd, opamp_model::coeffs(p));
  }

  // ngspice primitives with the same equations: the level 0 nullor as a 0 V source whose current is
  // cancelled at the inputs (F) and delivered to the output (F); levels 1, 2 as B sources (plus R, C, I).
  // Internal nodes are "<name>_<suffix>". Without supply pins the rails are written as V sources (nodes
  // <name>_vp, <name>_vn) that deliver what the device draws from them (internal_supply_power): the quiescent
  // current between them (level 2) and the output current, split as with supply pins (level 0: drawn to ground,
  // the nullor's output stays an F source), so ngspice's sources deliver the energy anasim reports.
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    const std::string& nm = fd.name;
    if (fd.nodes.size() != 3 && fd.nodes.size() != 5) return fmt::format("* op-amp {}: bad node count", nm);
    const Coeffs c = coeffs(fd);
    auto node = [&](int k) { return pins[pin_of(k)]; };
    auto el = [&](const char* letter, const char* suffix) { return spice_instance_name(letter, nm + "_" + suffix); };
    auto volt = [&](const std::string& n) { return n == "0" ? Sym(0.0) : Sym("v(" + n + ")"); };
    std::vector<std::string> lines;
    if (c.level == 0) {
      const std::string vz = el("v", "z");
      lines.push_back(fmt::format("{} {} {} dc 0", vz, node(cInp), node(cInn)));
      lines.push_back(fmt::format("{} {} {} {} -1", el("f", "c"), node(cInp), node(cInn), vz));
      lines.push_back(fmt::format("{} 0 {} {} 1", el("f", "o"), node(cOut), vz));
      if (!c.supplied) {  // the rails deliver the output current: measured as the voltage of <name>_io (1 ohm)
        rails(fd, c, lines);
        lines.push_back(fmt::format("{} 0 {}_io {} 1", el("f", "io"), nm, vz));
        lines.push_back(fmt::format("{} {}_io 0 1", el("r", "io"), nm));
        const Sym iov("v(" + nm + "_io)"), ip = from_vcc(iov);
        lines.push_back(fmt::format("{} {}_vp 0 i = {}", el("b", "rp"), nm, ip.s));
        lines.push_back(fmt::format("{} {}_vn 0 i = {}", el("b", "rn"), nm, (iov - ip).s));
      }
      return fmt::format("{}", fmt::join(lines, "\n"));
    }
    const std::string pnode = nm + "_p";
    Pins<Sym> x{volt(node(cInp)), volt(node(cInn)), c.supplied ? volt(node(cVcc)) : Sym(c.vpos),
                c.supplied ? volt(node(cVee)) : Sym(c.vneg), volt(pnode), volt(node(cOut))};
    if (std::isfinite(c.rin) && node(cInp) != node(cInn))
      lines.push_back(fmt::format("{} {} {} {:.17g}", el("r", "in"), node(cInp), node(cInn), c.rin));
    Sym io(0.0);
    if (c.level == 1) {
      io = level1_iout(c, x, plain_tanh);
    } else {
      if (c.ib != 0 && node(cInp) != "0") lines.push_back(fmt::format("{} {} 0 dc {:.17g}", el("i", "bp"), node(cInp), c.ib));
      if (c.ib != 0 && node(cInn) != "0") lines.push_back(fmt::format("{} {} 0 dc {:.17g}", el("i", "bn"), node(cInn), c.ib));
      if (c.supplied && c.iq != 0)
        lines.push_back(fmt::format("{} {} {} dc {:.17g}", el("i", "q"), node(cVcc), node(cVee), c.iq));
      lines.push_back(fmt::format("{} {} 0 {:.17g}", el("c", "p"), pnode, kCpole));
      lines.push_back(fmt::format("{} 0 {} i = {}", el("b", "p"), pnode, level2_ipole(c, x, plain_tanh).s));
      io = level2_iout(c, x, plain_tanh);
    }
    // The output current as the voltage of an internal node, then split between the supplies (the rails'
    // sources without supply pins).
    if (!c.supplied) rails(fd, c, lines);
    const std::string ionode = nm + "_io";
    const std::string vcc = c.supplied ? node(cVcc) : nm + "_vp", vee = c.supplied ? node(cVee) : nm + "_vn";
    lines.push_back(fmt::format("{} {} 0 v = {}", el("b", "io"), ionode, io.s));
    const Sym iov = volt(ionode), ip = from_vcc(iov);
    lines.push_back(fmt::format("{} {} {} i = {}", el("b", "op"), vcc, node(cOut), ip.s));
    lines.push_back(fmt::format("{} {} {} i = {}", el("b", "on"), vee, node(cOut), (iov - ip).s));
    return fmt::format("{}", fmt::join(lines, "\n"));
  }

 private:
  // Without supply pins: the rails as V sources (nodes <name>_vp, <name>_vn) and the quiescent current between
  // them (level 2); the output current is drawn from them by the caller.
  static void rails(const FlatDevice& fd, const Coeffs& c, std::vector<std::string>& lines) {
    const std::string& nm = fd.name;
    auto el = [&](const char* letter, const char* suffix) { return spice_instance_name(letter, nm + "_" + suffix); };
    const std::string vp = nm + "_vp", vn = nm + "_vn";
    lines.push_back(fmt::format("{} {} 0 dc {:.17g}", el("v", "vp"), vp, c.vpos));
    lines.push_back(fmt::format("{} {} 0 dc {:.17g}", el("v", "vn"), vn, c.vneg));
    if (c.level == 2 && c.iq != 0) lines.push_back(fmt::format("{} {} {} dc {:.17g}", el("i", "q"), vp, vn, c.iq));
  }
};

}  // namespace

std::unique_ptr<DeviceType> make_opamp_type() { return std::make_unique<OpampType>(); }

}  // namespace anasim
