// anasim command line: a thin front end over the engine/devices/nn libraries.
// Exit codes: 0 success, 2 bad input (parse or validation), 3 numerical failure, 1 anything else.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <malloc.h>
#include <new>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include "cli/nn_commands.hpp"
#include "devices/registry.hpp"
#include "engine/checkpoint.hpp"
#include "engine/circuit.hpp"
#include "engine/distribute.hpp"
#include "engine/elaborate.hpp"
#include "engine/export_spice.hpp"
#include "engine/montecarlo.hpp"
#include "engine/output.hpp"
#include "engine/output_file.hpp"
#include "engine/parse.hpp"
#include "engine/simulate.hpp"
#include "nn/analyses.hpp"

using namespace anasim;

namespace {

int exit_code(const Status& st) {
  if (st.ok()) return 0;
  switch (st.errors[0].kind) {
    case ErrorKind::Input: return 2;
    case ErrorKind::Numerical: return 3;
    default: return 1;
  }
}

int report(const Status& st) {
  for (const auto& w : st.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (!st.ok()) fmt::print(stderr, "{}\n", st.to_string());
  return exit_code(st);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void print_warnings(const Status& st) {
  for (const auto& w : st.warnings) fmt::print(stderr, "warning: {}\n", w);
}

// Parses and elaborates; phase times [s] go to *t_parse and *t_elab when given. `analyses`: the extension
// analysis kinds the netlist may use (see analysis_catalog()). Section-name typos are the reader's errors.
Status load(const std::string& file, const AnalysisCatalog& analyses, ParsedNetlist& pn, FlatNetlist& fn,
            double* t_parse = nullptr, double* t_elab = nullptr) {
  auto t0 = std::chrono::steady_clock::now();
  Status ps = parse_netlist(file, builtin_catalog(), pn, &analyses);
  if (!ps) return ps;
  print_warnings(ps);
  if (t_parse) *t_parse = since(t0);
  t0 = std::chrono::steady_clock::now();
  Status st = elaborate(pn, builtin_catalog(), fn);
  if (t_elab) *t_elab = since(t0);
  if (st) print_warnings(st);
  return st;
}

void print_summary(const RunResults& r, double seconds, double t_parse, double t_elab, double t_sim, double t_out) {
  fmt::print("anasim: {}\n", r.title.empty() ? r.netlist : r.title);
  fmt::print("  netlist   {}\n  unknowns  {}\n", r.netlist, r.unknowns);
  fmt::print("  {:<8} {:>10} {:>10} {:>9} {:>9} {:>9} {:>10}\n", "analysis", "points", "newton", "factor", "refactor",
             "rejected", "time[s]");
  for (const auto& a : r.analyses)
    fmt::print("  {:<8} {:>10} {:>10} {:>9} {:>9} {:>9} {:>10.4f}\n", a.group, a.stats.timepoints,
               a.stats.newton_iterations, a.stats.factorizations, a.stats.refactorizations, a.stats.rejected,
               a.stats.seconds);
  for (const auto& a : r.analyses)
    if (a.stats.kcl_residual >= 0)
      fmt::print("  {:<8} KCL residual {:.3g} A (largest over the node rows of the solution), {}\n", a.group,
                 a.stats.kcl_residual,
                 a.stats.cg_iterations > 0 ? fmt::format("conjugate gradients ({} steps)", a.stats.cg_iterations)
                 : a.stats.multifrontal    ? std::string("sparse LU UMFPACK")
                                           : std::string("sparse LU KLU"));
  for (const auto& a : r.analyses)
    if (a.stats.lu_reuses > 0)
      fmt::print("  {:<8} {} Newton solves with earlier LU factors as GMRES's preconditioner ({} iterations)\n",
                 a.group, a.stats.lu_reuses, a.stats.gmres_iterations);
  for (const auto& a : r.analyses) {  // .meas results, as ngspice prints them (name = value)
    if (a.measures.empty()) continue;
    fmt::print("  {} measurements:\n", a.group);
    for (const MeasureResult& m : a.measures) {
      if (m.error.empty()) fmt::print("    {:<20}=  {:.9e} {}\n", m.name, m.value, m.unit);
      else fmt::print("    {:<20}=  failed: {}\n", m.name, m.error);
    }
  }
  for (const auto& a : r.analyses) {  // extension analyses: inputs used and summary values
    if (a.scalars.empty() && a.notes.empty()) continue;
    fmt::print("  {}:\n", a.group);
    for (const auto& n : a.notes) fmt::print("    {}\n", n);
    for (const auto& x : a.scalars) fmt::print("    {:<34} {:>12.6g} {}\n", x.name, x.value, x.unit);
  }
  fmt::print("  time      parse {:.4f} s, elaborate {:.4f} s, build+analyses {:.4f} s, output {:.4f} s, total {:.4f} s\n",
             t_parse, t_elab, t_sim, t_out, seconds);
}

void print_mc(const McResults& mc) {
  fmt::print("  monte carlo: {} trials, seed {}, {:.3f} s\n", mc.trials, mc.seed, mc.seconds);
  if (dist::size() > 1)
    fmt::print("  {} MPI ranks, {:.0f} bytes per trial between ranks\n", dist::size(),
               dist::bytes_exchanged() / mc.trials);
  fmt::print("  {:<32} {:>14} {:>12} {:>14} {:>14}\n", "measurement", "mean", "std", "min", "max");
  for (const auto& m : mc.measurements)
    fmt::print("  {:<32} {:>14.6g} {:>12.4g} {:>14.6g} {:>14.6g} {}\n", m.name, m.mean, m.std, m.min, m.max, m.unit);
}

int cmd_run(const std::string& file, const AnalysisCatalog& analyses, const std::string& h5, const std::string& csv,
            const std::string& raw, int mc_trials, unsigned long long seed, bool power, const std::string& checkpoint) {
  auto t0 = std::chrono::steady_clock::now();
  ParsedNetlist pn;
  FlatNetlist fn;
  double t_parse = 0, t_elab = 0;
  if (Status st = load(file, analyses, pn, fn, &t_parse, &t_elab); !st) return report(st);
  if (power) fn.options.power = true;
  auto t1 = std::chrono::steady_clock::now();
  if (mc_trials == 0) {
    // Only Monte Carlo trials read the parsed netlist again: without them it is released before the circuit is
    // built, so that it no longer adds to the peak of the build and the factorization. Its pages are returned
    // (malloc_trim) where a transient follows, which holds its memory for long (the 64x16 crossbar transient
    // 16.2 -> 16.0 MB); an operating point reuses them instead (784x128 deck: the trim took 0.05 s, and the build
    // then touched fresh pages; 0.98 -> 0.93 s, 434 -> 440 MB). Counted as elaboration time.
    // Its blocks are freed with glibc's fast bins off: each is merged with its free neighbours as it goes, instead of
    // lying in the fast bins until the next large request merges them all at once (malloc_consolidate), in address
    // order against the order they were freed in (784x128 deck: build + op 0.36 -> 0.30 s). (mallopt restores the
    // default, 128 bytes; setting it empties the fast bins, which then hold nothing.)
    ::mallopt(M_MXFAST, 0);
    pn = ParsedNetlist();
    ::mallopt(M_MXFAST, 128);
    if (has_transient(fn)) ::malloc_trim(0);
    t_elab += since(t1);
    t1 = std::chrono::steady_clock::now();
  }
  RunResults r;
  std::unique_ptr<Circuit> circuit;
  // One output file format: the transients' rows go out while they run (CSV: written by a thread of its own; raw:
  // straight into the file; HDF5: spooled to a temporary file and read back into the file at the end), so that
  // memory does not grow with the time points. With several formats or Monte Carlo the results are kept and written
  // at the end.
  CsvOutput csv_out;
  Hdf5Output h5_out;
  RawOutput raw_out;
  StreamFactory stream;
  const int formats = !csv.empty() + !h5.empty() + !raw.empty();
  if (mc_trials == 0 && dist::size() == 1 && formats == 1) {
    if (!csv.empty()) {
      if (Status st = csv_out.open(csv); !st) return report(st);
      stream = [&csv_out](const std::string& group, RowSink*& sink) { return csv_out.stream(group, sink); };
    } else if (!raw.empty()) {
      if (Status st = raw_out.open(raw, fn.title); !st) return report(st);
      stream = [&raw_out](const std::string& group, RowSink*& sink) { return raw_out.stream(group, sink); };
    } else {
      if (Status st = h5_out.open(h5); !st) return report(st);
      stream = [&h5_out](const std::string& group, RowSink*& sink) { return h5_out.stream(group, sink); };
    }
  }
  // (fn's devices are not read after this: freed once the circuit is built where no analysis reads them)
  if (Status st = simulate(fn, builtin_catalog(), r, &circuit, &stream, &fn.devices); !st) return report(st);
  if (mc_trials > 0) {
    McRunOptions mo;
    mo.checkpoint = checkpoint;
    mo.identity.add("netlist", fmt::format("{} ({})", std::filesystem::path(file).filename().string(),
                                           file_digest(file)));
    if (Status st = run_monte_carlo(pn, builtin_catalog(), mc_trials, seed, r.mc, mo); !st) return report(st);
  }
  if (!dist::is_root()) {  // rank 0 writes the outputs and prints the summary
    dist::finalize();
    std::_Exit(0);
  }
  const double t_sim = since(t1);
  t1 = std::chrono::steady_clock::now();
  // What the analyses freed (factorizations, the spool's blocks) back to the system before the HDF5 file's image is
  // built (memory of its own, mapped): the heap keeps freed blocks below glibc's mmap threshold (which rises to 32 MB
  // as large blocks come and go). The raw and CSV writers take their buffers from the heap, which reuses them: there
  // the trim only made them touch fresh pages (784x128 crossbar op: 4,000 page faults, output 0.024 -> 0.013 s).
  if (!h5.empty()) ::malloc_trim(0);
  if (!raw.empty()) {  // (before the HDF5 file, which may take the waveforms)
    if (Status st = stream ? raw_out.write(r) : write_raw(r, raw); !st) return report(st);
    if (is_stdout_name(raw)) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  if (!h5.empty()) {
    // Written last (no CSV) and only summarised after: its waveforms go as they are written.
    if (Status st = stream ? h5_out.write(std::move(r)) : csv.empty() ? write_hdf5(std::move(r), h5) : write_hdf5(r, h5);
        !st)
      return report(st);
    if (is_stdout_name(h5)) ::dup2(STDERR_FILENO, STDOUT_FILENO);  // the file went to stdout: summary to stderr
  }
  if (!csv.empty())
    if (Status st = stream ? csv_out.write(r) : write_csv(r, csv); !st) return report(st);
  print_summary(r, since(t0), t_parse, t_elab, t_sim, since(t1));
  if (r.mc.trials > 0) print_mc(r.mc);
  // Everything is written and closed; skip tearing down the netlist and results (10^5-device netlists
  // take longer to free than to simulate) and let the OS reclaim the memory. A summary lost to a full disk or a
  // closed pipe is still an error.
  const int rc = report(finish_stdout());
  std::fflush(stderr);
  dist::finalize();
  std::_Exit(rc);
}

int cmd_export(const std::string& file, const AnalysisCatalog& analyses, const std::string& out) {
  ParsedNetlist pn;
  FlatNetlist fn;
  if (Status st = load(file, analyses, pn, fn); !st) return report(st);
  if (Status st = export_spice(fn, out); !st) return report(st);
  if (!is_stdout_name(out)) fmt::print("wrote {}\n", out);
  return 0;
}

// The analysis kinds a YAML netlist may use beyond op/dc/tran/ac: the registry of extension analyses, assembled
// here so that engine/ never depends on the layers that implement them. `data_dir`: `anasim run --data`.
AnalysisCatalog analysis_catalog(const std::string& data_dir) {
  AnalysisCatalog c;
  nn::add_analyses(c, data_dir);
  return c;
}

int cmd_devices() {
  for (const DeviceType* t : builtin_catalog().all()) {
    fmt::print("{} ({}): {}\n  pins: {}\n", t->key, t->long_name, t->description, fmt::join(t->pins, " "));
    auto table = [](const char* title, const ParamTable& p) {
      if (p.empty()) return;
      fmt::print("  {}:\n", title);
      for (const auto& s : p) {
        const bool textual = s.kind == ParamKind::Text || s.kind == ParamKind::Expr;
        std::string range = textual ? "-" : fmt::format("{}{}, {}]", s.min_exclusive ? "(" : "[", s.min, s.max);
        std::string def = s.kind == ParamKind::List   ? "list"
                          : s.kind == ParamKind::Text ? "text"
                          : s.kind == ParamKind::Expr ? "expr"
                                                      : fmt::format("{}", s.def);
        fmt::print("    {:<9} {:<5} default {:<10} range {:<14} {}\n", s.name, s.unit, def, range, s.description);
      }
    };
    table("parameters", t->params);
    if (!t->model_type.empty()) table(fmt::format("model '{}' parameters", t->model_type).c_str(), t->model_params);
  }
  return 0;
}

}  // namespace

// The subcommand the command line names; its exit code.
static int run_command(int argc, char** argv) {
  try {
    CLI::App app{"anasim: circuit simulator for analog neural networks"};
    app.require_subcommand(1);
    std::string file, h5, csv, raw, spice_out, data_dir;
    auto* run = app.add_subcommand("run", "run every analysis in a netlist (.yaml or SPICE deck)");
    run->add_option("file", file, "netlist")->required();
    run->add_option("-o,--output", h5, "write results to this HDF5 file");
    run->add_option("--csv", csv, "write one CSV per analysis into this directory");
    run->add_option("-r,--raw", raw, "write a SPICE raw file (binary, as ngspice -r writes: one plot per analysis)");
    int mc_trials = 0;
    unsigned long long seed = 1;
    run->add_option("--mc", mc_trials, "Monte Carlo: number of trials drawing every parameter tolerance")
        ->check(CLI::Range(1, 10000000));
    run->add_option("--seed", seed, "Monte Carlo seed (same seed, same numbers)")->check(seed_validator());
    bool power = false;
    run->add_flag("--power", power, "power probes p(...) in every op, dc and tran, energies e(...) in tran "
                                    "(as .options power)");
    std::string checkpoint;
    run->add_option("--checkpoint", checkpoint, "with --mc: HDF5 file rewritten after every round of trials; a "
                                                "rerun with the same arguments resumes from it");
    bool progress = false;
    run->add_flag("--progress", progress,
                  "progress and ETA (Monte Carlo trials, long transients) on stderr also when it is not a terminal");
    run->add_option("--data", data_dir,
                    "data sets for nn_eval / nn_mc analyses (default: $ANASIM_DATA, then standard places)");
    auto* exp = app.add_subcommand("export", "write a netlist as a flat ngspice deck");
    exp->add_option("file", file, "netlist")->required();
    exp->add_option("--spice", spice_out, "output deck")->required();
    auto* dev = app.add_subcommand("devices", "list device types and their parameters");
    const auto run_nn = add_nn_commands(app);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      int rc = app.exit(e);
      return rc == 0 ? 0 : 2;
    }
    const AnalysisCatalog analyses = analysis_catalog(data_dir);
    if (progress) dist::set_progress(dist::ProgressMode::Always);
    if (*run && !checkpoint.empty() && mc_trials == 0)
      return report(Status::input("--checkpoint needs --mc N (a checkpoint holds Monte Carlo trials)"));
    if (*run) return cmd_run(file, analyses, h5, csv, raw, mc_trials, seed, power, checkpoint);
    if (*exp) return cmd_export(file, analyses, spice_out);
    if (*dev) return cmd_devices();
    if (const int rc = run_nn(); rc >= 0) return rc;
    return 1;
  } catch (const std::bad_alloc&) {
    throw;  // reported by main() with context
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}

// The command's exit code; printed results (--json, summaries) lost to a full disk or a closed pipe make it fail.
// Under mpirun every rank runs the command (the Monte Carlo drivers share out their trials); rank 0 alone prints
// and writes, and a failure on any rank ends every rank (dist::fail) instead of leaving the others waiting.
int main(int argc, char** argv) {
  // glibc's heap: blocks up to 32 MB come from the heap, where later blocks reuse what earlier ones freed, instead of
  // fresh mappings whose every page faults anew (glibc's default starts at 128 kB and rises only as such blocks
  // are freed); the heap's top goes back to the system beyond 64 MB (malloc_trim, called where memory must go back,
  // returns it all). Measured on the 784x128 crossbar deck: 118,500 -> 103,800 page faults, 0.51 -> 0.49 s (medians
  // of 12 alternated runs).
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // The heap grows by 256 MB of address space at a time and keeps that much at its top when it shrinks, so that a
  // phase's large blocks reuse the pages the phase before freed instead of faulting in new ones (only the pages
  // touched are resident). 784x128 deck (perf stat, 8 runs each, alternated): 63,300 -> 53,300 page faults,
  // 0.535-0.547 -> 0.492-0.498 s, 734-808 -> 710-712 ms of CPU; largest resident set 372 -> 392 MB; small decks
  // unchanged (8 and 10 MB). 800 shipped images of nn energy: 6.75-6.84 -> 6.60-6.72 s.
  ::mallopt(M_TOP_PAD, 256 << 20);
  dist::init(&argc, &argv);
  remove_temporaries_on_signals();
  if (!dist::is_root())
    if (const int devnull = ::open("/dev/null", O_WRONLY); devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
  int rc = 1;
  try {
    rc = run_command(argc, argv);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: out of memory (the netlist, an analysis's results or a data set needs more memory than "
                       "is available; reduce the number of points, devices or samples)\n");
    return dist::fail(1);
  }
  if (Status st = finish_stdout(); !st && rc == 0) rc = report(st);
  if (rc != 0) return dist::fail(rc);
  dist::finalize();
  return rc;
}
