// CSV writer: one file per analysis (DIR/<group>.csv), header row of column names, numbers in shortest round-trip form (exact doubles).
// Each file is written to "<file>.tmp" and renamed into place, so a reader never sees half a file.
#include "engine/output.hpp"
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
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

// Writes one analysis table to FILE; false on any I/O error.
bool write_table(const AnalysisResult& a, long rows, std::FILE* f) {
  const bool op = a.kind == "op";
  const bool ac = a.complex();
  const bool nested = !a.sweep2.empty();
  fmt::memory_buffer b;
  // Numbers go straight into the buffer: a compiled "{}" (shortest round-trip form) through fmt::appender
  // skips the format-string parsing and the iterator adaptor of a runtime format_to, about half the time
  // of writing a large transient table.
  auto num = [&b](double v) { fmt::format_to(fmt::appender(b), FMT_COMPILE("{}"), v); };
  auto sep = [&b](bool& first) {
    if (!first) b.push_back(',');
    first = false;
  };

  bool first = true;
  if (!op) { sep(first); fmt::format_to(std::back_inserter(b), "{}", csv_field(a.sweep_name)); }
  if (nested) { sep(first); fmt::format_to(std::back_inserter(b), "{}", csv_field(a.sweep2_name)); }
  for (const auto& s : a.signals) {
    if (ac) {
      auto [m, p] = ac_names(s);
      sep(first); fmt::format_to(std::back_inserter(b), "{}", csv_field(m));
      sep(first); fmt::format_to(std::back_inserter(b), "{}", csv_field(p));
    } else {
      sep(first); fmt::format_to(std::back_inserter(b), "{}", csv_field(s.name));
    }
  }
  b.push_back('\n');

  constexpr double deg = 180.0 / 3.14159265358979323846;
  for (long r = 0; r < rows; ++r) {
    first = true;
    if (!op) { sep(first); num(a.sweep[r]); }
    if (nested) { sep(first); num(a.sweep2[r]); }
    for (const auto& s : a.signals) {
      if (ac) {
        const double re = s.re[r], im = s.im.empty() ? 0.0 : s.im[r];
        sep(first); num(std::hypot(re, im));
        sep(first); num(std::atan2(im, re) * deg);
      } else {
        sep(first); num(s.re[r]);
      }
    }
    b.push_back('\n');
    if (b.size() >= (1u << 16) || r + 1 == rows) {
      if (std::fwrite(b.data(), 1, b.size(), f) != b.size()) return false;
      b.clear();
    }
  }
  if (b.size() > 0 && std::fwrite(b.data(), 1, b.size(), f) != b.size()) return false;
  return std::fflush(f) == 0 && !std::ferror(f);
}

// Writes `text` to FILE through "<file>.tmp" and a rename.
Status write_text_atomic(const std::string& file, const std::string& text) {
  const std::string tmp = file + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", file, std::strerror(errno)));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) { ok = false; err = errno; }
  std::error_code ec;
  if (ok) {
    fs::rename(tmp, file, ec);
    if (ec) { ok = false; err = ec.value(); }
  }
  if (!ok) {
    fs::remove(tmp, ec);
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", file, err ? std::strerror(err) : "I/O error"));
  }
  return Status::success();
}

}  // namespace

Status write_csv(const RunResults& r, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::fail(ErrorKind::Other, fmt::format("cannot create output directory '{}': {}", dir, ec.message()));

  for (const auto& a : r.analyses) {
    if (!a.scalars.empty()) {  // DIR/<group>_summary.csv: name,value,unit
      std::string text = "name,value,unit\n";
      for (const ResultScalar& x : a.scalars)
        text += fmt::format("{},{},{}\n", csv_field(x.name), x.value, csv_field(x.unit));
      if (Status st = write_text_atomic((fs::path(dir) / (a.group + "_summary.csv")).string(), text); !st) return st;
    }
    const std::string file = (fs::path(dir) / (a.group + ".csv")).string();
    const long rows = table_rows(a);
    if (rows < 0)
      return Status::fail(ErrorKind::Other,
                          fmt::format("cannot write '{}': columns of analysis '{}' differ in length", file, a.group));
    const std::string tmp = file + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", file, std::strerror(errno)));
    bool ok = write_table(a, rows, f);
    int err = ok ? 0 : errno;
    if (std::fclose(f) != 0 && ok) { ok = false; err = errno; }
    if (ok) {
      fs::rename(tmp, file, ec);
      if (ec) { ok = false; err = ec.value(); }
    }
    if (!ok) {
      fs::remove(tmp, ec);
      return Status::fail(ErrorKind::Other,
                          fmt::format("cannot write '{}': {}", file, err ? std::strerror(err) : "I/O error"));
    }
  }
  return Status::success();
}

}  // namespace anasim
