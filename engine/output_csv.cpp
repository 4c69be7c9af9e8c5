// CSV writer: one file per analysis (DIR/<group>.csv), header row of column names, numbers in shortest round-trip form (exact doubles);
// summary scalars in DIR/<group>_summary.csv and .meas results in DIR/<group>_measure.csv.
// The files are written through one OutputSet (engine/output_file.hpp): all replaced, or none.
#include "engine/output.hpp"
#include "engine/output_file.hpp"
#include "engine/piece_writer.hpp"
#include "engine/two_threads.hpp"
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <filesystem>
#include <system_error>
#include <fmt/compile.h>
#include <fmt/format.h>

namespace anasim {

namespace {

namespace fs = std::filesystem;

// AC column names for one signal: "v(x)" -> "vm(x)", "vp(x)"; "i(d)" -> "im(d)", "ip(d)";
// anything else gets the v/i prefix from its unit and the whole name in parentheses.
std::pair<std::string, std::string> ac_names(const Signal& s) {
  const std::string& n = s.name;
  if (n.size() > 3 && (n[0] == 'v' || n[0] == 'i') && n[1] == '(' && n.back() == ')') {
    std::string inner = n.substr(1);  // "(x)"
    return {std::string(1, n[0]) + "m" + inner, std::string(1, n[0]) + "p" + inner};
  }
  const char p = s.unit == "A" ? 'i' : 'v';
  return {fmt::format("{}m({})", p, n), fmt::format("{}p({})", p, n)};
}

// Quotes a header field only if it needs it (RFC 4180).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Checks that every column of A has the same number of rows; returns that number or -1.
long table_rows(const AnalysisResult& a) {
  const bool op = a.kind == "op";
  long n = op ? 1 : static_cast<long>(a.sweep.size());
  if (!a.sweep2.empty() && static_cast<long>(a.sweep2.size()) != n) return -1;
  for (const auto& s : a.signals) {
    if (static_cast<long>(s.re.size()) != n) return -1;
    if (a.complex() && !s.im.empty() && s.im.size() != s.re.size()) return -1;
  }
  return n;
}

// The table's columns in order: the sweep variable(s), then one per signal (two for AC: magnitude and phase
// in degrees).
struct Column {
  enum Kind { Value, Magnitude, Phase } kind = Value;
  const std::vector<double>* re = nullptr;
  const std::vector<double>* im = nullptr;  // AC only; may be empty
  std::string name;                          // header field, already quoted if needed
};

std::vector<Column> table_columns(const AnalysisResult& a) {
  std::vector<Column> cols;
  cols.reserve(a.signals.size() * (a.complex() ? 2 : 1) + 2);
  if (a.kind != "op") cols.push_back({Column::Value, &a.sweep, nullptr, csv_field(a.sweep_name)});
  if (!a.sweep2.empty()) cols.push_back({Column::Value, &a.sweep2, nullptr, csv_field(a.sweep2_name)});
  for (const auto& s : a.signals) {
    if (a.complex()) {
      auto [m, p] = ac_names(s);
      cols.push_back({Column::Magnitude, &s.re, &s.im, csv_field(m)});
      cols.push_back({Column::Phase, &s.re, &s.im, csv_field(p)});
    } else {
      cols.push_back({Column::Value, &s.re, nullptr, csv_field(s.name)});
    }
  }
  return cols;
}

// Appends v as format_shortest writes it: fmt's "{}" text, 364 instructions per number of the 1000-section RC
// ladder's table against 537 for fmt::format_to's compiled "{}" into the buffer.
inline void append_number(fmt::memory_buffer& b, double v) {
  const size_t at = b.size();
  b.resize(at + kShortestChars);
  b.resize(static_cast<size_t>(format_shortest(v, b.data() + at) - b.data()));
}

// Appends rows [r0, r1) of columns [c0, c1) to b, fields separated by ','; each row ends in '\n' only if c1 is
// the last column. r0 = -1 stands for the header row.
void format_piece(const std::vector<Column>& cols, long r0, long r1, size_t c0, size_t c1, fmt::memory_buffer& b) {
  constexpr double deg = 180.0 / 3.14159265358979323846;
  const bool ends = c1 == cols.size();
  for (long r = r0; r < r1; ++r) {
    for (size_t c = c0; c < c1; ++c) {
      if (c > c0) b.push_back(',');
      const Column& col = cols[c];
      if (r < 0) {
        b.append(col.name.data(), col.name.data() + col.name.size());
        continue;
      }
      double v = (*col.re)[r];
      if (col.kind != Column::Value) {
        const double im = col.im->empty() ? 0.0 : (*col.im)[r];
        v = col.kind == Column::Magnitude ? std::hypot(v, im) : std::atan2(im, v) * deg;
      }
      append_number(b, v);
    }
    if (ends) b.push_back('\n');
  }
}

// A piece of a table's text: rows [r0, r1) of columns [c0, c1) (r0 = -1: the header row), preceded by ',' when
// c0 > 0 (it continues a row).
struct Piece {
  long r0, r1;
  size_t c0, c1;
};

// The table (nc columns, the header row and `rows` rows) in file order, in pieces of about kPieceNumbers numbers:
// groups of whole rows, or each row in ranges of columns when a row is that long (the operating point of a large
// circuit). A piece formats in about 0.5 ms.
constexpr size_t kPieceNumbers = size_t(1) << 13;
std::vector<Piece> table_pieces(size_t nc, long rows) {
  std::vector<Piece> p;
  if (nc >= kPieceNumbers) {
    for (long r = -1; r < rows; ++r)
      for (size_t c = 0; c < nc; c += kPieceNumbers) p.push_back({r, r + 1, c, std::min(nc, c + kPieceNumbers)});
    return p;
  }
  p.push_back({-1, 0, 0, nc});
  const long per = static_cast<long>(kPieceNumbers / std::max<size_t>(nc, 1));
  for (long r = 0; r < rows; r += per) p.push_back({r, std::min(rows, r + per), 0, nc});
  return p;
}

// Writes one analysis table to FILE; false on any I/O error. Tables of at least 2^14 numbers are formatted on two
// threads (PieceWriter), others on this one.
bool write_table(const AnalysisResult& a, long rows, OutputFile& f) {
  const std::vector<Column> cols = table_columns(a);
  const std::vector<Piece> pieces = table_pieces(cols.size(), rows);
  const bool two = cols.size() * static_cast<size_t>(rows + 1) >= 2 * kPieceNumbers && second_thread_allowed();
  auto format = [&](size_t k, fmt::memory_buffer& b) {
    const Piece& p = pieces[k];
    if (p.c0 > 0) b.push_back(',');
    format_piece(cols, p.r0, p.r1, p.c0, p.c1, b);
  };
  auto put = [&](const fmt::memory_buffer& b) { return f.write(b.data(), b.size()); };
  if (!PieceWriter::run(pieces.size(), two, format, put)) return false;
  return std::fflush(f.stream()) == 0 && !std::ferror(f.stream());
}

// The error of a failed write, read from errno right after it.
Status write_error(const std::string& file) {
  const int e = errno;
  return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", file, e ? std::strerror(e) : "I/O error"));
}

}  // namespace

namespace {
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// Writes the `count` lowest decimal digits of s (leading zeros included) to [end - count, end): eight digits at
// a time in 32-bit arithmetic (a 64-bit division by a constant costs twice a 32-bit one), two per table entry.
void write_digits(std::uint64_t s, int count, char* end) {
  auto pair = [](char* at, std::uint32_t two) { std::memcpy(at, kDigitPairs + 2 * two, 2); };
  for (; count >= 8; count -= 8, s /= 100000000) {
    const auto y = static_cast<std::uint32_t>(s % 100000000);
    const std::uint32_t hi = y / 10000, lo = y % 10000;
    end -= 8;
    pair(end, hi / 100);
    pair(end + 2, hi % 100);
    pair(end + 4, lo / 100);
    pair(end + 6, lo % 100);
  }
  auto y = static_cast<std::uint32_t>(s % 100000000);
  for (; count >= 2; count -= 2, y /= 100) {
    end -= 2;
    pair(end, y % 100);
  }
  if (count == 1) end[-1] = static_cast<char>('0' + y % 10);
}

// Number of decimal digits of s > 0.
int digit_count(std::uint64_t s) {
  static constexpr std::uint64_t kPow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
      10000000ull, 100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
      10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
      1000000000000000000ull, 10000000000000000000ull};
  const int t = ((64 - __builtin_clzll(s)) * 1233) >> 12;  // floor(log10(2^bits)), within one of the answer
  return t + (s >= kPow10[t]);
}
}  // namespace

