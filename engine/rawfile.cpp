// Reader for SPICE raw files (ngspice ASCII and binary flavours). A file is a sequence of plots, each a
// text header ("Title:", "Plotname:", "Flags:", "No. Variables:", "No. Points:", "Variables:") followed
// by either "Values:" and whitespace-separated numbers ("re,im" pairs if complex, each point led by its
// index) or "Binary:" and npoints x nvars native doubles (two per value if complex).
#include "engine/rawfile.hpp"
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <fmt/format.h>

namespace anasim {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool parse_double(const char* b, const char* e, double& x) {
  if (b < e && *b == '+') ++b;  // from_chars rejects a leading '+'
  auto r = std::from_chars(b, e, x);
  return r.ec == std::errc() && r.ptr == e;
}

bool parse_long(const std::string& s, long& x) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), x);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Cursor over the whole file contents; tracks the line number for diagnostics.
class Reader {
 public:
  Reader(std::string path, std::string data) : path_(std::move(path)), data_(std::move(data)) {}

  bool at_end() const { return pos_ >= data_.size(); }

  // Next line without its terminator ("\n" or "\r\n").
  std::string line() {
    mark_ = pos_;
    mark_line_ = line_;
    size_t e = data_.find('\n', pos_);
    if (e == std::string::npos) e = data_.size();
    std::string s = data_.substr(pos_, e - pos_);
    if (!s.empty() && s.back() == '\r') s.pop_back();
    if (e < data_.size()) ++line_;
    pos_ = std::min(e + 1, data_.size());
    return s;
  }

  // Next whitespace-separated token (may cross lines); empty at end of file.
  std::string token() {
    while (pos_ < data_.size() && std::isspace(static_cast<unsigned char>(data_[pos_]))) {
      if (data_[pos_] == '\n') ++line_;
      ++pos_;
    }
    mark_ = pos_;
    mark_line_ = line_;
    while (pos_ < data_.size() && !std::isspace(static_cast<unsigned char>(data_[pos_]))) ++pos_;
    return data_.substr(mark_, pos_ - mark_);
  }

  // Copies N bytes of binary data; false if fewer remain.
  bool bytes(void* dst, size_t n) {
    if (data_.size() - pos_ < n) return false;
    std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }

  size_t remaining() const { return data_.size() - pos_; }

  // An Input error located at the line or token read last.
  Status error(const std::string& msg) const {
    const size_t m = std::min(mark_, data_.size());
    const size_t b = m == 0 ? 0 : data_.rfind('\n', m - 1);
    const size_t start = (m == 0 || b == std::string::npos) ? 0 : b + 1;
    size_t end = data_.find('\n', m);
    if (end == std::string::npos) end = data_.size();
    // the offending line alone is registered as line mark_line_ of path_ (the raw file may be binary)
    std::string text = data_.substr(start, std::min<size_t>(end - start, 200));
    if (!text.empty() && text.back() == '\r') text.pop_back();
    SourceLoc loc(SourceFile::add(path_, std::move(text), mark_line_), mark_line_, static_cast<int>(m - start) + 1);
    return Status::input(fmt::format("raw file: {}", msg), loc);
  }

 private:
  std::string path_;
  std::string data_;
  size_t pos_ = 0;        // read position in data_
  int line_ = 1;          // 1-based line number of pos_
  size_t mark_ = 0;       // start of the line or token read last (for diagnostics)
  int mark_line_ = 1;     // its line number
};

// Reads the variable table: NVARS lines "index name type [params]"; FIRST is any text that followed
// "Variables:" on its own line (old writers put the first variable there).
Status read_variables(Reader& rd, int nvars, const std::string& first, RawPlot& p) {
  std::string pending = trim(first);
  for (int i = 0; i < nvars; ++i) {
    std::string l = pending;
    pending.clear();
    while (l.empty()) {
      if (rd.at_end()) return rd.error(fmt::format("file ends inside the variable list (expected {} variables)", nvars));
      l = trim(rd.line());
    }
    auto t = split_ws(l);
    long idx = -1;
    if (t.size() < 3 || !parse_long(t[0], idx))
      return rd.error("expected a variable line \"<index> <name> <type>\"");
    if (idx != i) return rd.error(fmt::format("variable index {} out of order (expected {})", idx, i));
    p.names.push_back(lower(t[1]));
    p.types.push_back(lower(t[2]));
  }
  return Status::success();
}

Status read_ascii_values(Reader& rd, int npoints, RawPlot& p) {
  const size_t nvars = p.names.size();
  for (int k = 0; k < npoints; ++k) {
    std::string t = rd.token();
    long idx = -1;
    if (t.empty()) return rd.error(fmt::format("file ends after {} of {} points", k, npoints));
    if (!parse_long(t, idx) || idx != k)
      return rd.error(fmt::format("expected point index {}, found \"{}\"", k, t));
    for (size_t v = 0; v < nvars; ++v) {
      t = rd.token();
      if (t.empty()) return rd.error(fmt::format("file ends inside point {} of {}", k, npoints));
      const char* b = t.data();
      const char* e = b + t.size();
      double re = 0.0, im = 0.0;
      if (p.complex) {
        const char* comma = std::find(b, e, ',');
        if (comma == e || !parse_double(b, comma, re) || !parse_double(comma + 1, e, im))
          return rd.error(fmt::format("expected a complex value \"re,im\" at point {}, found \"{}\"", k, t));
        p.im[v].push_back(im);
      } else if (!parse_double(b, e, re)) {
        return rd.error(fmt::format("expected a number at point {}, found \"{}\"", k, t));
      }
      p.re[v].push_back(re);
    }
  }
  return Status::success();
}

