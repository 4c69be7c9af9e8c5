// The op-amp model's constants, coefficients and scalar helpers, shared by the device (devices/opamp.cpp: MNA
// stamps and the ngspice export) and by the NN fast evaluator (nn/periphery_kernel.hpp: the same equations at DC
// with fixed rails and the pole node eliminated, pole_voltage_dc). The general equations are the templates in
// opamp.cpp; the DC forms here and the kernel's stamps are checked against the MNA solve (tests/test_nn_exact.cpp).
#pragma once
#include <limits>
#include <algorithm>
#include <cmath>
#include "engine/limiting.hpp"

namespace anasim::opamp_model {

// Fixed shape constants of the model.
constexpr double kHs = 0.05;       // [V] level 1: half-swing floor (softplus) when the rails collapse
constexpr double kVs = 10e-3;      // [V] level 2: knee width of the rail clamp at the pole node
constexpr double kIsplit = 1e-8;   // [A] supply split of the output current: crossover width
constexpr double kCpole = 1e-9;    // [F] level 2: pole capacitor (sets the internal current scale only)

// Parameter values of one instance (units as in opamp.cpp's parameter table).
struct Params {
  int level = 2;
  bool supplied = false;  // vcc/vee pins connected
  // The table defaults (opamp.cpp binds each table line to one of these).
  double a0 = 1e5, gbw = 1e6, sr = 1.0, vos = 0.0, ib = 0.0;
  double rin = std::numeric_limits<double>::infinity(), rout = 1.0;
  double ilim = std::numeric_limits<double>::infinity(), cmrr = std::numeric_limits<double>::infinity();
  double iq = 0.0, hd_hi = 0.0, hd_lo = 0.0, vpos = 15.0, vneg = -15.0;
};

// Derived constants of one instance.
struct Coeffs {
  int level = 2;
  bool supplied = false;             // supply pins connected: rails follow v(vcc), v(vee)
  double a0, vos, ib, rin, rout, ilim, iq, hd_hi, hd_lo, vpos, vneg;
  double kcm = 0;                    // common-mode gain / differential gain (10^(-cmrr/20))
  double imax = 0, vsr = 0, r1 = 0;  // level 2: slew current [A], slewing input voltage [V], pole resistor [ohm]
  double gcl = 0;                    // level 2: rail clamp current scale [A] (conductance gcl / kVs)
};

inline Coeffs coeffs(const Params& p) {
  Coeffs c;
  c.level = p.level;
  c.supplied = p.supplied;
  c.a0 = p.a0;
  c.vos = p.vos;
  c.ib = p.ib;
  c.rin = p.rin;
  c.rout = p.rout;
  c.ilim = p.ilim;
  c.iq = p.iq;
  c.hd_hi = p.hd_hi;
  c.hd_lo = p.hd_lo;
  c.vpos = p.vpos;
  c.vneg = p.vneg;
  c.kcm = std::isfinite(p.cmrr) ? std::pow(10.0, -p.cmrr / 20) : 0.0;
  const double gm = 2 * M_PI * p.gbw * kCpole;  // [S] input-stage transconductance
  c.imax = p.sr * 1e6 * kCpole;
  c.vsr = c.imax / gm;
  c.r1 = c.a0 / gm;
  c.gcl = c.imax / std::log(2.0);  // the clamp absorbs imax with the pole node at the rail
  return c;
}

// ln(1 + e^x) without overflow; exactly 0 below -746 (where exp underflows), without the calls.
inline double softplus(double x) {
  if (x < -746.0) return 0.0;
  return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
}
// d/dx ln(1 + e^x), the logistic function.
inline double softplus_d(double x) {
  if (x < -746.0) return 0.0;
  const double e = std::exp(-std::fabs(x));
  return x >= 0 ? 1 / (1 + e) : e / (1 + e);
}

// Level 1 at fixed rails (no supply pins): swing centre and half swing [V], as level1_iout computes them.
inline void fixed_swing(const Coeffs& c, double& vhi, double& vlo, double& vmid, double& vhalf) {
  vhi = c.vpos - c.hd_hi;
  vlo = c.vneg + c.hd_lo;
  vmid = 0.5 * (vhi + vlo);
  vhalf = kHs * softplus((0.5 / kHs) * (vhi - vlo));
}

// DC coefficients at fixed rails (no supply pins): the swing limits, centre and half width [V] as the level-1 and
// level-2 equations compute them from vpos and vneg.
struct DcCoeffs : Coeffs {
  double vhi = 0, vlo = 0, vmid = 0, vhalf = 0;
};
inline DcCoeffs dc_coeffs(const Params& p) {
  DcCoeffs o;
  static_cast<Coeffs&>(o) = coeffs(p);
  fixed_swing(o, o.vhi, o.vlo, o.vmid, o.vhalf);
  return o;
}

// Level 2 at fixed rails: the current leaving the pole node at voltage p [V] through the gain-setting leak to vmid
// and the rail clamp [A] (opamp.cpp's level2_ipole is the input stage minus this).
// Its leak term alone: pole_load where clamp_off(c, p) holds (T = double or the fast evaluator's lane vector).
template <class T>
inline T pole_load_linear(const DcCoeffs& c, const T& p) {
  return (p - c.vmid) / c.r1;
}
inline double pole_load(const DcCoeffs& c, double p) {
  return pole_load_linear(c, p) + c.gcl * (softplus((p - c.vhi) / kVs) - softplus((c.vlo - p) / kVs));
}

// Level 2: the pole-node voltage p [V] at which the input-stage current `stage` [A] equals pole_load(p) + gc p, and
// dp/dstage [ohm]. gc [S] is 0 at DC (no capacitor current); in a transient step it is the companion conductance
// ag0 * kCpole of the pole capacitor, whose history current the caller adds to `stage`. Far from the rails the
// clamp is exactly 0 and p is explicit; else Newton on the increasing function pole_load(p) + gc p - stage, to
// the last bit.
// Its explicit part: the pole voltage and dp/dstage [ohm] without the clamp, exact where clamp_off(p) holds.
// T = double, or the fast evaluator's lane vector (nn/lanes.hpp).
template <class T>
inline T pole_explicit(const DcCoeffs& c, const T& stage, double gc, double& dp_dstage) {
  dp_dstage = gc == 0 ? c.r1 : 1.0 / (1.0 / c.r1 + gc);
  return gc == 0 ? c.vmid + c.r1 * stage : (stage + c.vmid / c.r1) / (1.0 / c.r1 + gc);
}
// The same with a companion conductance per lane (lanes at different time steps; every gc > 0): lane by lane the
// operations of the transient branch above, so each lane's result is the one-image result.
template <class T>
inline T pole_explicit_lanes(const DcCoeffs& c, const T& stage, const T& gc, T& dp_dstage) {
  dp_dstage = 1.0 / (1.0 / c.r1 + gc);
  return (stage + c.vmid / c.r1) / (1.0 / c.r1 + gc);
}
// True where the rail clamp at pole voltage p is exactly 0 (softplus of both arguments underflows).
template <class T>
inline auto clamp_off(const DcCoeffs& c, const T& p) {
  return ((p - c.vhi) / kVs < -746.0) & ((c.vlo - p) / kVs < -746.0);
}
inline double pole_voltage(const DcCoeffs& c, double stage, double gc, double& dp_dstage) {
  const double p0 = pole_explicit(c, stage, gc, dp_dstage);
  if (clamp_off(c, p0)) return p0;
  double p = std::clamp(p0, c.vlo - 1.0, c.vhi + 1.0), dF = 1.0 / c.r1;
  for (int it = 0; it < 200; ++it) {
    const double a1 = (p - c.vhi) / kVs, a2 = (c.vlo - p) / kVs;
    const double F = (p - c.vmid) / c.r1 + c.gcl * (softplus(a1) - softplus(a2)) + gc * p - stage;
    dF = 1.0 / c.r1 + c.gcl * (softplus_d(a1) + softplus_d(a2)) / kVs + gc;
    const double step = F / dF;
    p -= step;
    if (std::fabs(step) <= 1e-16 * (std::fabs(p) + 1.0)) break;
  }
  dp_dstage = 1.0 / dF;
  return p;
}
// Level 2 at DC (no capacitor current): pole_voltage with gc = 0.
inline double pole_voltage_dc(const DcCoeffs& c, double stage, double& dp_dstage) {
  return pole_voltage(c, stage, 0.0, dp_dstage);
}

// Share of an output current io [A] drawn from the positive rail (the rest comes from the negative one): a smooth
// split of width kIsplit. T: any type with arithmetic against double (double, the device's Dual/Sym, the NN fast
// evaluator's lane vector), sqrt_fn its square root.
template <class T, class SqrtF> T from_vcc(const T& io, SqrtF&& sqrt_fn) {
  return 0.5 * (io + sqrt_fn(io * io + kIsplit * kIsplit));
}
// The same with the sqrt that argument-dependent lookup finds (double, Dual, Sym).
template <class T> T from_vcc(const T& io) {
  return from_vcc(io, [](const T& a) {
    using std::sqrt;
    return T(sqrt(a));
  });
}

// Power [W] the rails vpos/vneg [V] deliver to an op-amp with quiescent current iq [A] that drives io [A] into its
// output (the output current split between the rails by from_vcc). T = double, or the NN fast evaluator's lane
// vector with its lane-wise square root (sqrt_fn).
template <class T, class SqrtF>
inline T rail_power(double iq, double vpos, double vneg, const T& io, SqrtF&& sqrt_fn) {
  const T ip = from_vcc(io, sqrt_fn);
  return iq * (vpos - vneg) + ip * vpos + (io - ip) * vneg;
}
inline double rail_power(double iq, double vpos, double vneg, double io) {
  return rail_power(iq, vpos, vneg, io, [](double a) { return std::sqrt(a); });
}

// Newton step limiting of the tanh arguments (engine/limiting.hpp).
using anasim::limit_tanh_arg;

}  // namespace anasim::opamp_model