char* format_shortest(double v, char* out) {
  if (!std::isfinite(v)) return fmt::format_to(out, FMT_COMPILE("{}"), v);
  if (std::signbit(v)) {
    *out++ = '-';
    v = -v;
  }
  if (v == 0) {
    *out++ = '0';
    return out;
  }
  // The shortest round-trip digits from the function fmt's "{}" calls (Dragonbox, trailing zeros removed),
  // written where fmt's layout puts them.
  const auto dec = fmt::detail::dragonbox::to_decimal(v);
  const std::uint64_t s = dec.significand;
  const int n = digit_count(s);
  const int exp = dec.exponent + n - 1;  // decimal exponent of the first digit
  if (exp < -4 || exp >= 16) {  // d[.ddd]e(+|-)XX[X]
    write_digits(s, n, out + 1 + n);
    out[0] = out[1];
    if (n > 1) out[1] = '.';
    out += n > 1 ? n + 1 : 1;
    *out++ = 'e';
    *out++ = exp < 0 ? '-' : '+';
    const int e = std::abs(exp);
    if (e >= 100) *out++ = static_cast<char>('0' + e / 100);
    std::memcpy(out, kDigitPairs + 2 * (e % 100), 2);
    return out + 2;
  }
  if (exp < 0) {  // 0.000ddd
    *out++ = '0';
    *out++ = '.';
    out = std::fill_n(out, -exp - 1, '0');
    write_digits(s, n, out + n);
    return out + n;
  }
  if (exp >= n - 1) {  // an integer: ddd000
    write_digits(s, n, out + n);
    return std::fill_n(out + n, exp - (n - 1), '0');
  }
  // ddd.ddd: every digit one place to the right, then the integer digits back over the gap, the point after them
  // (no 64-bit division by a power of ten known only at run time: ~13 ns of the ~55 ns a number in 0.1 .. 10 took)
  write_digits(s, n, out + n + 1);
  std::memmove(out, out + 1, static_cast<size_t>(exp) + 1);
  out[exp + 1] = '.';
  return out + n + 1;
}