Status read_binary_values(Reader& rd, int npoints, RawPlot& p) {
  const size_t nvars = p.names.size();
  const size_t per_value = p.complex ? 2 : 1;
  const size_t need = static_cast<size_t>(npoints) * nvars * per_value * sizeof(double);
  if (rd.remaining() < need)
    return rd.error(fmt::format("binary data truncated: {} points x {} variables need {} bytes, {} remain",
                                npoints, nvars, need, rd.remaining()));
  for (int k = 0; k < npoints; ++k)
    for (size_t v = 0; v < nvars; ++v) {
      double x[2] = {0.0, 0.0};
      rd.bytes(x, per_value * sizeof(double));
      p.re[v].push_back(x[0]);
      if (p.complex) p.im[v].push_back(x[1]);
    }
  return Status::success();
}

}  // namespace

int RawPlot::find(const std::string& name) const {
  auto index = [this](const std::string& n) -> int {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return static_cast<int>(i);
    return -1;
  };
  const std::string q = lower(name);
  if (int i = index(q); i >= 0) return i;
  // The other spelling of the same quantity.
  const bool wrapped = q.size() > 3 && q[1] == '(' && q.back() == ')';
  const std::string inner = wrapped ? q.substr(2, q.size() - 3) : std::string();
  const std::string branch = "#branch";
  if (wrapped && q[0] == 'v') return index(inner);
  if (wrapped && q[0] == 'i') return index(inner + branch);
  if (q.size() > branch.size() && q.compare(q.size() - branch.size(), branch.size(), branch) == 0)
    return index("i(" + q.substr(0, q.size() - branch.size()) + ")");
  if (q.find('(') == std::string::npos) return index("v(" + q + ")");
  return -1;
}

Status read_spice_raw(const std::string& path, std::vector<RawPlot>& plots) {
  plots.clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::fail(ErrorKind::Other, fmt::format("cannot open raw file '{}'", path));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::fail(ErrorKind::Other, fmt::format("cannot read raw file '{}'", path));
  Reader rd(path, buf.str());

  RawPlot cur;
  std::string title;
  long nvars = -1, npoints = -1;
  bool have_vars = false;
  while (!rd.at_end()) {
    const std::string l = rd.line();
    if (trim(l).empty()) continue;
    const size_t colon = l.find(':');
    if (colon == std::string::npos) return rd.error("expected a header line \"<key>: <value>\"");
    const std::string key = lower(trim(l.substr(0, colon)));
    const std::string value = trim(l.substr(colon + 1));
    if (key == "title") {
      title = value;
    } else if (key == "plotname") {
      cur.plotname = value;
    } else if (key == "flags") {
      for (const auto& f : split_ws(lower(value)))
        if (f == "complex") cur.complex = true;
    } else if (key == "no. variables") {
      if (!parse_long(value, nvars) || nvars < 1) return rd.error(fmt::format("bad variable count '{}'", value));
    } else if (key == "no. points") {
      if (!parse_long(value, npoints) || npoints < 0) return rd.error(fmt::format("bad point count '{}'", value));
    } else if (key == "variables") {
      if (nvars < 0) return rd.error("\"Variables:\" before \"No. Variables:\"");
      if (Status s = read_variables(rd, static_cast<int>(nvars), value, cur); !s) return s;
      have_vars = true;
    } else if (key == "values" || key == "binary") {
      if (!have_vars) return rd.error(fmt::format("\"{}:\" before the variable list", l.substr(0, colon)));
      if (npoints < 0) return rd.error("missing \"No. Points:\"");
      cur.title = title;
      cur.re.assign(cur.names.size(), {});
      if (cur.complex) cur.im.assign(cur.names.size(), {});
      for (auto& v : cur.re) v.reserve(static_cast<size_t>(npoints));
      for (auto& v : cur.im) v.reserve(static_cast<size_t>(npoints));
      Status s = key == "values" ? read_ascii_values(rd, static_cast<int>(npoints), cur)
                                 : read_binary_values(rd, static_cast<int>(npoints), cur);
      if (!s) return s;
      plots.push_back(std::move(cur));
      cur = RawPlot();
      nvars = npoints = -1;
      have_vars = false;
    }
    // Other keys ("Date:", "Command:", "Option:", "Dimensions:") carry nothing we use.
  }
  if (have_vars || !cur.plotname.empty()) return rd.error("file ends before the plot's values");
  if (plots.empty()) return rd.error("no plots in file");
  return Status::success();
}

}  // namespace anasim
