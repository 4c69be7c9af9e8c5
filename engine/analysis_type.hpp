// Analysis kinds defined above the engine (e.g. `nn_eval` in nn/): a name, a parameter table and a run
// function. The YAML reader accepts `- {type: <name>, <param>: value, ...}` for every kind in the
// AnalysisCatalog it is given, checking keys against the table (file:line:col errors); elaboration evaluates
// the values against the table (expressions over `params:`, ranges, Text values kept raw) and calls check();
// simulate() calls run() in file order, between the engine's own analyses. The engine never includes the code
// that implements them: the front end assembles the catalog (cli/), so dependencies stay cli -> nn -> engine.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "engine/param.hpp"
#include "engine/results.hpp"

namespace anasim {

class Circuit;
struct FlatNetlist;

// What one check or run of an extension analysis sees.
struct AnalysisRequest {
  const FlatNetlist* netlist = nullptr;  // elaborated netlist: file, title, top-level params, other sections
                                         // (check(): devices and options done, analyses still being elaborated)
  Circuit* circuit = nullptr;            // the built circuit; nullptr in check() and when there are no devices
  const ParamValues* args = nullptr;     // evaluated arguments, indexed like the type's params
  SourceLoc loc;                         // the analysis entry in the netlist
};

class AnalysisType {
 public:
  virtual ~AnalysisType() = default;
  std::string name;         // lower-case `type:` value, e.g. "nn_eval"; must not be op, dc, tran or ac
  std::string description;  // one line for help and messages
  ParamTable params;        // arguments (Text kind for file names and words; no tolerances)
  // Validates the evaluated arguments during elaboration, before any analysis runs (required arguments,
  // enumerations, files that must exist). Errors are Input errors located at an argument (args->loc) or at
  // req.loc (the analysis entry).
  virtual Status check(const AnalysisRequest& /*req*/) const { return {}; }
  // Runs the analysis. Fills out.sweep_name/sweep/signals (one row per sweep point), out.scalars, out.notes and
  // may fill out.stats (timepoints = rows); kind, group and stats.seconds (wall time) are set by the caller. Errors: Input (bad data, missing files) -> exit 2, Numerical -> exit 3.
  virtual Status run(const AnalysisRequest& req, AnalysisResult& out) const = 0;
};

// The extension analyses a front end offers (a plain list; no static self-registration).
class AnalysisCatalog {
 public:
  void add(std::unique_ptr<AnalysisType> t) { types_.push_back(std::move(t)); }
  // nullptr if `name` (lower-case) is not in the catalog.
  const AnalysisType* find(const std::string& name) const {
    for (const auto& t : types_)
      if (t->name == name) return t.get();
    return nullptr;
  }
  std::vector<const AnalysisType*> all() const {
    std::vector<const AnalysisType*> v;
    for (const auto& t : types_) v.push_back(t.get());
    return v;
  }

 private:
  std::vector<std::unique_ptr<AnalysisType>> types_;
};

}  // namespace anasim
