// .op driver and helpers shared by the analysis drivers.
#include <chrono>
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/newton.hpp"

namespace anasim {

Status select_outputs(const Circuit& c, const std::vector<std::string>& outputs, std::vector<int>& idx) {
  idx.clear();
  if (outputs.empty()) {
    for (int u = 0; u < c.n(); ++u)
      if (c.unknowns()[u].visible) idx.push_back(u);
    return {};
  }
  for (const auto& o : outputs) {
    int found = -1;
    for (int u = 0; u < c.n(); ++u)
      if (c.unknowns()[u].name == o) found = u;
    if (found < 0) return Status::input(fmt::format("output '{}' is not a node voltage or branch current of this circuit", o));
    idx.push_back(found);
  }
  return {};
}

std::vector<std::pair<UnknownIndex, double>> forced_ics(const Circuit& c, const FlatNetlist& fn) {
  std::vector<std::pair<UnknownIndex, double>> f;
  for (const auto& [node, v] : fn.ics) f.emplace_back(c.node_unknown(node), v);
  return f;
}

Status run_op(Circuit& c, const FlatNetlist& fn, const Analysis&, const std::vector<int>& out, AnalysisResult& res) {
  auto t0 = std::chrono::steady_clock::now();
  NewtonSolver s(c, fn.options);
  Status st = s.operating_point();
  if (!st) return st;
  res.kind = "op";
  for (int u : out) res.signals.push_back({c.unknowns()[u].name, c.unknowns()[u].is_node ? "V" : "A", {s.x()[u]}, {}});
  res.stats = s.stats();
  res.stats.timepoints = 1;
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {};
}

}  // namespace anasim
