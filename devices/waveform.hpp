// Time functions of independent sources: PULSE, SIN, EXP, PWL, AM and SFFM with ngspice 39's semantics and
// defaults.
#pragma once
#include <vector>

namespace anasim {

struct Waveform {
  enum class Kind { None, Pulse, Sin, Exp, Pwl, Am, Sffm };
  Kind kind = Kind::None;
  // The parameters as written (PULSE: v1 v2 td tr tf pw per np; PWL: t1 v1 t2 v2 ...; AM: va vo mf fc td
  // phasec phases; SFFM: vo va fc mdi fs phasec phases).
  std::vector<double> p;

  // Value at time t [s]; tstep/tstop [s] supply ngspice's defaults for omitted timing parameters.
  double value(double t, double tstep, double tstop) const;
  // Next corner strictly after t [s] (+inf if none), for breakpoints.
  double next_breakpoint(double t, double tstep, double tstop) const;
  // Short validation message, empty if the parameter list is acceptable.
  const char* check() const;
};

}  // namespace anasim
