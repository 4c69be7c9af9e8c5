// Junction diode D (anode, cathode) with the SPICE level-1 model, following ngspice 39's dioload.c: the MNA
// device (stamps for DC, transient and AC) and its parameter tables. The equations (Shockley current with emission
// coefficient N and series resistance RS on an internal node, reverse breakdown at BV (IBV), depletion capacitance
// (CJO, VJ, M, FC) and transit-time charge (TT), pnjlim junction-voltage limiting, which as in ngspice is also its
// convergence test, and the temperature dependence of IS, VJ and CJO through EG, XTI and TNOM) are in
// devices/diode_model.hpp.
#include <cmath>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "devices/diode_model.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {

namespace dm = diode_model;

// The instance lines besides `area` (which goes to dm::Params).
struct DiodeInstance {
  bool off = false;  // start the operating point with the junction off
  double ic = 0.0;   // [V] initial junction voltage (accepted, unused)
};

class Diode : public Device {
 public:
  // p: model and area; inst: the other instance lines.
  Diode(const FlatDevice& fd, const dm::Params& p, const DiodeInstance& inst)
      : Device(fd.name, fd.loc), a_(fd.nodes[0]), k_(fd.nodes[1]), p_(p) {
    c_ = dm::coeffs(p);
    off_ = inst.off;
  }

  void set_temperature(const Temperature& t) override {
    const double tnom = std::isnan(p_.tnom) ? t.tnom : p_.tnom + Temperature::kCtoK;
    c_ = dm::coeffs(dm::at_temperature(p_, t.temp, tnom), t.temp);
  }

  bool nonlinear() const override { return true; }
  void allocate(Allocator& al) override {
    internal_ = c_.rs > 0 ? al.add_internal_node(*this, "internal") : a_;
    state_ = al.add_states(1);
  }
  void declare(PatternBuilder& p) override {
    ua_ = p.unknown(a_);
    uk_ = p.unknown(k_);
    ui_ = p.unknown(internal_);
    if (c_.rs > 0) rs_y_.declare(p, ua_, ui_);
    jy_.declare(p, ui_, uk_);
    ji_.declare(p, ui_, uk_);
  }

  void load(LoadContext& ctx) override {
    gmin_ = ctx.gmin;
    double vd;
    if (ctx.init_junctions) {
      vd = off_ ? 0.0 : c_.vcrit;
    } else {
      vd = ctx.v(ui_) - ctx.v(uk_);
      // Only limiting marks the diode unconverged, as in ngspice: its current test (DIOconvTest) compares the
      // current predicted at the voltage the load itself used (CKTrhsOld, before the solution swap), which
      // differs from the stored one only after limiting. A stricter test here (cdhat from the new iterate)
      // cost a third Newton iteration on a quarter of the timesteps of diode circuits, without changing the
      // agreement with ngspice.
      bool limited = false;
      vd = dm::limit(c_, vd, vd_, limited);
      if (limited) ctx.noncon = true;
      eval(vd);
      stamp(ctx, vd);
      return;
    }
    eval(vd);
    ctx.noncon = true;
    stamp(ctx, vd);
  }

  void init_uic(LoadContext& ctx) override {
    const double vd = ctx.v(ui_) - ctx.v(uk_);
    double q, c;
    dm::charge(c_, vd, j_, q, c);  // transit-time part from j_, the current of the last load (0 before any)
    ctx.q[state_] = q;
  }

  void load_ac(AcLoadContext& ctx) override {
    if (c_.rs > 0) rs_y_.stamp(ctx.A, std::complex<double>(c_.grs));
    jy_.stamp(ctx.A, std::complex<double>(j_.gd, ctx.omega * cap_));
  }
  void dc_paths(std::vector<NodePair>& out) const override {
    out.emplace_back(a_, internal_);
    out.emplace_back(internal_, k_);
  }

 private:
  // The junction's current at vd (gmin included, as ngspice), kept for the stamps and the AC model.
  void eval(double vd) {
    j_ = dm::current(c_, vd, gmin_);
    vd_ = vd;
  }

