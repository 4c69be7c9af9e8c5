// SPICE raw files (see output.hpp, write_raw): written through OutputFile like every output.
#include <ctime>
#include <map>
#include <memory>
#include <fmt/format.h>
#include "engine/output.hpp"
#include "engine/output_file.hpp"
#include "engine/spool.hpp"

namespace anasim {

namespace {

static_assert(sizeof(double) == 8, "raw files hold 8-byte doubles");

const char* plot_name(const AnalysisResult& a) {
  if (a.kind == "op") return "Operating Point";
  if (a.kind == "dc") return "DC transfer characteristic";
  if (a.kind == "tran") return "Transient Analysis";
  if (a.kind == "ac") return "AC Analysis";
  return nullptr;
}

// The raw file's type of a quantity in `unit` (ngspice's names; "notype" for the others: power, energy, codes).
const char* raw_type(const std::string& unit) {
  if (unit == "V") return "voltage";
  if (unit == "A") return "current";
  if (unit == "s") return "time";
  if (unit == "Hz") return "frequency";
  return "notype";
}

// Date line as ngspice writes it ("Tue Nov 24 23:55:00  2026").
std::string date_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  return std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S  %Y", &tm) ? buf : "";
}

// One plot: header, then its points from `spool` (a streamed analysis) or from a's columns.
bool write_plot(OutputFile& f, const RunResults& r, const AnalysisResult& a, const Spool* spool,
                const std::string& date) {
  const bool scale = !a.sweep_name.empty();
  const bool cplx = a.complex();
  const size_t points = spool ? spool->rows() : static_cast<size_t>(scale ? a.sweep.size() : a.rows());
  const char* name = plot_name(a);
  std::string h = fmt::format("Title: {}\nDate: {}\nPlotname: {}\nFlags: {}\nNo. Variables: {}\nNo. Points: {}\n"
                              "Variables:\n", r.title, date, name ? name : a.group, cplx ? "complex" : "real",
                              a.signals.size() + (scale ? 1 : 0), points);
  size_t k = 0;
  if (scale) h += fmt::format("\t{}\t{}\t{}\n", k++, a.sweep_name, raw_type(a.sweep_unit));
  for (const Signal& s : a.signals) h += fmt::format("\t{}\t{}\t{}\n", k++, s.name, raw_type(s.unit));
  h += "Binary:\n";
  if (!f.write(h.data(), h.size())) return false;
  bool ok = true;
  if (spool) {  // its rows are the plot's points as they go into the file (real: time, then the signals); copied
                // in blocks of 1 MB (8 MB added 6-7 MB to the peak of the long small transients)
    spool->for_blocks(1, [&](size_t, size_t m, const double* rows) {
      ok = ok && f.write(rows, m * spool->width() * sizeof(double));
    }, size_t(1) << 17);
    return ok;
  }
  std::vector<double> row;
  for (size_t p = 0; p < points && ok; ++p) {
    row.clear();
    if (scale) {
      row.push_back(a.sweep[p]);
      if (cplx) row.push_back(0.0);
    }
    for (const Signal& s : a.signals) {
      row.push_back(s.re[p]);
      if (cplx) row.push_back(s.im.empty() ? 0.0 : s.im[p]);
    }
    ok = f.write(row.data(), row.size() * sizeof(double));
  }
  return ok;
}

Status write_file(const RunResults& r, const std::string& path, const Spools* spools) {
  for (const AnalysisResult& a : r.analyses) {
    if (a.streamed && (!spools || !spools->count(a.group)))
      return Status::fail(ErrorKind::Other, fmt::format("internal: analysis '{}' was streamed elsewhere", a.group));
    if (!a.streamed && a.sweep_name.empty() == false && a.sweep.size() != static_cast<size_t>(a.rows()))
      return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': columns of analysis '{}' differ in length",
                                                        path, a.group));
  }
  OutputFile f;
  if (Status st = f.open(path); !st) return st;
  const std::string date = date_now();
  try {
    for (const AnalysisResult& a : r.analyses)
      if (!write_plot(f, r, a, a.streamed ? spools->at(a.group).get() : nullptr, date))
        return f.commit();  // (reports the failed write, naming the file; the temporary is removed)
  } catch (const std::exception& e) {  // a spool that cannot be read back
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", path, e.what()));
  }
  return f.commit();
}

}  // namespace

Status write_raw(const RunResults& r, const std::string& path) { return write_file(r, path, nullptr); }

struct RawOutput::Impl {
  SpoolSet set;
};

RawOutput::RawOutput() : impl_(std::make_unique<Impl>()) {}
RawOutput::~RawOutput() = default;
Status RawOutput::open(const std::string& path) { return impl_->set.open(path); }
Status RawOutput::stream(const std::string& group, RowSink*& sink) { return impl_->set.stream(group, sink); }
Status RawOutput::write(const RunResults& r) { return write_file(r, impl_->set.path(), &impl_->set.spools()); }

}  // namespace anasim
