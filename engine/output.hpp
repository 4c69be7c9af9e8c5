// Writers for analysis results. Both write through engine/output_file.hpp (unique temporary, every write and
// close checked, rename when complete; the CSV files of a run all or none), so no half-written output is ever left.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include "engine/results.hpp"
#include "engine/types.hpp"

namespace anasim {

// HDF5: one group per analysis (/op, /dc, /tran, /ac, /tran2 ...), one dataset per signal
// (AC: "vm(x)" magnitude and "vp(x)" phase [deg]), the sweep variable as its own dataset, units as a
// "unit" attribute on each dataset, solver statistics and summary scalars as attributes of the group; title and netlist path
// as attributes of the root.
Status write_hdf5(const RunResults& r, const std::string& path);
// The same, freeing each signal's values as they go into the file image (r keeps its names, statistics and
// summaries; its waveforms are empty afterwards): a large result is not held twice.
Status write_hdf5(RunResults&& r, const std::string& path);

// CSV: DIR/op.csv, DIR/dc.csv, DIR/tran.csv, DIR/ac.csv (tran2.csv ... when repeated), created if needed.
// Header row of lower-case signal names; first column the sweep variable (not in op.csv);
// AC columns vm(...) and vp(...) [deg]. Numbers in shortest round-trip form. Analyses with summary scalars
// (extension analyses) also get DIR/<group>_summary.csv with columns name,value,unit.
Status write_csv(const RunResults& r, const std::string& dir);

// write_hdf5's file with the transients' rows spooled while they run: stream() gives a sink (engine/results.hpp)
// that appends them to an unnamed temporary file in the output's directory (gone with the process however it
// ends), so that the waveforms are not held in memory; write() builds the file, the spooled tables read back a
// block of time points at a time, and hands r over as write_hdf5(RunResults&&) does.
class Hdf5Output {
 public:
  Hdf5Output();
  ~Hdf5Output();
  Hdf5Output(const Hdf5Output&) = delete;
  Hdf5Output& operator=(const Hdf5Output&) = delete;
  Status open(const std::string& path);  // checks the target
  Status stream(const std::string& group, RowSink*& sink);
  Status write(RunResults&& r);          // r's analyses marked streamed must have their spool

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// write_csv's files with the transient tables streamed: stream() gives a sink (engine/results.hpp) that writes
// DIR/<group>.csv while the analysis runs, its rows formatted and written by a thread of its own (the analysis
// waits only when more than kQueueBytes of rows are queued); write() then writes every other file of the run and
// commits them all together, all or none, as write_csv does. Destroyed without write(): nothing is replaced.
class CsvOutput {
 public:
  static constexpr size_t kQueueBytes = size_t(4) << 20;
  CsvOutput();
  ~CsvOutput();
  CsvOutput(const CsvOutput&) = delete;
  CsvOutput& operator=(const CsvOutput&) = delete;
  Status open(const std::string& dir);  // creates DIR if needed
  Status stream(const std::string& group, RowSink*& sink);
  Status write(const RunResults& r);    // r's analyses marked streamed must have their stream's table

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SPICE raw file, binary, as `ngspice -b -r FILE` writes it (and engine/rawfile.hpp reads it): one plot per
// analysis in run order ("Operating Point", "DC transfer characteristic", "Transient Analysis", "AC Analysis"; an
// extension analysis under its group name), each a text header (Title, Date, Plotname, Flags real|complex, No.
// Variables, No. Points, the variables with their types) and "Binary:", then every point's values as little-endian
// doubles: the sweep variable first (time, frequency, the swept source; none in an operating point), then the
// signals; an AC plot complex (real, imaginary) throughout. Waveform viewers and ngspice's `load` read it.
Status write_raw(const RunResults& r, const std::string& path);

// write_raw's file with the transients' plots written while they run: straight into the file (its temporary, its
// point count filled in at the end), so that they come first and the other analyses' plots after them, in run order
// (ngspice does not keep the deck's order either); to standard output they are spooled as Hdf5Output's are and the
// run's order is kept. title: the Title lines (RunResults::title).
class RawOutput {
 public:
  RawOutput();
  ~RawOutput();
  RawOutput(const RawOutput&) = delete;
  RawOutput& operator=(const RawOutput&) = delete;
  Status open(const std::string& path, const std::string& title);  // checks the target
  Status stream(const std::string& group, RowSink*& sink);
  Status write(const RunResults& r);     // r's analyses marked streamed must have their spool

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes v as fmt::format("{}", v) does (shortest round-trip digits; fixed notation for decimal exponents -4 to
// 15, else d.ddde+XX; "inf", "nan") into out, which has room for kShortestChars; returns the end.
constexpr int kShortestChars = 32;
char* format_shortest(double v, char* out);

}  // namespace anasim
