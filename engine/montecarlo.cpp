// Monte Carlo driver (see montecarlo.hpp).
#include "engine/montecarlo.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <omp.h>
#include <fmt/format.h>
#include "engine/elaborate.hpp"
#include "engine/simulate.hpp"

namespace anasim {

namespace {

// One run of the netlist (nominal when var is null) without its extension analyses (nn_eval, ...: they run once,
// in the nominal run, and carry their own statistics): the final value of every signal, and its "group/signal"
// name and unit when `names` is given.
Status measure(const ParsedNetlist& pn, const DeviceCatalog& catalog, const Variation* var,
               std::vector<double>& values, std::vector<std::pair<std::string, std::string>>* names) {
  FlatNetlist fn;
  RunResults r;
  Status st = elaborate(pn, catalog, fn, var);
  fn.analyses.erase(std::remove_if(fn.analyses.begin(), fn.analyses.end(),
                                   [](const Analysis& a) { return a.kind == AnalysisSpec::Kind::Extension; }),
                    fn.analyses.end());
  if (st) st = simulate(fn, catalog, r);
  if (!st) return st;
  values.clear();
  for (const auto& a : r.analyses)
    for (const auto& s : a.signals) {
      if (s.re.empty()) continue;
      values.push_back(s.im.empty() ? s.re.back() : std::hypot(s.re.back(), s.im.back()));
      if (names) names->emplace_back(a.group + "/" + s.name, s.unit);
    }
  return {};
}

}  // namespace

Status run_monte_carlo(const ParsedNetlist& pn, const DeviceCatalog& catalog, int trials, unsigned long long seed,
                       McResults& out, const McRunOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  out = McResults{};
  out.trials = trials;
  out.seed = seed;
  RunIdentity id = opt.identity;
  id.add("command", "run --mc");
  id.add("arguments", fmt::format("trials={} seed={}", trials, seed));
  id.add("version", binary_version());
  dist::ItemTable table(trials);  // [trial] -> one value per measurement
  if (!opt.checkpoint.empty() && dist::is_root()) {
    long resumed = 0;
    if (Status st = load_checkpoint(opt.checkpoint, id, table, &resumed); !st) return st;
  }
  auto compute = [&](const std::vector<long>& items, std::vector<std::vector<double>>& res) -> Status {
    std::vector<Status> status(items.size());
#pragma omp parallel for schedule(dynamic)
    for (long j = 0; j < static_cast<long>(items.size()); ++j) {
      const Variation var{seed, static_cast<int>(items[j])};
      status[j] = measure(pn, catalog, &var, res[j], nullptr);
    }
    for (size_t j = 0; j < items.size(); ++j)
      if (!status[j].ok()) {
        Status st = status[j];
        st.errors[0].message = fmt::format("Monte Carlo trial {} (seed {}): {}", items[j], seed, st.errors[0].message);
        return st;
      }
    return {};
  };
  auto after_round = [&](const dist::ItemTable& t) -> Status {
    return opt.checkpoint.empty() || !dist::is_root() ? Status{} : save_checkpoint(opt.checkpoint, id, t);
  };
  const int chunk = dist::chunk_size(trials, omp_get_max_threads());
  if (Status st = dist::run_items(table, chunk, compute, after_round, "trials"); !st) return st;
  // Names and units of the measurements: those of the nominal run, whose signals are the trials' signals.
  std::vector<std::pair<std::string, std::string>> names;
  std::vector<double> nominal;
  if (Status st = measure(pn, catalog, nullptr, nominal, &names); !st) return st;
  for (size_t m = 0; m < names.size(); ++m) {
    McMeasurement mm;
    mm.name = names[m].first;
    mm.unit = names[m].second;
    double sum = 0;
    mm.min = std::numeric_limits<double>::infinity();
    mm.max = -mm.min;
    for (int k = 0; k < trials; ++k) {
      const std::vector<double>& values = table.values[k];
      const double v = m < values.size() ? values[m] : std::nan("");
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
