// Newton step limiting of device nonlinearities, in the manner of SPICE's pnjlim/fetlim: an iterate whose
// argument lands where the tangent carries no information is pulled back towards the previous iterate. Used by
// the op-amp model (devices/opamp_model.hpp) and by tanh() in behavioural expressions (engine/expr.hpp).
#pragma once
#include <algorithm>
#include <cmath>

namespace anasim {

// Newton step limiting for a tanh argument: on the flat tails the tangent carries no information, so an
// argument heading into a tail at most doubles per iteration (from inside the linear region it stops at
// +-kLin), and one heading into the opposite tail restarts from 0, the linear model.
// Returns the argument to evaluate at; `limited` tells whether it differs from xnew.
inline double limit_tanh_arg(double xnew, double xold, bool& limited) {
  constexpr double kLin = 2.0;
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

}  // namespace anasim
