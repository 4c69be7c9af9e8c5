// The op-amp model's constants, coefficients and scalar helpers, shared by the device (devices/opamp.cpp: MNA
// stamps and the ngspice export) and by the NN fast evaluator (nn/fast_eval.cpp: the same equations at DC with
// the pole node eliminated). The equations themselves are the templates in opamp.cpp; the DC forms in
// fast_eval.cpp are derived from them and checked against the MNA solve (tests/test_nn_exact.cpp).
#pragma once
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
  double a0, gbw, sr, vos, ib, rin, rout, ilim, cmrr, iq, hd_hi, hd_lo, vpos, vneg;
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

// Newton step limiting of the tanh arguments (engine/limiting.hpp).
using anasim::limit_tanh_arg;

}  // namespace anasim::opamp_model
