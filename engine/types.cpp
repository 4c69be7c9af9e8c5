// Formatting of diagnostics: file:line:col, the offending line and a caret under the column; populate_pages.
#include "engine/types.hpp"
#include "engine/two_threads.hpp"
#include <sys/mman.h>
#include <cstdint>
#include <cstring>
#include <memory>
#include <fmt/format.h>
#include <mutex>
#include <unordered_map>

namespace anasim {

void populate_pages(const void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  constexpr size_t kMin = size_t(4) << 20;
  if (bytes < kMin || !second_thread_allowed()) return;
  const size_t page = 4096;
  const std::uintptr_t b = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const std::uintptr_t e = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
  if (e <= b) return;
  const std::uintptr_t mid = b + ((e - b) / 2 & ~(page - 1));
  auto populate = [](std::uintptr_t from, std::uintptr_t to) {
    if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);  // (failure: no-op)
  };
  run_beside([&] { populate(mid, e); }, [&] { populate(b, mid); });
#else
  (void)p;
  (void)bytes;
#endif
}

namespace {
// The registry behind SourceFile: objects live for the process, or until the SourceScope that collected them ends.
struct SourceRegistry {
  std::mutex mu;
  std::unordered_map<const SourceFile*, std::unique_ptr<SourceFile>> files;
  std::unordered_map<std::string, const SourceFile*> by_path;  // path_only objects (never freed)
};
thread_local SourceScope* t_scope = nullptr;  // the scope collecting this thread's files
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
  std::unique_ptr<SourceFile> f(new SourceFile());
  f->spans_ = detail::line_spans(text);
  f->path_ = std::move(path);
  f->text_ = std::move(text);
  f->first_line_ = first_line;
  const SourceFile* p = f.get();
  SourceRegistry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.files.emplace(p, std::move(f));
  }
  if (t_scope) t_scope->files_.push_back(p);
  return p;
}

const SourceFile* SourceFile::path_only(const std::string& path) {
  SourceRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_path.find(path);
  if (it != r.by_path.end()) return it->second;
  std::unique_ptr<SourceFile> f(new SourceFile());
  f->path_ = path;
  const SourceFile* p = f.get();
  r.files.emplace(p, std::move(f));
  r.by_path.emplace(path, p);
  return p;
}

SourceScope::SourceScope() {
  if (t_scope) return;
  open_ = true;
  t_scope = this;
}

SourceScope::~SourceScope() {
  if (open_) t_scope = nullptr;
  if (files_.empty()) return;
  SourceRegistry& r = registry();
  std::vector<std::unique_ptr<SourceFile>> gone;  // freed outside the lock
  gone.reserve(files_.size());
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (const SourceFile* f : files_) {
      auto it = r.files.find(f);
      if (it == r.files.end()) continue;
      gone.push_back(std::move(it->second));
      r.files.erase(it);
    }
  }
}

std::size_t SourceScope::registered() {
  SourceRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.files.size();
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
