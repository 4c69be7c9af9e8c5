// parse -> elaborate -> build -> analyses (see simulate.hpp).
#include "engine/simulate.hpp"
#include <algorithm>
#include <chrono>
#include <malloc.h>
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/measure.hpp"
#include "engine/parse.hpp"

namespace anasim {

bool has_transient(const FlatNetlist& fn) {
  return std::any_of(fn.analyses.begin(), fn.analyses.end(),
                     [](const Analysis& a) { return a.kind == AnalysisSpec::Kind::Tran; });
}

bool releases_devices(const FlatNetlist& fn) {
  if (fn.options.power || !has_transient(fn)) return false;
  for (const std::string& o : fn.outputs)
    if (!o.empty() && o[0] == '@') return false;
  for (const auto& a : fn.analyses)
    if (a.power || a.kind == AnalysisSpec::Kind::Dc || a.kind == AnalysisSpec::Kind::Extension) return false;
  return true;
}

Status simulate(const FlatNetlist& fn, const DeviceCatalog& catalog, RunResults& out, std::unique_ptr<Circuit>* keep,
                const StreamFactory* stream, std::vector<FlatDevice>* release) {
  auto owned = std::make_unique<Circuit>();
  Circuit& c = *owned;
  struct Keep {  // hands the circuit to the caller on every return path
    std::unique_ptr<Circuit>& owned;
    std::unique_ptr<Circuit>* keep;
    ~Keep() { if (keep) *keep = std::move(owned); }
  } keeper{owned, keep};
  const bool circuit = !fn.devices.empty();  // a netlist of extension analyses only may have none
  if (circuit)
    if (Status st = c.build(fn, catalog); !st) return st;
  if (release == &fn.devices && releases_devices(fn)) {
    std::vector<FlatDevice>().swap(*release);
    ::malloc_trim(0);
  }
  out.title = fn.title;
  out.netlist = fn.file;
  out.unknowns = circuit ? c.n() : 0;
  std::vector<int> idx;
  if (circuit)
    if (Status st = select_outputs(c, fn.outputs, idx); !st) return st;
  std::map<std::string, int> count;
  for (const auto& a : fn.analyses) {
    AnalysisResult r;
    Status st;
    switch (a.kind) {
      case AnalysisSpec::Kind::Op: st = run_op(c, fn, a, idx, r); break;
      case AnalysisSpec::Kind::Dc: {
        bool temperature = false;
        for (const auto& sw : a.sweeps) temperature = temperature || sw.temperature;
        st = fn.temper && temperature ? run_dc_temper(fn, catalog, a, r) : run_dc(c, fn, a, idx, r);
        break;
      }
      case AnalysisSpec::Kind::Tran: {
        RowSink* sink = nullptr;
        if (stream && *stream && fn.measures.empty()) {
          const int k = count["tran"] + 1;
          if (Status fs = (*stream)(k == 1 ? std::string("tran") : fmt::format("tran{}", k), sink); !fs) return fs;
        }
        st = run_tran(c, fn, a, idx, r, sink);
        break;
      }
      case AnalysisSpec::Kind::Ac: st = run_ac(c, fn, a, idx, r); break;
      case AnalysisSpec::Kind::Extension: {
        AnalysisRequest req;
        req.netlist = &fn;
        req.circuit = circuit ? &c : nullptr;
        req.args = &a.args;
        req.loc = a.loc;
        const auto t0 = std::chrono::steady_clock::now();
        st = a.type->run(req, r);
        r.kind = a.type->name;
        r.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        break;
      }
    }
    if (!st) return st;
    if (!fn.measures.empty() && (r.kind == "tran" || r.kind == "ac" || r.kind == "dc")) {
      Scope scope;  // .meas values may name top-level parameters
      for (const auto& [name, v] : fn.params) scope.set(name, v);
      if (Status ms = run_measures(fn.measures, scope, r); !ms) return ms;
    }
    int k = ++count[r.kind];
    r.group = k == 1 ? r.kind : fmt::format("{}{}", r.kind, k);
    out.analyses.push_back(std::move(r));
  }
  return {};
}

Status simulate_file(const std::string& path, const DeviceCatalog& catalog, RunResults& out,
                     const AnalysisCatalog* analyses) {
  ParsedNetlist pn;
  if (Status st = parse_netlist(path, catalog, pn, analyses); !st) return st;
  FlatNetlist fn;
  if (Status st = elaborate(pn, catalog, fn); !st) return st;
  return simulate(fn, catalog, out);
}

}  // namespace anasim
