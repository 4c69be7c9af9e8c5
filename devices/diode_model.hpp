// The junction diode's equations (SPICE level 1 as in ngspice 39's dioload.c and diotemp.c), written once: used
// by the MNA device (devices/diode.cpp: DC, transient, AC) and by the NN fast evaluator's periphery kernel
// (nn/periphery_kernel.hpp, at DC, at 27 C). Parameters are measured at TNOM; at_temperature() moves them to
// the circuit temperature as ngspice 39's diotemp.c (TLEV = TLEVC = 0).
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include "engine/limiting.hpp"

namespace anasim::diode_model {

// ngspice 39 physical constants (const.h) at 27 C.
constexpr double kBoltz = 1.38064852e-23;     // [J/K]
constexpr double kCharge = 1.6021766208e-19;  // [C]
constexpr double kTemp = 300.15;              // [K]
constexpr double kVt = kBoltz * kTemp / kCharge;  // [V] thermal voltage

// Parameter values of one instance, before the area factor (units and defaults as diode.cpp's tables).
struct Params {
  double area = 1.0;   // area factor: scales is, cjo, ibv and divides rs
  double is = 1e-14;   // [A] saturation current
  double n = 1.0;      // emission coefficient
  double rs = 0.0;     // [ohm] series resistance
  double cjo = 0.0;    // [F] zero-bias junction capacitance
  double vj = 1.0;     // [V] junction potential
  double m = 0.5;      // grading coefficient
  double tt = 0.0;     // [s] transit time
  double fc = 0.5;     // forward-bias depletion capacitance coefficient
  bool bv_given = false;  // reverse breakdown modelled (bv given)
  double bv = std::numeric_limits<double>::infinity();  // [V] reverse breakdown voltage
  double ibv = 1e-3;   // [A] current at the breakdown voltage
  double eg = 1.11;    // [eV] activation energy (temperature dependence of is)
  double xti = 3.0;    // saturation-current temperature exponent
  double tnom = std::numeric_limits<double>::quiet_NaN();  // [C] parameter measurement temperature; NaN: the
                                                           // circuit's nominal temperature (.options tnom)
};

// Derived constants of one instance (area applied).
struct Coeffs {
  double is = 0, rs = 0, cjo = 0, vj = 0, mj = 0, tt = 0, fc = 0;  // as Params, area applied
  double vte = 0;       // [V] n * vt (thermal voltage at the temperature)
  double inv_vte = 0;   // [1/V] 1 / vte
  double grs = 0;       // [S] 1 / rs, 0 without series resistance
  double vcrit = 0;     // [V] pnjlim's critical voltage
  double depl_thr = 0, f1 = 0, f2 = 0, f3 = 0;  // depletion capacitance above fc * vj (SPICE F1, F2, F3)
  bool bv_given = false;
  double bvt = 0;       // [V] breakdown voltage adjusted so that the current at -bvt is ibv (bv_given)
};

// Breakdown voltage adjusted so that the current at -bvt equals ibv (ngspice 39 diotemp.c). The breakdown
// emission coefficient NBV defaults to N there, so the exponentials use vte = N * vt; vt [V] thermal voltage.
inline double breakdown_voltage(double is, double vte, double bv, double ibv, double vt = kVt) {
  const double cbv = ibv;
  if (cbv < is * bv / vt) return bv;
  const double tol = 1e-3 * cbv;
  double xbv = bv - vte * std::log(1 + cbv / is);
  for (int it = 0; it < 25; ++it) {
    xbv = bv - vte * std::log(cbv / is + 1 - xbv / vt);
    const double xcbv = is * (std::exp((bv - xbv) / vte) - 1 + xbv / vt);
    if (std::fabs(xcbv - cbv) <= tol) break;
  }
  return xbv;
}

// The parameters of p (measured at tnom [K]) moved to temperature temp [K], as ngspice 39's diotemp.c with
// TLEV = TLEVC = 0: is through EG and XTI, vj and cjo through the silicon band gap (Eg(T) = 1.16 -
// 7.02e-4 T^2 / (T + 1108)), vj capped at 1 / fc. Returns p unchanged when temp == tnom.
inline Params at_temperature(const Params& p, double temp, double tnom) {
  if (temp == tnom) return p;
  constexpr double kRefTemp = kTemp;  // [K] 27 C, ngspice REFTEMP
  const double vt = kBoltz / kCharge * temp, vtnom = kBoltz / kCharge * tnom;
  auto gap = [](double t) { return 1.16 - (7.02e-4 * t * t) / (t + 1108); };
  const double fact2 = temp / kRefTemp, fact1 = tnom / kRefTemp;
  const double arg = -gap(temp) / (2 * kBoltz * temp) + 1.1150877 / (kBoltz * (kRefTemp + kRefTemp));
  const double pbfact = -2 * vt * (1.5 * std::log(fact2) + kCharge * arg);
  const double arg1 = -gap(tnom) / (kBoltz * 2 * tnom) + 1.1150877 / (2 * kBoltz * kRefTemp);
  const double pbfact1 = -2 * vtnom * (1.5 * std::log(fact1) + kCharge * arg1);
  Params t = p;
  const double pbo = (p.vj - pbfact1) / fact1;
  const double gmaold = (p.vj - pbo) / pbo;
  t.cjo = p.cjo / (1 + p.m * (400e-6 * (tnom - kRefTemp) - gmaold));
  t.vj = pbfact + fact2 * pbo;
  const double gmanew = (t.vj - pbo) / pbo;
  t.cjo *= 1 + p.m * (400e-6 * (temp - kRefTemp) - gmanew);
  if (p.fc * t.vj > 1.0) t.vj = 1.0 / p.fc;
  const double vte = p.n * vt;
  t.is = p.is * std::exp((temp / tnom - 1) * p.eg / vte + p.xti / p.n * std::log(temp / tnom));
  return t;
}

// Derived constants at temperature temp [K] of parameters p already at that temperature (at_temperature()).
inline Coeffs coeffs(const Params& p, double temp = kTemp) {
  const double vt = temp == kTemp ? kVt : kBoltz / kCharge * temp;
  Coeffs c;
  c.is = p.is * p.area;
  // A series resistance below kRsShort is a short (no internal node, as rs = 0): its conductance (> 1e6 S) next to
  // junction conductances of uS..S leaves the internal node undetermined in double precision (a 1 fOhm bridge
  // stalled the transient), while the voltage it would drop (< 1 uV at 1 A) is below any node tolerance.
  constexpr double kRsShort = 1e-6;  // [ohm]
  c.rs = p.rs / p.area < kRsShort ? 0.0 : p.rs / p.area;
  c.cjo = p.cjo * p.area;
  c.vj = p.vj;
  c.mj = p.m;
  c.tt = p.tt;
  c.fc = p.fc;
  c.vte = p.n * vt;
  c.inv_vte = 1 / c.vte;
  c.grs = c.rs > 0 ? 1 / c.rs : 0.0;
  c.vcrit = c.vte * std::log(c.vte / (M_SQRT2 * c.is));
  c.bv_given = p.bv_given;
  if (c.bv_given) c.bvt = breakdown_voltage(c.is, c.vte, p.bv, p.ibv * p.area, vt);
  c.depl_thr = c.fc * c.vj;
  c.f1 = c.vj * (1 - std::pow(1 - c.fc, 1 - c.mj)) / (1 - c.mj);
  c.f2 = std::pow(1 - c.fc, 1 + c.mj);
  c.f3 = 1 - c.fc * (1 + c.mj);
  return c;
}

// Current of the junction at voltage vd [V].
struct Current {
  double cdj = 0, gdj = 0;  // [A], [S] junction alone (the transit-time charge follows it)
  double cd = 0, gd = 0;    // [A], [S] with gmin in parallel, as stamped
};

// current()'s forward (exponential) branch: where it applies, and its values from evd = exp(vd / vte). T = double,
// or the NN fast evaluator's lane vector (nn/lanes.hpp), which computes evd lane by lane.
template <class T>
inline auto forward_branch(const Coeffs& c, const T& vd) {
  return vd >= -3 * c.vte;
}
template <class T>
inline void forward_current(const Coeffs& c, const T& vd, const T& evd, double gmin, T& cdj, T& gdj, T& cd, T& gd) {
  cdj = c.is * (evd - 1);
  gdj = c.is * evd * c.inv_vte;
  cd = cdj + gmin * vd;
  gd = gdj + gmin;
}

// current()'s reverse branch (below -3 vte, above the breakdown): the cubic approach to -is. T as forward_current.
template <class T>
inline void reverse_current(const Coeffs& c, const T& vd, double gmin, T& cdj, T& gdj, T& cd, T& gd) {
  T arg = 3 * c.vte / (vd * M_E);
  arg = arg * arg * arg;
  cdj = -c.is * (1 + arg);
  gdj = c.is * 3 * arg / vd;
  cd = cdj + gmin * vd;
  gd = gdj + gmin;
}

// Forward exponential, reverse (cubic approach to -is) and breakdown branches; gmin [S] in parallel (as ngspice).
inline Current current(const Coeffs& c, double vd, double gmin) {
  Current r;
  if (forward_branch(c, vd)) {
    forward_current(c, vd, std::exp(vd * c.inv_vte), gmin, r.cdj, r.gdj, r.cd, r.gd);
    return r;
  } else if (!c.bv_given || vd >= -c.bvt) {
    reverse_current(c, vd, gmin, r.cdj, r.gdj, r.cd, r.gd);
    return r;
  } else {
    const double evrev = std::exp(-(c.bvt + vd) / c.vte);
    r.cdj = -c.is * evrev;
    r.gdj = c.is * evrev / c.vte;
  }
  r.cd = r.cdj + gmin * vd;
  r.gd = r.gdj + gmin;
  return r;
}

// Forward voltage [V] at which the junction and its series resistance carry current i > 0 [A] (the exponential
// branch inverted; 0 for i <= 0). For initial guesses.
// T = double, or the NN fast evaluator's lane vector with its lane-wise log (log_fn).
template <class T, class LogF>
inline T forward_voltage(const Coeffs& c, const T& i, LogF&& log_fn) {
  const T v = c.vte * log_fn(i / c.is + 1) + i * c.rs;
  return i > 0 ? v : T{};
}
inline double forward_voltage(const Coeffs& c, double i) {
  return i > 0 ? c.vte * std::log(i / c.is + 1) + i * c.rs : 0.0;
}

// Junction charge q [C] and capacitance cap [F] at vd: depletion plus transit-time (diffusion) parts; j is the
// junction current at vd (current()).
inline void charge(const Coeffs& c, double vd, const Current& j, double& q, double& cap) {
  double qd = 0, cdep = 0;
  if (c.cjo > 0) {
    if (vd < c.depl_thr) {
      const double arg = 1 - vd / c.vj;
      // arg^-M; M = 0.5 (the default, and most models) is a square root instead of a log and an exp.
      const double sarg = c.mj == 0.5 ? 1 / std::sqrt(arg) : std::exp(-c.mj * std::log(arg));
      qd = c.vj * c.cjo * (1 - arg * sarg) / (1 - c.mj);
      cdep = c.cjo * sarg;
    } else {
      const double czof2 = c.cjo / c.f2;
      qd = c.cjo * c.f1 +
           czof2 * (c.f3 * (vd - c.depl_thr) + (c.mj / (c.vj + c.vj)) * (vd * vd - c.depl_thr * c.depl_thr));
      cdep = czof2 * (c.f3 + c.mj * vd / c.vj);
    }
  }
  q = c.tt * j.cdj + qd;
  cap = c.tt * j.gdj + cdep;
}

// Junction-voltage limiting of a Newton iterate vnew against the previous vold [V]: ngspice DEVpnjlim
// (engine/limiting.hpp), mirrored about -bvt on the breakdown side. `limited` tells whether it acted.
inline double limit(const Coeffs& c, double vnew, double vold, bool& limited) {
  if (c.bv_given && vnew < std::min(0.0, -c.bvt + 10 * c.vte)) {
    double vn = -(vnew + c.bvt), vo = -(vold + c.bvt);
    vn = pnjlim(vn, vo, c.vte, c.vcrit, limited);
    return -(vn + c.bvt);
  }
  return pnjlim(vnew, vold, c.vte, c.vcrit, limited);
}

}  // namespace anasim::diode_model
