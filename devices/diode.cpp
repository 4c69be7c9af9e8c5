// Junction diode D (anode, cathode) with the SPICE level-1 model, following ngspice 39's dioload.c:
// Shockley current with emission coefficient N and series resistance RS (internal node), reverse
// breakdown at BV (IBV), depletion capacitance (CJO, VJ, M, FC) and transit-time charge (TT), pnjlim
// junction-voltage limiting (which, as in ngspice, is also its convergence test). Temperature = TNOM = 27 C.
#include <cmath>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "engine/limiting.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
enum { kArea, kOff, kIc };
enum { kIs, kN, kRs, kCjo, kVj, kM, kTt, kBv, kIbv, kFc };

// ngspice 39 physical constants (const.h) at 27 C.
constexpr double kBoltz = 1.38064852e-23;   // [J/K]
constexpr double kCharge = 1.6021766208e-19;  // [C]
constexpr double kTemp = 300.15;             // [K]
const double kVt = kBoltz * kTemp / kCharge;  // thermal voltage [V]

class Diode : public Device {
 public:
  explicit Diode(const FlatDevice& fd) : Device(fd.name, fd.loc), a_(fd.nodes[0]), k_(fd.nodes[1]) {
    const ParamValues& m = fd.model;
    const double area = fd.params[kArea];
    is_ = m[kIs] * area;
    n_ = m[kN];
    rs_ = m[kRs] / area;
    cjo_ = m[kCjo] * area;
    vj_ = m[kVj];
    mj_ = m[kM];
    tt_ = m[kTt];
    fc_ = m[kFc];
    vte_ = n_ * kVt;
    inv_vte_ = 1 / vte_;
    grs_ = rs_ > 0 ? 1 / rs_ : 0.0;
    vcrit_ = vte_ * std::log(vte_ / (M_SQRT2 * is_));
    off_ = fd.params[kOff] != 0;
    bv_given_ = fd.model.has(kBv);
    if (bv_given_) breakdown(m[kBv], m[kIbv] * area);
    // Depletion-capacitance constants (SPICE F1, F2, F3).
    depl_thr_ = fc_ * vj_;
    f1_ = vj_ * (1 - std::pow(1 - fc_, 1 - mj_)) / (1 - mj_);
    f2_ = std::pow(1 - fc_, 1 + mj_);
    f3_ = 1 - fc_ * (1 + mj_);
  }

  bool nonlinear() const override { return true; }
  void allocate(Allocator& al) override {
    internal_ = rs_ > 0 ? al.add_internal_node(*this, "internal") : a_;
    state_ = al.add_states(1);
  }
  void declare(PatternBuilder& p) override {
    ua_ = p.unknown(a_);
    uk_ = p.unknown(k_);
    ui_ = p.unknown(internal_);
    if (rs_ > 0) rs_y_.declare(p, ua_, ui_);
    jy_.declare(p, ui_, uk_);
    ji_.declare(p, ui_, uk_);
  }

