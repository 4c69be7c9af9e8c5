// Elaboration: evaluates parameters, flattens subcircuits and checks the netlist against the device
// catalog, producing a flat list of device descriptions ready to be instantiated.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "engine/analysis_type.hpp"
#include "engine/device.hpp"
#include "engine/linear_solver.hpp"
#include "engine/netlist.hpp"
#include "engine/param.hpp"

namespace anasim {

// One flattened device. Names inside subcircuits are "<instance path>.<name>", e.g. "x1.r2".
struct FlatDevice {
  std::string name;
  const DeviceType* type = nullptr;
  std::vector<NodeId> nodes;             // size type->pins.size()
  ParamValues params;                    // instance parameters (evaluated, range-checked)
  ParamValues model;                     // model parameters, if the type takes a model; no table (nothing
                                         // allocated: every model parameter at its default) when the model is
                                         // optional (R, C, op-amp) and the instance names none
  std::string model_name;                // flattened model name, for export
  std::string control;                   // flattened controlling-source name (F/H)
  const DeviceType* control_type = nullptr;  // type of the controlling device (a V source or an inductor)
  SourceLoc control_loc;                 // where the controlling-source name is written (F/H)
  SourceLoc loc;
};

struct Options {
  double reltol = 1e-3;     // relative tolerance
  double abstol = 1e-12;    // [A] current tolerance
  double vntol = 1e-6;      // [V] voltage tolerance
  double chgtol = 1e-14;    // [C] charge tolerance (LTE)
  double trtol = 7.0;       // LTE overestimation factor
  double gmin = 1e-12;      // [S]
  int itl1 = 100;           // DC Newton iteration limit
  int itl4 = 10;            // transient Newton iteration limit per step
  Integration method = Integration::Trapezoidal;
  int maxord = 2;
  bool klu = true;          // accepted for ngspice compatibility (the sparse LU is chosen by `solver`)
  LinearSolver solver = LinearSolver::Auto;  // sparse LU of the MNA matrix (engine/sparse_lu.hpp)
  // Unknowns from which a nonlinear circuit's Newton iterations first solve with the previous factors as GMRES's
  // preconditioner, and factor only when that does not converge (engine/krylov.hpp; 0: never).
  long lureuse = 50'000;
  bool power = false;       // power probes p(...) (and e(...) in tran) in every op, dc and tran (.options power)
  long maxdevices = 10'000'000;  // devices after subcircuit expansion (a fan-out stops here with a message)
  double temp = 27.0;       // [C] circuit temperature (.temp, .options temp)
  double tnom = 27.0;       // [C] nominal temperature of model parameters (.options tnom)
  Temperature temperature() const { return {temp + Temperature::kCtoK, tnom + Temperature::kCtoK}; }
};

struct DcSweep {
  std::string source;  // flattened device name, or "temp"
  bool temperature = false;  // the swept value is the circuit temperature [C] (.dc temp ...), not a source's
  double start = 0, stop = 0, step = 0;
  SourceLoc loc;
};

struct Analysis {
  AnalysisSpec::Kind kind = AnalysisSpec::Kind::Op;
  std::vector<DcSweep> sweeps;   // DC: inner first
  double tstep = 0, tstop = 0, tstart = 0, tmax = 0;  // TRAN [s] (tmax 0 = default)
  bool uic = false;
  bool power = false;            // OP, DC, TRAN: power probes (or Options::power for every analysis)
  std::string variation;         // AC: "dec" | "oct" | "lin"
  int points = 0;
  double fstart = 0, fstop = 0;  // AC [Hz]
  const AnalysisType* type = nullptr;  // Extension: the kind (analysis_type.hpp)
  ParamValues args;                    // Extension: evaluated arguments, indexed like type->params
  SourceLoc loc;
};

// Monte Carlo trial: parameters with a tolerance are drawn from their distribution. The draw for one
// parameter depends only on (seed, trial, device name, parameter name), so results do not depend on
// device order or on how trials are distributed over threads.
struct Variation {
  uint64_t seed = 0;
  int trial = 0;
};

// A netlist whose expressions read `temper` and that has a .dc temp sweep: the sweep elaborates it again at each
// of its temperatures (run_dc_temper, engine/an_dc.cpp), from this copy and with the same trial's draw.
struct TemperSource {
  ParsedNetlist netlist;
  std::optional<Variation> variation;  // the Monte Carlo trial elaborate() drew, if any
};

struct FlatNetlist {
  std::string title;
  std::string file;
  std::vector<std::string> node_names;   // index = NodeId; [0] = "0"
  std::vector<FlatDevice> devices;
  std::vector<Analysis> analyses;
  Options options;
  std::vector<std::pair<NodeId, double>> ics;  // .ic node voltages [V]
  // Newton's starting point for the operating point of .tran (without uic) [V], by circuit node name (device-internal
  // nodes included, "utia0_3#p"); nodes not named start at 0 V. Unlike ics nothing is forced: a warm start from a
  // known nearby state (the NN fast path's DC solution), falling back to the cold-start strategy. Set by callers
  // that build netlists in code; no netlist syntax.
  std::vector<std::pair<std::string, double>> guess;
  std::vector<std::string> outputs;            // requested signals, empty = all
  std::vector<MeasureSpec> measures;           // .meas requests, run on each analysis of their kind
  std::map<std::string, double> params;        // top-level parameter values
  std::vector<ParsedSection> sections;         // top-level sections other layers read; see ParsedNetlist
  std::shared_ptr<const TemperSource> temper;  // set when a .dc temp sweep must re-evaluate `temper`, else null

  // The node names of fd's pins, in pin order ("0" for ground).
  std::vector<std::string> pin_names(const FlatDevice& fd) const {
    std::vector<std::string> names;
    names.reserve(fd.nodes.size());
    for (NodeId id : fd.nodes) names.push_back(node_names[id.v]);
    return names;
  }
  // The section named `name`, nullptr if absent.
  const ParsedSection* section(std::string_view name) const {
    for (const ParsedSection& s : sections)
      if (s.name == name) return &s;
    return nullptr;
  }
};

// Evaluates and flattens `pn`. Errors are located in the source. With `var`, toleranced parameters are
// sampled for that trial; without it every parameter takes its nominal value. Netlists of 20,000 or more
// top-level devices and no subcircuit instances are elaborated on two threads, with the same result (and the
// same first error) as on one. On an error, `out` holds an unspecified part of the netlist.
Status elaborate(const ParsedNetlist& pn, const DeviceCatalog& catalog, FlatNetlist& out,
                 const Variation* var = nullptr);

// Every option `.options` and YAML `options:` accept, bound to Options. Options of other simulators that cannot
// change a result are listed with no_effect (they warn); any other name is an error.
const ParamTable& option_table();

// Deterministic random stream for one named quantity of one trial (used by elaborate and by devices
// with their own statistical models).
uint64_t variation_seed(uint64_t seed, int trial, const std::string& owner, const std::string& what);

}  // namespace anasim
