// Top-level entry points: parse -> elaborate -> build -> run every analysis.
#pragma once
#include <memory>
#include <string>
#include "engine/circuit.hpp"
#include "engine/elaborate.hpp"
#include "engine/results.hpp"

namespace anasim {

// Runs every analysis of an elaborated netlist on a freshly built circuit (none when the netlist has no devices,
// which elaboration allows only when every analysis is an extension); extension analyses run in file order
// through AnalysisType::run. If `keep` is given, the
// circuit is moved there instead of being destroyed (callers that exit right after can skip teardown).
Status simulate(const FlatNetlist& fn, const DeviceCatalog& catalog, RunResults& out,
                std::unique_ptr<Circuit>* keep = nullptr);

// Parses the file (extension picks the format), elaborates and simulates it. `analyses` (may be null): the
// extension analysis kinds the netlist may use.
Status simulate_file(const std::string& path, const DeviceCatalog& catalog, RunResults& out,
                     const AnalysisCatalog* analyses = nullptr);

}  // namespace anasim
