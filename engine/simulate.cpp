// parse -> elaborate -> build -> analyses (see simulate.hpp).
#include "engine/simulate.hpp"
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/parse.hpp"

namespace anasim {

Status simulate(const FlatNetlist& fn, const DeviceCatalog& catalog, RunResults& out, std::unique_ptr<Circuit>* keep) {
  auto owned = std::make_unique<Circuit>();
  Circuit& c = *owned;
  struct Keep {  // hands the circuit to the caller on every return path
    std::unique_ptr<Circuit>& owned;
    std::unique_ptr<Circuit>* keep;
    ~Keep() { if (keep) *keep = std::move(owned); }
  } keeper{owned, keep};
  if (Status st = c.build(fn, catalog); !st) return st;
  out.title = fn.title;
  out.netlist = fn.file;
  out.unknowns = c.n();
  std::vector<int> idx;
  if (Status st = select_outputs(c, fn.outputs, idx); !st) return st;
  std::map<std::string, int> count;
  for (const auto& a : fn.analyses) {
    AnalysisResult r;
    Status st;
    switch (a.kind) {
      case AnalysisSpec::Kind::Op: st = run_op(c, fn, a, idx, r); break;
      case AnalysisSpec::Kind::Dc: st = run_dc(c, fn, a, idx, r); break;
      case AnalysisSpec::Kind::Tran: st = run_tran(c, fn, a, idx, r); break;
      case AnalysisSpec::Kind::Ac: st = run_ac(c, fn, a, idx, r); break;
    }
    if (!st) return st;
    int k = ++count[r.kind];
    r.group = k == 1 ? r.kind : fmt::format("{}{}", r.kind, k);
    out.analyses.push_back(std::move(r));
  }
  return {};
}

Status simulate_file(const std::string& path, const DeviceCatalog& catalog, RunResults& out) {
  ParsedNetlist pn;
  if (Status st = parse_netlist(path, catalog, pn); !st) return st;
  FlatNetlist fn;
  if (Status st = elaborate(pn, catalog, fn); !st) return st;
  return simulate(fn, catalog, out);
}

}  // namespace anasim
