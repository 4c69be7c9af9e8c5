// Monte Carlo tolerance analysis: every trial re-elaborates the netlist with its parameter draws
// (elaborate.hpp Variation), simulates it, and keeps one scalar per signal and analysis.
#pragma once
#include "engine/device.hpp"
#include "engine/netlist.hpp"
#include "engine/results.hpp"

namespace anasim {

// Runs `trials` trials (in parallel over OpenMP threads; identical results for any thread count).
// Measurements: for every analysis and signal of the netlist, its op value or its value at the last sweep
// point / timepoint (AC: magnitude). The first failing trial aborts with its error, prefixed "trial k".
Status run_monte_carlo(const ParsedNetlist& pn, const DeviceCatalog& catalog, int trials, unsigned long long seed,
                       McResults& out);

}  // namespace anasim