  void stamp(LoadContext& ctx, double vd) {
    double q;
    dm::charge(c_, vd, j_, q, cap_);
    double cd = j_.cd, gd = j_.gd;
    const double ic = ctx.ddt(state_, q);
    if (ctx.transient()) {
      gd += ctx.ag0 * cap_;
      cd += ic;
    }
    if (c_.rs > 0) rs_y_.stamp(ctx.A, c_.grs);
    jy_.stamp(ctx.A, gd);
    ji_.stamp(ctx.b, cd - gd * vd);
  }

  NodeId a_, k_, internal_;
  UnknownIndex ua_, uk_, ui_;
  dm::Params p_;       // the model at its nominal temperature
  dm::Coeffs c_;       // at the circuit temperature
  bool off_;
  double gmin_ = 1e-12;
  double vd_ = 0;      // [V] junction voltage of the last load (the limiting reference)
  dm::Current j_;      // junction current at vd_
  double cap_ = 0;     // [F] junction capacitance at vd_
  int state_ = 0;
  AdmittanceStamp rs_y_, jy_;
  CurrentStamp ji_;
};

class DiodeType : public DeviceType {
 public:
  DiodeType() {
    key = "d";
    long_name = "diode";
    description = "junction diode (SPICE level 1)";
    pins = {"a", "k"};
    positional = {"area"};
    model_type = "d";
    using M = dm::Params;
    using P = ParamDecl;
    params = {
        P("area").def(1).above(0).doc("area factor").bind<&M::area>(),
        P("off").kind(ParamKind::Flag).def(0).range(0, 1).doc("start the operating point with the junction off")
            .bind<&DiodeInstance::off>(),
        P("ic").unit("V").def(0).doc("initial junction voltage (with uic; accepted, unused)").bind<&DiodeInstance::ic>(),
    };
    model_params = {
        P("is").unit("A").def(1e-14).above(0).doc("saturation current").bind<&M::is>(),
        P("n").def(1).above(0).doc("emission coefficient").bind<&M::n>(),
        P("rs").unit("ohm").def(0).range(0, kInf).doc("series resistance (below 1 uohm: a short, as 0)").bind<&M::rs>(),
        P("cjo").alias("cj0").unit("F").def(0).range(0, kInf).doc("zero-bias junction capacitance").bind<&M::cjo>(),
        P("vj").alias("pb").unit("V").def(1).above(0).doc("junction potential").bind<&M::vj>(),
        P("m").alias("mj").def(0.5).range(0, 0.9).doc("grading coefficient").bind<&M::m>(),
        P("tt").unit("s").def(0).range(0, kInf).doc("transit time").bind<&M::tt>(),
        P("bv").alias("vb").unit("V").def(kInf).above(0).doc("reverse breakdown voltage").bind<&M::bv>(),
        P("ibv").unit("A").def(1e-3).above(0).doc("current at breakdown voltage").bind<&M::ibv>(),
        P("fc").def(0.5).range(0, 0.95).doc("forward-bias depletion capacitance coefficient").bind<&M::fc>(),
        P("eg").unit("eV").def(1.11).above(0).doc("activation energy (temperature dependence of is)").bind<&M::eg>(),
        P("xti").def(3).doc("saturation-current temperature exponent").bind<&M::xti>(),
        P("tnom").alias("tref").unit("C").def(std::nan("")).range(-273.15, kInf)
            .doc("parameter measurement temperature (default: .options tnom)").bind<&M::tnom>(),
        P("kf").def(0).range(0, kInf).doc("flicker noise coefficient").no_effect("affects only noise analysis"),
        P("af").def(1).above(0).doc("flicker noise exponent").no_effect("affects only noise analysis"),
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    dm::Params p;
    DiodeInstance inst;
    const std::string what = fmt::format("diode '{}'", fd.name);
    Status e = apply_params(fd.model, p, what.c_str());
    if (e) e = apply_params(fd.params, p, what.c_str());  // area
    if (e) e = apply_params(fd.params, inst, what.c_str());
    if (!e) {
      st.merge(e);
      return nullptr;
    }
    p.bv_given = fd.model.has(fd.model.index_of("bv"));  // breakdown modelled only when bv is given
    return std::make_unique<Diode>(fd, p, inst);
  }
};
}  // namespace

std::unique_ptr<DeviceType> make_diode_type() { return std::make_unique<DiodeType>(); }

}  // namespace anasim
