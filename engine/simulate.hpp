// Top-level entry points: parse -> elaborate -> build -> run every analysis.
#pragma once
#include <memory>
#include <string>
#include "engine/circuit.hpp"
#include "engine/elaborate.hpp"
#include "engine/results.hpp"

namespace anasim {

// Runs every analysis of an elaborated netlist on a freshly built circuit. If `keep` is given, the
// circuit is moved there instead of being destroyed (callers that exit right after can skip teardown).
Status simulate(const FlatNetlist& fn, const DeviceCatalog& catalog, RunResults& out,
                std::unique_ptr<Circuit>* keep = nullptr);

// Parses the file (extension picks the format), elaborates and simulates it.
Status simulate_file(const std::string& path, const DeviceCatalog& catalog, RunResults& out);

}  // namespace anasim
