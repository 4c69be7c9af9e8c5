// SPICE raw files (see output.hpp, write_raw): written through OutputFile like every output.
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
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

// A plot's header up to "Binary:"; `points` is the "No. Points" field as written, points_at (if given) receives its
// offset in the header.
fmt::memory_buffer plot_header(const std::string& title, const std::string& date, const AnalysisResult& a,
                               const std::string& points, size_t* points_at = nullptr) {
  const bool scale = !a.sweep_name.empty();
  const char* name = plot_name(a);
  fmt::memory_buffer h;  // (a line per signal copied in place: the header of 202,000 signals 29 -> 12.5 ms)
  auto out = std::back_inserter(h);
  fmt::format_to(out, "Title: {}\nDate: {}\nPlotname: {}\nFlags: {}\nNo. Variables: {}\nNo. Points: ", title, date,
                 name ? name : a.group, a.complex() ? "complex" : "real", a.signals.size() + (scale ? 1 : 0));
  if (points_at) *points_at = h.size();
  fmt::format_to(out, "{}\nVariables:\n", points);
  size_t k = 0;
  auto line = [&](const std::string& name, const char* type) {  // "\t<k>\t<name>\t<type>\n"
    const fmt::format_int num(k++);
    const size_t nt = std::strlen(type), at = h.size();
    h.resize(at + 4 + num.size() + name.size() + nt);
    char* p = h.data() + at;
    *p++ = '\t';
    p = std::copy_n(num.data(), num.size(), p);
    *p++ = '\t';
    p = std::copy_n(name.data(), name.size(), p);
    *p++ = '\t';
    p = std::copy_n(type, nt, p);
    *p = '\n';
  };
  if (scale) line(a.sweep_name, raw_type(a.sweep_unit));
  for (const Signal& s : a.signals) line(s.name, raw_type(s.unit));
  fmt::format_to(out, "Binary:\n");
  return h;
}

// One plot: header, then its points from `spool` (a streamed analysis) or from a's columns.
bool write_plot(OutputFile& f, const std::string& title, const AnalysisResult& a, const Spool* spool,
                const std::string& date) {
  const bool scale = !a.sweep_name.empty();
  const bool cplx = a.complex();
  const size_t points = spool ? spool->rows() : static_cast<size_t>(scale ? a.sweep.size() : a.rows());
  const fmt::memory_buffer h = plot_header(title, date, a, std::to_string(points));
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
    const size_t ns = a.signals.size();
    for (size_t i = 0; i < ns; ++i) {
      // Each signal's values are a heap block of their own: fetched some signals ahead (the operating point of
      // 202,000 unknowns: its plot 34 -> 24 ms).
      if (i + 16 < ns) __builtin_prefetch(a.signals[i + 16].re.data() + p);
      const Signal& s = a.signals[i];
      row.push_back(s.re[p]);
      if (cplx) row.push_back(s.im.empty() ? 0.0 : s.im[p]);
    }
    ok = f.write(row.data(), row.size() * sizeof(double));
  }
  return ok;
}

// A streamed transient's plot written straight into the output file as it runs (RawOutput on a regular file): the
// header at begin() with the point count left blank (kPointsWidth spaces), the rows as they come, the count written
// into its place at the end (patch()).
class RawStream final : public RowSink {
 public:
  static constexpr size_t kPointsWidth = 20;
  RawStream(OutputFile& f, const std::string& title, const std::string& date) : f_(f), title_(title), date_(date) {}
  bool begin(const AnalysisResult& a) override {
    width_ = 1 + a.signals.size();
    size_t field = 0;
    const fmt::memory_buffer h = plot_header(title_, date_, a, std::string(kPointsWidth, ' '), &field);
    const long at = std::ftell(f_.stream());
    if (at < 0) return fail(errno);
    field_ = at + static_cast<long>(field);
    return f_.write(h.data(), h.size()) || fail(errno);
  }
  bool rows(const double* data, size_t n, size_t width) override {
    if (err_ != 0 || width != width_) return fail(EINVAL);
    points_ += n;
    return f_.write(data, n * width * sizeof(double)) || fail(errno);
  }
  Status end() override {
    if (err_ == 0) return {};
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", f_.target(), std::strerror(err_)));
  }
  // The point count into its field (after every write: the stream is flushed first). false on a failed write.
  bool patch() const {
    if (std::fflush(f_.stream()) != 0) return false;
    const std::string v = fmt::format("{:<{}}", points_, kPointsWidth);
    return ::pwrite(::fileno(f_.stream()), v.data(), v.size(), field_) == static_cast<ssize_t>(v.size());
  }

