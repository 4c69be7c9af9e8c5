// Top-level entry points: parse -> elaborate -> build -> run every analysis.
#pragma once
#include <functional>
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
// `stream` (may be null): where a transient's rows may go while it runs instead of into its result (an output
// file written as the run goes: memory independent of the time points). Asked with the analysis's output group
// ("tran", "tran2", ...) for each .tran whose rows nothing else reads (no .meas in the netlist); it sets the sink,
// or leaves it null to keep the rows. The sink must outlive the call.
using StreamFactory = std::function<Status(const std::string& group, RowSink*& sink)>;
// `release` (may be null): fn.devices itself, from a caller that reads no device of fn after the call. Once the
// circuit is built they are freed (and their pages returned) where releases_devices(fn) says so: in a transient
// they would otherwise stay through every step (the 64x16 crossbar transient: 19.7 -> 16.2 MB resident). Not
// for an operating point alone, whose peak is past by then (freeing the 784x128 deck's 300,000 costs 0.05 s).
Status simulate(const FlatNetlist& fn, const DeviceCatalog& catalog, RunResults& out,
                std::unique_ptr<Circuit>* keep = nullptr, const StreamFactory* stream = nullptr,
                std::vector<FlatDevice>* release = nullptr);

// Whether fn has a transient analysis.
bool has_transient(const FlatNetlist& fn);

// Whether simulate() frees fn.devices given as `release`: fn has a transient, and no analysis reads the devices
// after the circuit is built (power probes or @device[param] outputs read them through the power meter, a .dc
// sweep its source's type and a temperature sweep's re-elaboration, an extension analysis the netlist).
bool releases_devices(const FlatNetlist& fn);

// Parses the file (extension picks the format), elaborates and simulates it. `analyses` (may be null): the
// extension analysis kinds the netlist may use.
Status simulate_file(const std::string& path, const DeviceCatalog& catalog, RunResults& out,
                     const AnalysisCatalog* analyses = nullptr);

}  // namespace anasim
