// Junction diode D (anode, cathode) with the SPICE level-1 model, following ngspice 39's dioload.c: the MNA
// device (stamps for DC, transient and AC) and its parameter tables. The equations (Shockley current with emission
// coefficient N and series resistance RS on an internal node, reverse breakdown at BV (IBV), depletion capacitance
// (CJO, VJ, M, FC) and transit-time charge (TT), pnjlim junction-voltage limiting, which as in ngspice is also its
// convergence test) are in devices/diode_model.hpp. Temperature = TNOM = 27 C.
#include <cmath>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "devices/diode_model.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
enum { kArea, kOff, kIc };
enum { kIs, kN, kRs, kCjo, kVj, kM, kTt, kBv, kIbv, kFc };

namespace dm = diode_model;

class Diode : public Device {
 public:
  explicit Diode(const FlatDevice& fd) : Device(fd.name, fd.loc), a_(fd.nodes[0]), k_(fd.nodes[1]) {
    const ParamValues& m = fd.model;
    dm::Params p;
    p.area = fd.params[kArea];
    p.is = m[kIs];
    p.n = m[kN];
    p.rs = m[kRs];
    p.cjo = m[kCjo];
    p.vj = m[kVj];
    p.m = m[kM];
    p.tt = m[kTt];
    p.fc = m[kFc];
    p.bv_given = fd.model.has(kBv);
    p.bv = m[kBv];
    p.ibv = m[kIbv];
    c_ = dm::coeffs(p);
    off_ = fd.params[kOff] != 0;
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
  dm::Coeffs c_;
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
    params = {
        {"area", "", 1.0, 0, kInf, "area factor", ParamKind::Real, true},
        {"off", "", 0.0, 0, 1, "start the operating point with the junction off", ParamKind::Flag},
        {"ic", "V", 0.0, -kInf, kInf, "initial junction voltage (with uic; accepted, unused)"},
    };
    model_params = {
        {"is", "A", 1e-14, 0, kInf, "saturation current", ParamKind::Real, true},
        {"n", "", 1.0, 0, kInf, "emission coefficient", ParamKind::Real, true},
        {"rs", "ohm", 0.0, 0, kInf, "series resistance"},
        {"cjo", "F", 0.0, 0, kInf, "zero-bias junction capacitance", ParamKind::Real, false, "cj0"},
        {"vj", "V", 1.0, 0, kInf, "junction potential", ParamKind::Real, true, "pb"},
        {"m", "", 0.5, 0, 0.9, "grading coefficient", ParamKind::Real, false, "mj"},
        {"tt", "s", 0.0, 0, kInf, "transit time"},
        {"bv", "V", kInf, 0, kInf, "reverse breakdown voltage", ParamKind::Real, true, "vb"},
        {"ibv", "A", 1e-3, 0, kInf, "current at breakdown voltage", ParamKind::Real, true},
        {"fc", "", 0.5, 0, 0.95, "forward-bias depletion capacitance coefficient"},
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status&) const override {
    return std::make_unique<Diode>(fd);
  }
};
}  // namespace

std::unique_ptr<DeviceType> make_diode_type() { return std::make_unique<DiodeType>(); }

}  // namespace anasim
