// Analysis results: one table per analysis (sweep variable + one column per signal) and solver statistics.
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include "engine/types.hpp"

namespace anasim {

struct SolverStats {
  long newton_iterations = 0;   // total Newton iterations (linear solves inside Newton)
  long factorizations = 0;      // full numeric factorizations (klu_factor)
  long refactorizations = 0;    // klu_refactor calls
  long solves = 0;              // forward/back substitutions
  long timepoints = 0;          // accepted timepoints (tran) / sweep points (dc, ac)
  long rejected = 0;            // rejected timesteps (tran)
  double seconds = 0.0;         // wall time of the analysis [s]
  double kcl_residual = -1.0;   // [A] op: largest |A x - b| over the node (KCL) rows of the last linear system
                                // at the solution (NewtonSolver::kcl_residual); -1 = not computed
  bool multifrontal = false;    // the sparse LU was UMFPACK's (solver auto or umfpack), not KLU's
  long cg_iterations = 0;       // conjugate-gradient steps (solver auto or pcg: engine/nodal_pcg.hpp)
  long lu_reuses = 0;           // Newton solves with earlier factors as GMRES's preconditioner (engine/krylov.hpp)
  long gmres_iterations = 0;    // their GMRES iterations (failed tries too)
  void add(const SolverStats& o) {
    newton_iterations += o.newton_iterations; factorizations += o.factorizations;
    refactorizations += o.refactorizations; solves += o.solves; timepoints += o.timepoints;
    rejected += o.rejected; seconds += o.seconds; cg_iterations += o.cg_iterations;
    lu_reuses += o.lu_reuses; gmres_iterations += o.gmres_iterations;
    kcl_residual = std::max(kcl_residual, o.kcl_residual);
    multifrontal = multifrontal || o.multifrontal;
  }
};

struct Signal {
  std::string name;          // lower-case ngspice-style: "v(out)", "i(v1)"
  std::string unit;          // "V" or "A"
  std::vector<double> re;    // one value per row
  std::vector<double> im;    // AC only (same size as re), else empty
};

// One scalar result of an analysis (an accuracy, a count): HDF5 group attribute, CSV <group>_summary.csv.
struct ResultScalar {
  std::string name;          // lower-case identifier, e.g. "analog_accuracy"; not one of the group's own HDF5
                             // attributes (kind, sweep, sweep2, notes, or a SolverStats field name)
  std::string unit;          // "%", "s", "" for counts
  double value = 0;
};

// One .meas result (engine/measure.hpp): a failed measurement (no crossing in range, a signal the analysis
// lacks) has value NaN and says why in `error`.
struct MeasureResult {
  std::string name;    // lower-case .meas name
  std::string unit;    // unit of the value: "s", "Hz", "V", "A", "dB", "rad", "V*s", ...
  double value = 0;
  std::string error;   // empty when the measurement succeeded
};

struct AnalysisResult {
  std::string kind;          // "op", "dc", "tran", "ac", or an extension analysis name ("nn_eval")
  std::string group;         // output name: "op", "dc", "tran2", ...
  std::string sweep_name;    // "time", "frequency", swept source name; empty for op
  std::string sweep_unit;    // "s", "Hz", "V"/"A"
  std::vector<double> sweep; // one per row (empty for op)
  std::vector<double> sweep2;      // nested DC sweep: outer source value per row (else empty)
  std::string sweep2_name;
  std::vector<Signal> signals;
  std::vector<ResultScalar> scalars;  // summary values (extension analyses)
  std::vector<std::string> notes;     // summary lines in words (extension analyses: inputs used), HDF5 "notes"
  std::vector<MeasureResult> measures;  // .meas results on this analysis, in deck order
  // The rows went to an output stream (RowSink) while the analysis ran: `signals` hold the names and units only,
  // `sweep` is empty, and the stream's file is the table.
  bool streamed = false;
  SolverStats stats;
  int rows() const { return signals.empty() ? 0 : static_cast<int>(signals[0].re.size()); }
  bool complex() const { return kind == "ac"; }
  const Signal* find(const std::string& name) const {
    for (const auto& s : signals) if (s.name == name) return &s;
    return nullptr;
  }
};

// Monte Carlo: one scalar per trial for every measurement, with summary statistics.
struct McMeasurement {
  std::string name;            // "<analysis group>/<signal>", e.g. "op/v(out)", "tran/v(out)" (final value)
  std::string unit;
  std::vector<double> values;  // one per trial, in trial order
  double mean = 0, std = 0, min = 0, max = 0;  // std: sample standard deviation (n - 1)
};

struct McResults {
  int trials = 0;              // 0 = no Monte Carlo run
  unsigned long long seed = 0;
  double seconds = 0;
  std::vector<McMeasurement> measurements;
};

// Receives an analysis's rows while it runs, in place of the result keeping them (a transient's table streamed
// to its output file: memory independent of the number of time points). begin() once, before any rows, with the
// result's columns complete (sweep name, signals' names and units); rows() in order, each row the sweep value and
// then one value per signal; end() after the last. rows() and begin() return false once the sink has failed
// (e.g. a full disk): the analysis stops, and end() returns the failure.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual bool begin(const AnalysisResult& columns) = 0;
  virtual bool rows(const double* data, size_t n, size_t width) = 0;  // n rows of `width` values, row-major
  virtual Status end() = 0;
};

struct RunResults {
  std::string title;
  std::string netlist;      // input file path
  int unknowns = 0;
  std::vector<AnalysisResult> analyses;  // the nominal run
  McResults mc;
};

}  // namespace anasim
