// Analysis drivers: options and output handling around the numerical core (newton.hpp, integrator.hpp).
#pragma once
#include "engine/circuit.hpp"
#include "engine/elaborate.hpp"
#include "engine/results.hpp"

namespace anasim {

// Which unknowns are written: the requested outputs ("v(x)", "i(v1)"), or every visible unknown.
// Unknown names in `outputs` are an input error.
Status select_outputs(const Circuit& c, const std::vector<std::string>& outputs, std::vector<int>& idx);

// Each driver fills `res` (signals, sweep, stats) for one analysis of an already built circuit.
Status run_op(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res);
Status run_dc(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res);
Status run_tran(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res);
Status run_ac(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res);

// Appends one row of output per call: the selected unknowns, then every device probe (ADC codes, ...).
class Recorder {
 public:
  // Creates the signals in res (names and units). `with_probes` = false for AC (complex, unknowns only).
  Recorder(const Circuit& c, const std::vector<int>& out, AnalysisResult& res, bool with_probes = true);
  void record(const double* x, double t);
 private:
  const Circuit& c_;
  const std::vector<int>& out_;
  AnalysisResult& res_;
  std::vector<const Device*> probing_;
  std::vector<double> buf_;
};

// Shared by the drivers: .ic values as forced unknowns.
std::vector<std::pair<UnknownIndex, double>> forced_ics(const Circuit& c, const FlatNetlist& fn);

}  // namespace anasim