namespace {

// A transient's table streamed to its CSV file (CsvOutput::stream): the header at begin(), then blocks of rows
// queued by the analysis and formatted and written, in order, by the stream's thread.
class CsvStream final : public RowSink {
 public:
  explicit CsvStream(OutputFile* f) : f_(f) {}
  ~CsvStream() override { stop(); }

  bool begin(const AnalysisResult& a) override {
    fmt::memory_buffer b;
    const std::vector<Column> cols = table_columns(a);
    format_piece(cols, -1, 0, 0, cols.size(), b);
    if (!f_->write(b.data(), b.size())) return fail(errno);
    thread_ = std::thread([this] { run(); });
    return true;
  }

  bool rows(const double* data, size_t n, size_t width) override {
    std::unique_lock<std::mutex> lk(m_);
    room_.wait(lk, [&] { return queued_ < CsvOutput::kQueueBytes || err_ != 0; });
    if (err_ != 0 || !thread_.joinable()) return false;
    Block b;
    if (!spare_.empty()) {
      b.values = std::move(spare_.back());
      spare_.pop_back();
    }
    b.values.assign(data, data + n * width);
    b.width = width;
    queued_ += b.values.size() * sizeof(double);
    queue_.push_back(std::move(b));
    lk.unlock();
    ready_.notify_one();
    return true;
  }

  Status end() override {
    stop();
    if (err_ == 0) return {};
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", f_->target(), std::strerror(err_)));
  }

 private:
  struct Block {
    std::vector<double> values;
    size_t width = 0;
  };
  OutputFile* f_;
  std::thread thread_;
  std::mutex m_;
  std::condition_variable ready_, room_;
  std::deque<Block> queue_;
  std::vector<std::vector<double>> spare_;  // blocks written, their memory kept for the next ones
  size_t queued_ = 0;                        // bytes of values in queue_
  bool closed_ = false;
  int err_ = 0;                              // errno of the first failed write

  bool fail(int e) {
    std::lock_guard<std::mutex> lk(m_);
    if (err_ == 0) err_ = e ? e : EIO;
    return false;
  }

  // The thread: every block in order until closed and drained, or the first failed write.
  void run() {
    fmt::memory_buffer text;
    for (;;) {
      Block b;
      {
        std::unique_lock<std::mutex> lk(m_);
        ready_.wait(lk, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty()) return;
        b = std::move(queue_.front());
        queue_.pop_front();
      }
      text.clear();
      const size_t rows = b.width ? b.values.size() / b.width : 0;
      for (size_t r = 0; r < rows; ++r) {
        const double* v = b.values.data() + r * b.width;
        for (size_t c = 0; c < b.width; ++c) {
          if (c > 0) text.push_back(',');
          append_number(text, v[c]);
        }
        text.push_back('\n');
      }
      const bool ok = f_->write(text.data(), text.size());
      const int e = errno;
      {
        std::lock_guard<std::mutex> lk(m_);
        queued_ -= b.values.size() * sizeof(double);
        if (spare_.size() < 2) spare_.push_back(std::move(b.values));
        if (!ok && err_ == 0) err_ = e ? e : EIO;
      }
      room_.notify_all();
      if (!ok) return;
    }
  }

