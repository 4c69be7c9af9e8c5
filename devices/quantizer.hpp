// The mid-tread quantizer shared by the DAC's input coding and the ADC's conversion (devices/dac.hpp, adc.hpp).
#pragma once
#include <algorithm>
#include <cmath>

namespace anasim {

// Nearest code to u [LSB] (code centres at integers, halves away from zero), clipped to 0 .. top; NaN gives 0.
// Branch-free in double, so that loops over pixels and outputs vectorize: uc is u held in [0, top] (0 below 0.5
// and for NaN), t its truncation, rounded up when uc - t >= 0.5 (exact: uc < 2^53).
inline long quantize_code(double u, double top) {
  const double uc = u >= 0.5 ? std::min(u, top) : 0.0;
  const double t = std::trunc(uc);
  return static_cast<long>(uc - t >= 0.5 ? t + 1 : t);
}

}  // namespace anasim
