// Monte Carlo tolerance analysis: every trial re-elaborates the netlist with its parameter draws
// (elaborate.hpp Variation), simulates it, and keeps one scalar per signal and analysis. Trials are spread over
// MPI ranks and OpenMP threads (engine/distribute.hpp) and can be checkpointed (engine/checkpoint.hpp).
#pragma once
#include <string>
#include "engine/checkpoint.hpp"
#include "engine/device.hpp"
#include "engine/netlist.hpp"
#include "engine/results.hpp"

namespace anasim {

struct McRunOptions {
  std::string checkpoint;   // checkpoint file, rewritten after every round of trials ("" = none)
  RunIdentity identity;     // the caller's part of the checkpoint's identity (e.g. the netlist file's digest);
                            // trials, seed and the binary's version are added by run_monte_carlo
};

// Runs `trials` trials (over MPI ranks when started by mpirun, and OpenMP threads; identical results for any
// number of ranks and threads). Measurements: for every analysis and signal of the netlist, its op value or its
// value at the last sweep point / timepoint (AC: magnitude). The first failing trial aborts with its error,
// prefixed "trial k". With opt.checkpoint, trials already in the checkpoint are not run again.
// Collective under MPI: every rank calls it and every rank receives the full results.
Status run_monte_carlo(const ParsedNetlist& pn, const DeviceCatalog& catalog, int trials, unsigned long long seed,
                       McResults& out, const McRunOptions& opt = {});

}  // namespace anasim