 private:
  bool fail(int e) {  // the first failure's errno, kept for end()
    if (err_ == 0) err_ = e ? e : EIO;
    return false;
  }
  OutputFile& f_;
  const std::string& title_;
  const std::string& date_;
  size_t width_ = 0, points_ = 0;
  long field_ = -1;
  int err_ = 0;
};

// Every analysis of r can be written to `path`: a streamed one has its stream (has_stream(group)), a kept one's
// sweep and signals have one length.
template <class HasStream>
Status check_analyses(const RunResults& r, const std::string& path, const HasStream& has_stream) {
  for (const AnalysisResult& a : r.analyses) {
    if (a.streamed && !has_stream(a.group))
      return Status::fail(ErrorKind::Other, fmt::format("internal: analysis '{}' was streamed elsewhere", a.group));
    if (!a.streamed && !a.sweep_name.empty() && a.sweep.size() != static_cast<size_t>(a.rows()))
      return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': columns of analysis '{}' differ in length",
                                                        path, a.group));
  }
  return {};
}

Status write_file(const RunResults& r, const std::string& path, const Spools* spools) {
  if (Status st = check_analyses(r, path, [&](const std::string& g) { return spools && spools->count(g); }); !st)
    return st;
  OutputFile f;
  if (Status st = f.open(path); !st) return st;
  const std::string date = date_now();
  try {
    for (const AnalysisResult& a : r.analyses)
      if (!write_plot(f, r.title, a, a.streamed ? spools->at(a.group).get() : nullptr, date))
        return f.commit();  // (reports the failed write, naming the file; the temporary is removed)
  } catch (const std::exception& e) {  // a spool that cannot be read back
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", path, e.what()));
  }
  return f.commit();
}

}  // namespace

Status write_raw(const RunResults& r, const std::string& path) { return write_file(r, path, nullptr); }

// A regular file gets the streamed plots written straight into it as they run (RawStream), before the others; a
// stdout target (which cannot be patched) spools them as write_hdf5's output does and keeps the run's order.
struct RawOutput::Impl {
  SpoolSet set;  // (stdout)
  std::string title, date;
  OutputFile file;
  bool direct = false, opened = false;
  std::map<std::string, std::unique_ptr<RawStream>> streams;
  Status open_file() {  // the output's temporary, at the first stream or at write()
    if (opened) return {};
    Status st = file.open(set.path());
    opened = st.ok();
    return st;
  }
};

RawOutput::RawOutput() : impl_(std::make_unique<Impl>()) {}
RawOutput::~RawOutput() = default;

Status RawOutput::open(const std::string& path, const std::string& title) {
  impl_->title = title;
  impl_->date = date_now();
  impl_->direct = !is_stdout_name(path);
  return impl_->set.open(path);
}

Status RawOutput::stream(const std::string& group, RowSink*& sink) {
  Impl& m = *impl_;
  if (!m.direct) return m.set.stream(group, sink);
  if (Status st = m.open_file(); !st) return st;
  auto s = std::make_unique<RawStream>(m.file, m.title, m.date);
  sink = s.get();
  m.streams[group] = std::move(s);
  return {};
}

Status RawOutput::write(const RunResults& r) {
  Impl& m = *impl_;
  if (!m.direct) return write_file(r, m.set.path(), &m.set.spools());
  if (Status st = check_analyses(r, m.set.path(), [&](const std::string& g) { return m.streams.count(g) > 0; }); !st)
    return st;
  if (Status st = m.open_file(); !st) return st;
  bool ok = true;
  for (const AnalysisResult& a : r.analyses)  // the kept plots after the streamed ones, in run order
    if (!a.streamed && ok) ok = write_plot(m.file, r.title, a, nullptr, m.date);
  for (const auto& [group, s] : m.streams) ok = ok && s->patch();
  if (!ok && std::ferror(m.file.stream()) == 0) {  // a failed patch: make commit() report it
    const int e = errno ? errno : EIO;
    m.file.discard();
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", m.set.path(), std::strerror(e)));
  }
  return m.file.commit();
}

}  // namespace anasim
