// Analysis drivers: options and output handling around the numerical core (newton.hpp, integrator.hpp).
#pragma once
#include <memory>
#include "engine/circuit.hpp"
#include "engine/elaborate.hpp"
#include "engine/power.hpp"
#include "engine/results.hpp"

namespace anasim {

class NewtonSolver;

// Which unknowns are written: the requested outputs ("v(x)", "i(v1)"), or every visible unknown.
// Unknown names in `outputs` are an input error.
Status select_outputs(const Circuit& c, const std::vector<std::string>& outputs, std::vector<int>& idx);

// Each driver fills `res` (signals, sweep, stats) for one analysis of an already built circuit.
Status run_op(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res);
// run_dc: with `carry` non-empty (and sized like the solution) the first point continues from it as from a
// previous sweep point; on return it holds the last point's solution (run_dc_temper's points, one circuit each).
Status run_dc(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res,
              std::vector<double>* carry = nullptr);
// `sink` (may be null): the rows go there as they are accepted instead of into res (Recorder::stream_to).
Status run_tran(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res,
                RowSink* sink = nullptr);
Status run_ac(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res);
// A .dc sweep of the temperature in a netlist whose expressions read `temper` (fn.temper set): at each sweep
// temperature the netlist is elaborated again with `temper` at that value and solved on a circuit built from it,
// so parameters, device and model values follow the sweep as in ngspice. Same result layout as run_dc.
Status run_dc_temper(const FlatNetlist& fn, const DeviceCatalog& catalog, const Analysis& a, AnalysisResult& res);

// Appends one row of output per call: the selected unknowns, then every device probe (ADC codes, ...), then
// the power probes if a meter was added. Rows are buffered and reach res's signals in blocks (flush(), and at the
// latest when the recorder is destroyed): a row of a large circuit is one write per signal, each to a different
// page, so the signals are written a block of rows at a time (the 256x256 crossbar transient's 132,352 signals).
// res's signals are complete only after flush() or destruction.
class Recorder {
 public:
  ~Recorder() { flush(); }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  // Creates the signals in res (names and units). `with_probes` = false for AC (complex, unknowns only).
  Recorder(const Circuit& c, const std::vector<int>& out, AnalysisResult& res, bool with_probes = true);
  // Adds the meter's signals (p(...), and e(...) with `energies`); record() then writes its current values.
  void add_power(const PowerMeter* meter, bool energies);
  // Rows go to `sink` (begun at the first row, with every signal added by then), each led by its sweep value t,
  // instead of into res (marked streamed); nullptr: into res. Before the first record().
  void stream_to(RowSink* sink);
  // One row at sweep value t (recorded in res.sweep by the caller unless streaming). False once the sink failed.
  bool record(const double* x, double t);
  // Room for `rows` rows in every signal (and the sweep), so that a run of about that many points does not copy its
  // waveforms as they grow (a vector that doubles copies each value about once more and holds up to twice its size).
  void reserve(size_t rows);
  // Moves the buffered rows into the signals (or the sink).
  void flush();
  // After the last row: flush(), and the sink's end() (its failure, if any).
  Status finish();
 private:
  static constexpr size_t kBufferBytes = size_t(16) << 20;  // rows buffered: at most this many bytes
  static constexpr size_t kMaxRows = 64;                    // and this many rows
  static constexpr size_t kSinkBytes = size_t(256) << 10;   // streaming: blocks of at most this many bytes
  static constexpr size_t kSinkRows = 4096;                 // and this many rows
  const std::vector<int>& out_;
  AnalysisResult& res_;
  std::vector<const Device*> probing_;
  std::vector<double> buf_;
  const PowerMeter* meter_ = nullptr;
  bool energies_ = false;
  RowSink* sink_ = nullptr;
  bool sink_ok_ = true;
  bool begun_ = false;
  size_t lead_ = 0;      // values before the signals in a row: 1 (t) when streaming
  size_t width_ = 0;     // values per row of the buffered rows
  size_t capacity_ = 0;  // rows the buffer holds
  size_t pending_ = 0;   // rows in the buffer
  // pending_ rows of width_ values; left uninitialized, so that only the pages of rows written are touched (an
  // operating point writes one row of a buffer sized for 64)
  std::unique_ptr<double[]> rows_;
};

// Power probes for analysis a: asked for by the analysis (`power: true`) or for all (.options power,
// `anasim run --power`), or @device[name] outputs (recorded by the meter, engine/device_query.hpp). Returns a
// meter set on s, or nullptr (and s unchanged) when neither is asked for.
std::unique_ptr<PowerMeter> power_meter(Circuit& c, const FlatNetlist& fn, const Analysis& a, NewtonSolver& s);

// Shared by the drivers: .ic values as forced unknowns.
std::vector<std::pair<UnknownIndex, double>> forced_ics(const Circuit& c, const FlatNetlist& fn);
// FlatNetlist::guess written into x (size n + 1) by circuit node name (names the circuit lacks are skipped, as are
// non-finite values); false, x unchanged, when there is no guess.
bool apply_guess(const Circuit& c, const FlatNetlist& fn, std::vector<double>& x);

}  // namespace anasim
