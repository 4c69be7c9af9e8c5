// Formatting of diagnostics: file:line:col, the offending line and a caret under the column.
#include "engine/types.hpp"
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <mutex>
#include <unordered_map>

namespace anasim {

namespace {
// The registry behind SourceFile: objects are never freed, so SourceLocs stay valid for the process.
struct SourceRegistry {
  std::mutex mu;
  std::deque<SourceFile> files;
  std::unordered_map<std::string, const SourceFile*> by_path;  // path_only objects
};
SourceRegistry& registry() {
  static SourceRegistry* r = new SourceRegistry;  // not destroyed: SourceLocs may be used during exit
  return *r;
}
}  // namespace

std::vector<std::pair<size_t, size_t>> detail::line_spans(std::string_view text) {
  std::vector<std::pair<size_t, size_t>> spans;
  const char* p = text.data();
  size_t n = text.size(), start = 0;
  if (n >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3;
  auto next_nl = [&](size_t from) {
    const void* q = std::memchr(p + from, '\n', n - from);
    return q ? static_cast<size_t>(static_cast<const char*>(q) - p) : n;
  };
  const bool has_cr = n > start && std::memchr(p + start, '\r', n - start) != nullptr;
  spans.reserve(n / 24 + 1);
  size_t nl = next_nl(start);  // the first '\n' at or after start (n if none)
  while (start < n) {
    if (nl < start) nl = next_nl(start);
    const void* cr = has_cr ? std::memchr(p + start, '\r', nl - start) : nullptr;
    const size_t end = cr ? static_cast<size_t>(static_cast<const char*>(cr) - p) : nl;
    spans.emplace_back(start, end - start);
    if (end == n) break;
    start = end + 1;
    if (p[end] == '\r' && start < n && p[start] == '\n') ++start;
  }
  return spans;
}

const SourceFile* SourceFile::add(std::string path, std::string text, int first_line) {
  std::vector<std::pair<size_t, size_t>> spans = detail::line_spans(text);
  SourceRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  SourceFile& f = r.files.emplace_back(SourceFile());
  f.path_ = std::move(path);
  f.text_ = std::move(text);
  f.spans_ = std::move(spans);
  f.first_line_ = first_line;
  return &f;
}

const SourceFile* SourceFile::path_only(const std::string& path) {
  SourceRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_path.find(path);
  if (it != r.by_path.end()) return it->second;
  SourceFile& f = r.files.emplace_back(SourceFile());
  f.path_ = path;
  r.by_path.emplace(path, &f);
  return &f;
}

std::string_view SourceFile::line(int line) const {
  const long k = static_cast<long>(line) - first_line_;
  if (k < 0 || k >= static_cast<long>(spans_.size())) return {};
  return std::string_view(text_).substr(spans_[k].first, spans_[k].second);
}

const std::string& SourceLoc::file() const {
  static const std::string none;
  return src ? src->path() : none;
}

std::string Diag::to_string() const {
  if (!loc.valid() && !loc.file().empty()) return fmt::format("{}: error: {}", loc.file(), message);  // whole file
  if (!loc.valid()) return fmt::format("error: {}", message);
  std::string s = fmt::format("{}:{}:{}: error: {}", loc.file(), loc.line, loc.col, message);
  const std::string_view text = loc.text();
  if (!text.empty()) {
    std::string caret;
    int col = loc.col > 0 ? loc.col : 1;
    for (int i = 1; i < col && i <= static_cast<int>(text.size()); ++i)
      caret += (text[i - 1] == '\t') ? '\t' : ' ';
    s += fmt::format("\n  {}\n  {}^", text, caret);
  }
  return s;
}

std::string Status::to_string() const {
  std::string s;
  for (const auto& e : errors) {
    if (!s.empty()) s += "\n";
    s += e.to_string();
  }
  return s;
}

}  // namespace anasim