  void load(LoadContext& ctx) override {
    gmin_ = ctx.gmin;
    double vd;
    if (ctx.init_junctions) {
      vd = off_ ? 0.0 : vcrit_;
    } else {
      vd = ctx.v(ui_) - ctx.v(uk_);
      // Only limiting marks the diode unconverged, as in ngspice: its current test (DIOconvTest) compares the
      // current predicted at the voltage the load itself used (CKTrhsOld, before the solution swap), which
      // differs from the stored one only after limiting. A stricter test here (cdhat from the new iterate)
      // cost a third Newton iteration on a quarter of the timesteps of diode circuits, without changing the
      // agreement with ngspice.
      bool limited = false;
      vd = limit(vd, vd_, limited);
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
    charge(vd, q, c);
    ctx.q[state_] = q;
  }

  void load_ac(AcLoadContext& ctx) override {
    if (rs_ > 0) rs_y_.stamp(ctx.A, std::complex<double>(1.0 / rs_));
    jy_.stamp(ctx.A, std::complex<double>(gd_, ctx.omega * cap_));
  }
  void dc_paths(std::vector<NodePair>& out) const override {
    out.emplace_back(a_, internal_);
    out.emplace_back(internal_, k_);
  }

 private:
  // Current cd_ [A] and conductance gd_ [S] at junction voltage vd (includes gmin like ngspice).
  void eval(double vd) {
    double cd, gd;
    if (vd >= -3 * vte_) {
      const double evd = std::exp(vd * inv_vte_);
      cd = is_ * (evd - 1);
      gd = is_ * evd * inv_vte_;
    } else if (!bv_given_ || vd >= -bvt_) {
      double arg = 3 * vte_ / (vd * M_E);
      arg = arg * arg * arg;
      cd = -is_ * (1 + arg);
      gd = is_ * 3 * arg / vd;
    } else {
      const double evrev = std::exp(-(bvt_ + vd) / vte_);
      cd = -is_ * evrev;
      gd = is_ * evrev / vte_;
    }
    cdj_ = cd;
    gdj_ = gd;
    cd_ = cd + gmin_ * vd;
    gd_ = gd + gmin_;
    vd_ = vd;
  }

  // Junction charge q [C] and capacitance c [F] at vd: depletion plus transit-time (diffusion) parts.
  void charge(double vd, double& q, double& c) const {
    double qd = 0, cdep = 0;
    if (cjo_ > 0) {
      if (vd < depl_thr_) {
        const double arg = 1 - vd / vj_;
        // arg^-M; M = 0.5 (the default, and most models) is a square root instead of a log and an exp.
        const double sarg = mj_ == 0.5 ? 1 / std::sqrt(arg) : std::exp(-mj_ * std::log(arg));
        qd = vj_ * cjo_ * (1 - arg * sarg) / (1 - mj_);
        cdep = cjo_ * sarg;
      } else {
        const double czof2 = cjo_ / f2_;
        qd = cjo_ * f1_ + czof2 * (f3_ * (vd - depl_thr_) + (mj_ / (vj_ + vj_)) * (vd * vd - depl_thr_ * depl_thr_));
        cdep = czof2 * (f3_ + mj_ * vd / vj_);
      }
    }
    q = tt_ * cdj_ + qd;
    c = tt_ * gdj_ + cdep;
  }

  void stamp(LoadContext& ctx, double vd) {
    double q;
    charge(vd, q, cap_);
    double cd = cd_, gd = gd_;
    const double ic = ctx.ddt(state_, q);
    if (ctx.transient()) {
      gd += ctx.ag0 * cap_;
      cd += ic;
    }
    if (rs_ > 0) rs_y_.stamp(ctx.A, grs_);
    jy_.stamp(ctx.A, gd);
    ji_.stamp(ctx.b, cd - gd * vd);
  }

  // ngspice DEVpnjlim, plus its breakdown-side limiting.
  double limit(double vnew, double vold, bool& limited) const {
    if (bv_given_ && vnew < std::min(0.0, -bvt_ + 10 * vte_)) {
      double vn = -(vnew + bvt_), vo = -(vold + bvt_);
      vn = pnjlim(vn, vo, limited);
      return -(vn + bvt_);
    }
    return pnjlim(vnew, vold, limited);
  }
  double pnjlim(double vnew, double vold, bool& limited) const {
    return anasim::pnjlim(vnew, vold, vte_, vcrit_, limited);
  }

  // Breakdown voltage adjusted so that the current at -bvt equals ibv (ngspice 39 diotemp.c). The
  // breakdown emission coefficient NBV defaults to N there, so the exponentials use vte_ = N * vt.
  void breakdown(double bv, double ibv) {
    double cbv = ibv;
    if (cbv < is_ * bv / kVt) {
      bvt_ = bv;
      return;
    }
    const double tol = 1e-3 * cbv;
    double xbv = bv - vte_ * std::log(1 + cbv / is_);
    for (int it = 0; it < 25; ++it) {
      xbv = bv - vte_ * std::log(cbv / is_ + 1 - xbv / kVt);
      const double xcbv = is_ * (std::exp((bv - xbv) / vte_) - 1 + xbv / kVt);
      if (std::fabs(xcbv - cbv) <= tol) break;
    }
    bvt_ = xbv;
  }

  NodeId a_, k_, internal_;
  UnknownIndex ua_, uk_, ui_;
  double is_, n_, rs_, cjo_, vj_, mj_, tt_, fc_, vte_, vcrit_;
  double inv_vte_;  // [1/V] 1 / vte_
  double grs_;      // [S] 1 / rs_, 0 without series resistance
  double depl_thr_, f1_, f2_, f3_;
  bool off_, bv_given_;
  double bvt_ = 0;
  double gmin_ = 1e-12;
  double vd_ = 0, cd_ = 0, gd_ = 0, cdj_ = 0, gdj_ = 0, cap_ = 0;
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
