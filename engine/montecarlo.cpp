// Monte Carlo driver (see montecarlo.hpp).
#include "engine/montecarlo.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <fmt/format.h>
#include "engine/elaborate.hpp"
#include "engine/simulate.hpp"

namespace anasim {

Status run_monte_carlo(const ParsedNetlist& pn, const DeviceCatalog& catalog, int trials, unsigned long long seed,
                       McResults& out) {
  auto t0 = std::chrono::steady_clock::now();
  out = McResults{};
  out.trials = trials;
  out.seed = seed;
  std::vector<std::vector<double>> values(trials);  // [trial][measurement]
  std::vector<Status> status(trials);
  std::vector<std::pair<std::string, std::string>> names;  // from trial 0
#pragma omp parallel for schedule(dynamic)
  for (int k = 0; k < trials; ++k) {
    Variation var{seed, k};
    FlatNetlist fn;
    RunResults r;
    Status st = elaborate(pn, catalog, fn, &var);
    // Extension analyses (nn_eval, ...) run once, in the nominal run; they carry their own statistics.
    fn.analyses.erase(std::remove_if(fn.analyses.begin(), fn.analyses.end(),
                                     [](const Analysis& a) { return a.kind == AnalysisSpec::Kind::Extension; }),
                      fn.analyses.end());
    if (st) st = simulate(fn, catalog, r);
    if (!st) {
      status[k] = st;
      continue;
    }
    std::vector<std::pair<std::string, std::string>> nm;
    for (const auto& a : r.analyses)
      for (const auto& s : a.signals) {
        if (s.re.empty()) continue;
        double v = s.re.back();
        if (!s.im.empty()) v = std::hypot(s.re.back(), s.im.back());
        values[k].push_back(v);
        if (k == 0) nm.emplace_back(a.group + "/" + s.name, s.unit);
      }
    if (k == 0) names = std::move(nm);
  }
  for (int k = 0; k < trials; ++k) {
    if (!status[k].ok()) {
      Status st = status[k];
      st.errors[0].message = fmt::format("Monte Carlo trial {} (seed {}): {}", k, seed, st.errors[0].message);
      return st;
    }
  }
  for (size_t m = 0; m < names.size(); ++m) {
    McMeasurement mm;
    mm.name = names[m].first;
    mm.unit = names[m].second;
    double sum = 0;
    mm.min = std::numeric_limits<double>::infinity();
    mm.max = -mm.min;
    for (int k = 0; k < trials; ++k) {
      const double v = m < values[k].size() ? values[k][m] : std::nan("");
      mm.values.push_back(v);
      sum += v;
      mm.min = std::min(mm.min, v);
      mm.max = std::max(mm.max, v);
    }
    mm.mean = sum / trials;
    double ss = 0;
    for (double v : mm.values) ss += (v - mm.mean) * (v - mm.mean);
    mm.std = trials > 1 ? std::sqrt(ss / (trials - 1)) : 0.0;
    out.measurements.push_back(std::move(mm));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {};
}

}  // namespace anasim
