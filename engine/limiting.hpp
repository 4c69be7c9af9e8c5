// Newton step limiting of device nonlinearities, in the manner of SPICE's pnjlim/fetlim: an iterate whose
// argument lands where the tangent carries no information is pulled back towards the previous iterate. Used by
// the diode (devices/diode.cpp), the op-amp model (devices/opamp_model.hpp), the NN fast evaluator and by tanh() in behavioural expressions (engine/expr.hpp).
#pragma once
#include <algorithm>
#include <cmath>

namespace anasim {

// Newton step limiting for a tanh argument: on the flat tails the tangent carries no information, so an
// argument heading into a tail at most doubles per iteration (from inside the linear region it stops at
// +-kLin), and one heading into the opposite tail restarts from 0, the linear model.
// Returns the argument to evaluate at; `limited` tells whether it differs from xnew.
constexpr double kTanhLin = 2.0;  // limit_tanh_arg leaves arguments of at most this magnitude alone
inline double limit_tanh_arg(double xnew, double xold, bool& limited) {
  constexpr double kLin = kTanhLin;
  limited = false;
  if (std::fabs(xnew) <= kLin) return xnew;
  double bound = 0;
  if (xnew > 0 && xold >= 0) bound = std::max(2 * xold, kLin);
  if (xnew < 0 && xold <= 0) bound = std::min(2 * xold, -kLin);
  if (xnew > 0 ? xnew > bound : xnew < bound) {
    limited = true;
    return bound;
  }
  return xnew;
}

// SPICE's pnjlim (ngspice DEVpnjlim) for a pn-junction voltage [V]: above vcrit a step of more than 2 vt is
// replaced by the logarithmic one the exponential allows; below zero the voltage may fall at most to
// -vold - 1 (or 2 vold - 1). vt: emission coefficient times thermal voltage [V]. `limited` tells whether it acted.
// Where pnjlim acts (a bool for doubles; lane-wise for the NN fast evaluator's lane vectors): vnew above vcrit and
// more than 2 vt from vold, or below zero and below its floor (-vold - 1, or 2 vold - 1 for vold <= 0).
template <class T>
inline auto pnjlim_acts(const T& vnew, const T& vold, double vt, double vcrit) {
  const T d = vnew - vold;
  return ((vnew > vcrit) & ((d > 2 * vt) | (d < -2 * vt))) |
         ((vnew < 0) & (vnew < ((vold > 0) ? -vold - 1 : 2 * vold - 1)));
}
inline double pnjlim(double vnew, double vold, double vt, double vcrit, bool& limited) {
  limited = false;
  if (vnew > vcrit && std::fabs(vnew - vold) > 2 * vt) {
    if (vold > 0) {
      const double arg = 1 + (vnew - vold) / vt;
      vnew = arg > 0 ? vold + vt * std::log(arg) : vcrit;
    } else {
      vnew = vt * std::log(vnew / vt);
    }
    limited = true;
  } else if (vnew < 0) {
    const double arg = vold > 0 ? -vold - 1 : 2 * vold - 1;
    if (vnew < arg) {
      vnew = arg;
      limited = true;
    }
  }
  return vnew;
}

}  // namespace anasim