  // Closes the queue and waits for the thread to write what is queued (or to fail).
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lk(m_);
      closed_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
};

// The files of DIR but the streamed tables, in write_csv's order, into `set`.
Status write_files(const RunResults& r, const std::string& dir, OutputSet& set) {
  Status st;
  for (const auto& a : r.analyses) {
    if (!a.scalars.empty()) {  // DIR/<group>_summary.csv: name,value,unit
      std::string text = "name,value,unit\n";
      for (const ResultScalar& x : a.scalars)
        text += fmt::format("{},{},{}\n", csv_field(x.name), x.value, csv_field(x.unit));
      OutputFile* f = set.add((fs::path(dir) / (a.group + "_summary.csv")).string(), &st);
      if (!f) return st;
      if (!f->write(text.data(), text.size())) return write_error(f->target());
    }
    if (!a.measures.empty()) {  // DIR/<group>_measure.csv: name,value,unit,error (.meas results; nan: failed)
      std::string text = "name,value,unit,error\n";
      for (const MeasureResult& m : a.measures)
        text += fmt::format("{},{},{},{}\n", csv_field(m.name), m.value, csv_field(m.unit), csv_field(m.error));
      OutputFile* f = set.add((fs::path(dir) / (a.group + "_measure.csv")).string(), &st);
      if (!f) return st;
      if (!f->write(text.data(), text.size())) return write_error(f->target());
    }
    if (a.streamed) continue;  // its table is its stream's file
    const std::string file = (fs::path(dir) / (a.group + ".csv")).string();
    const long rows = table_rows(a);
    if (rows < 0)
      return Status::fail(ErrorKind::Other,
                          fmt::format("cannot write '{}': columns of analysis '{}' differ in length", file, a.group));
    OutputFile* f = set.add(file, &st);
    if (!f) return st;
    if (!write_table(a, rows, *f)) return write_error(file);
  }
  return {};
}

Status make_directory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status::fail(ErrorKind::Other, fmt::format("cannot create output directory '{}': {}", dir, ec.message()));
  return {};
}

}  // namespace

Status write_csv(const RunResults& r, const std::string& dir) {
  if (Status st = make_directory(dir); !st) return st;
  // Every file is complete under its temporary name before any is renamed: the directory never holds files
  // of two runs.
  OutputSet set;
  if (Status st = write_files(r, dir, set); !st) return st;
  return set.commit();
}

// The set before the streams: the streams (whose threads write to the set's files) are destroyed first.
struct CsvOutput::Impl {
  std::string dir;
  bool created = false;    // open() created dir: removed again (if still empty) unless write() succeeds
  bool written = false;
  int slot = -1;           // register_cleanup's slot of a created dir
  OutputSet set;
  std::map<std::string, std::unique_ptr<CsvStream>> streams;  // by group
};

CsvOutput::CsvOutput() : impl_(std::make_unique<Impl>()) {}
CsvOutput::~CsvOutput() {
  unregister_cleanup(impl_->slot);
  if (!impl_->created || impl_->written) return;
  const std::string dir = impl_->dir;
  impl_.reset();  // the streams and the set's temporaries first
  std::error_code ec;
  fs::remove(dir, ec);  // only if empty
}

Status CsvOutput::open(const std::string& dir) {
  impl_->dir = dir;
  std::error_code ec;
  impl_->created = !fs::exists(dir, ec);
  if (Status st = make_directory(dir); !st) return st;
  if (impl_->created) impl_->slot = register_cleanup(dir, true);
  return {};
}

Status CsvOutput::stream(const std::string& group, RowSink*& sink) {
  Status st;
  OutputFile* f = impl_->set.add((fs::path(impl_->dir) / (group + ".csv")).string(), &st);
  if (!f) return st;
  auto s = std::make_unique<CsvStream>(f);
  sink = s.get();
  impl_->streams[group] = std::move(s);
  return {};
}

Status CsvOutput::write(const RunResults& r) {
  for (const auto& a : r.analyses)
    if (a.streamed && !impl_->streams.count(a.group))
      return Status::fail(ErrorKind::Other, fmt::format("internal: analysis '{}' was streamed elsewhere", a.group));
  for (auto& [group, s] : impl_->streams)
    if (Status st = s->end(); !st) return st;
  if (Status st = write_files(r, impl_->dir, impl_->set); !st) return st;
  Status st = impl_->set.commit();
  impl_->written = st.ok();
  if (impl_->written) {
    unregister_cleanup(impl_->slot);
    impl_->slot = -1;
  }
  return st;
}

}  // namespace anasim
