// Time functions of independent sources: PULSE, SIN, EXP and PWL with ngspice's semantics and defaults.
#pragma once
#include <vector>

namespace anasim {

struct Waveform {
  enum class Kind { None, Pulse, Sin, Exp, Pwl };
  Kind kind = Kind::None;
  std::vector<double> p;  // the parameters as written (PULSE: v1 v2 td tr tf pw per; PWL: t1 v1 t2 v2 ...)

  // Value at time t [s]; tstep/tstop [s] supply ngspice's defaults for omitted timing parameters.
  double value(double t, double tstep, double tstop) const;
  // Next corner strictly after t [s] (+inf if none), for breakpoints.
  double next_breakpoint(double t, double tstep, double tstop) const;
  // Short validation message, empty if the parameter list is acceptable.
  const char* check() const;
};

}  // namespace anasim
