// Shared helpers for the circuit tests (test_devices.cpp, test_analyses.cpp): run an in-memory SPICE deck
// through parse -> elaborate -> simulate, and fetch signals and analytic-comparison errors.
#pragma once
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/parse.hpp"
#include "engine/simulate.hpp"

namespace anasim::test {

// Parses, elaborates and simulates `spice_text` (first line is the title); returns the first failing status.
inline Status run_deck_status(const std::string& spice_text, RunResults& out) {
  ParsedNetlist pn;
  if (Status st = parse_spice_string(spice_text, "deck.cir", builtin_catalog(), pn); !st) return st;
  FlatNetlist fn;
  if (Status st = elaborate(pn, builtin_catalog(), fn); !st) return st;
  return simulate(fn, builtin_catalog(), out);
}

// Same, REQUIREs success (the error text is shown on failure).
inline RunResults run_deck(const std::string& spice_text) {
  RunResults r;
  Status st = run_deck_status(spice_text, r);
  INFO("deck:\n" << spice_text << "\nstatus: " << st.to_string());
  REQUIRE(st.ok());
  return r;
}

// The signal `name` ("v(out)", "i(v1)") of analysis k; REQUIREs that it exists.
inline const Signal& signal(const RunResults& r, size_t k, const std::string& name) {
  REQUIRE(k < r.analyses.size());
  const Signal* s = r.analyses[k].find(name);
  INFO("signal " << name << " in analysis " << k);
  REQUIRE(s != nullptr);
  return *s;
}

// Value of a signal in an .op analysis (one row).
inline double op_value(const RunResults& r, size_t k, const std::string& name) {
  const Signal& s = signal(r, k, name);
  REQUIRE(s.re.size() == 1);
  return s.re[0];
}

// Largest |sim - f(t)| over all rows of a real analysis whose sweep value satisfies t >= from.
inline double max_abs_error(const AnalysisResult& a, const Signal& s, const std::function<double(double)>& f,
                            double from = -INFINITY) {
  double worst = 0.0;
  for (size_t k = 0; k < a.sweep.size(); ++k)
    if (a.sweep[k] >= from) worst = std::max(worst, std::fabs(s.re[k] - f(a.sweep[k])));
  return worst;
}

// Linear interpolation of a signal at time t (sweep must be increasing and bracket t).
inline double interp(const AnalysisResult& a, const Signal& s, double t) {
  auto it = std::lower_bound(a.sweep.begin(), a.sweep.end(), t);
  REQUIRE(it != a.sweep.end());
  size_t k = static_cast<size_t>(it - a.sweep.begin());
  if (k == 0 || a.sweep[k] == t) return s.re[k];
  const double t0 = a.sweep[k - 1], t1 = a.sweep[k];
  return s.re[k - 1] + (s.re[k] - s.re[k - 1]) * (t - t0) / (t1 - t0);
}

// Root of a monotonically increasing f on [lo, hi] by bisection (to the resolution of double).
inline double bisect(const std::function<double(double)>& f, double lo, double hi) {
  for (int it = 0; it < 400; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    if (f(mid) > 0) hi = mid;
    else lo = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace anasim::test
