// anasim.run's C++ side: parse a netlist (file or text), elaborate, run every analysis and the optional Monte
// Carlo exactly as `anasim run` does, and hand the RunResults to Python as dicts of NumPy arrays.
#include <memory>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/montecarlo.hpp"
#include "engine/parse.hpp"
#include "engine/simulate.hpp"
#include "nn/analyses.hpp"
#include "python/src/bindings.hpp"

namespace anasim::py_bind {

namespace {

struct RunRequest {
  std::string source;          // a path, or the netlist text itself when is_text
  bool is_text = false;
  std::string format;          // text only: "yaml" or "spice"
  std::string name;            // text only: name used in file:line:col messages and for relative includes
  int mc_trials = 0;           // 0 = no Monte Carlo
  unsigned long long seed = 1;
  bool power = false;          // power probes p(...) and energies e(...), as `anasim run --power`
  std::string data_dir;        // data sets of nn_eval / nn_mc ("" = $ANASIM_DATA, then the defaults)
};

// The same steps as `anasim run` (cli/main.cpp cmd_run) without the output files.
Status run_request(const RunRequest& rq, RunResults& r, std::vector<std::string>& warnings) {
  AnalysisCatalog analyses;
  nn::add_analyses(analyses, rq.data_dir);
  ParsedNetlist pn;
  Status ps;
  if (!rq.is_text)
    ps = parse_netlist(rq.source, builtin_catalog(), pn, &analyses);
  else if (rq.format == "yaml")
    ps = parse_yaml_string(rq.source, rq.name, builtin_catalog(), pn, &analyses);
  else if (rq.format == "spice")
    ps = parse_spice_string(rq.source, rq.name, builtin_catalog(), pn);
  else
    return Status::input("format must be 'yaml' or 'spice', got '" + rq.format + "'");
  if (!ps) return ps;
  warnings.insert(warnings.end(), ps.warnings.begin(), ps.warnings.end());
  FlatNetlist fn;
  Status es = elaborate(pn, builtin_catalog(), fn);
  if (!es) return es;
  warnings.insert(warnings.end(), es.warnings.begin(), es.warnings.end());
  if (rq.power) fn.options.power = true;
  if (Status st = simulate(fn, builtin_catalog(), r); !st) return st;
  if (rq.mc_trials > 0)
    if (Status st = run_monte_carlo(pn, builtin_catalog(), rq.mc_trials, rq.seed, r.mc); !st) return st;
  return {};
}

py::dict analysis_dict(const AnalysisResult& a) {
  py::dict d;
  d["kind"] = a.kind;
  d["group"] = a.group;
  d["sweep_name"] = a.sweep_name;
  d["sweep_unit"] = a.sweep_unit;
  d["sweep"] = to_array(a.sweep);
  d["sweep2_name"] = a.sweep2_name;
  d["sweep2"] = to_array(a.sweep2);
  py::list signals;
  for (const Signal& s : a.signals)
    signals.append(py::make_tuple(s.name, s.unit, to_array(s.re), s.im.empty() ? py::object(py::none())
                                                                               : py::object(to_array(s.im))));
  d["signals"] = signals;
  py::list scalars;
  for (const ResultScalar& x : a.scalars) scalars.append(py::make_tuple(x.name, x.unit, x.value));
  d["scalars"] = scalars;
  d["notes"] = a.notes;
  py::dict stats;
  stats["newton_iterations"] = a.stats.newton_iterations;
  stats["factorizations"] = a.stats.factorizations;
  stats["refactorizations"] = a.stats.refactorizations;
  stats["solves"] = a.stats.solves;
  stats["cg_iterations"] = a.stats.cg_iterations;
  stats["lu_reuses"] = a.stats.lu_reuses;
  stats["gmres_iterations"] = a.stats.gmres_iterations;
  stats["timepoints"] = a.stats.timepoints;
  stats["rejected"] = a.stats.rejected;
  stats["seconds"] = a.stats.seconds;
  d["stats"] = stats;
  return d;
}

py::dict mc_dict(const McResults& mc) {
  py::dict d;
  d["trials"] = mc.trials;
  d["seed"] = mc.seed;
  d["seconds"] = mc.seconds;
  py::list ms;
  for (const McMeasurement& m : mc.measurements)
    ms.append(py::make_tuple(m.name, m.unit, to_array(m.values)));
  d["measurements"] = ms;
  return d;
}

}  // namespace

void bind_circuits(py::module_& m) {
  m.def(
      "run_netlist",
      [](const std::string& source, bool is_text, const std::string& format, const std::string& name, int mc,
         unsigned long long seed, bool power, const std::string& data_dir) {
        // The netlist's text is freed when the call returns: the results hold no source locations, and an error is
        // formatted (raise_if_failed) before the scope ends.
        SourceScope scope;
        RunRequest rq{source, is_text, format, name, mc, seed, power, data_dir};
        if (mc < 0) raise_if_failed(Status::input("mc must be >= 0"));
        RunResults r;
        std::vector<std::string> warnings;
        raise_if_failed(without_gil([&] { return run_request(rq, r, warnings); }));
        py::dict d;
        d["title"] = r.title;
        d["netlist"] = r.netlist;
        d["unknowns"] = r.unknowns;
        py::list analyses;
        for (const auto& a : r.analyses) analyses.append(analysis_dict(a));
        d["analyses"] = analyses;
        d["mc"] = r.mc.trials > 0 ? py::object(mc_dict(r.mc)) : py::object(py::none());
        d["warnings"] = warnings;
        return d;
      },
      py::arg("source"), py::arg("is_text"), py::arg("format"), py::arg("name"), py::arg("mc"), py::arg("seed"),
      py::arg("power"), py::arg("data_dir"),
      "Parses, elaborates and simulates a netlist (a path, or text with format 'yaml'/'spice'); returns the raw "
      "results (anasim.run wraps them).");
}

}  // namespace anasim::py_bind
