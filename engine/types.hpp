// Basic vocabulary of the engine: typed indices, source locations and status values.
// Engine and device code report failures as values (Status / Diag); only the CLI throws or exits.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <cstdint>
#include <fmt/format.h>

namespace anasim {

// A circuit node. Ground is node 0; other nodes are 1..n-1 in order of first appearance.
struct NodeId {
  int v = 0;
  constexpr NodeId() = default;
  constexpr explicit NodeId(int i) : v(i) {}
  constexpr bool is_ground() const { return v == 0; }
  friend constexpr bool operator==(NodeId a, NodeId b) { return a.v == b.v; }
  friend constexpr bool operator!=(NodeId a, NodeId b) { return a.v != b.v; }
};

// A row/column of the MNA system (node voltage or branch current). -1 = ground (no unknown).
struct UnknownIndex {
  int v = -1;
  constexpr UnknownIndex() = default;
  constexpr explicit UnknownIndex(int i) : v(i) {}
  constexpr bool is_ground() const { return v < 0; }
  friend constexpr bool operator==(UnknownIndex a, UnknownIndex b) { return a.v == b.v; }
  friend constexpr bool operator!=(UnknownIndex a, UnknownIndex b) { return a.v != b.v; }
};

namespace detail {
// Physical lines of a text as (offset, length without terminator): terminators \n, \r\n or \r; a UTF-8
// byte-order mark is skipped; no empty last line.
std::vector<std::pair<size_t, size_t>> line_spans(std::string_view text);
}  // namespace detail

// Makes the pages of [p, p + bytes) resident and writable, on two threads (this one and a helper), before one
// thread constructs a large array there: the page faults of that thread (each a trap, a zeroed page and its
// accounting) become two threads' batched population (Linux 5.14 MADV_POPULATE_WRITE: ~1.1 against ~1.7 us per
// 4 KiB page measured on this project's 2-core VM). The contents are not changed (pages already resident stay as
// they are), so it is safe on memory in use. A no-op below 4 MiB, on one thread (OpenMP limit 1, or inside a
// parallel region), and where the kernel lacks it (the construction then faults as it goes). Used where the SPICE
// reader and the elaboration construct their records of a flat deck (784x128 crossbar deck: 53 and 94 MB; whole
// run 0.621 -> 0.593 s, median of 21 alternated runs).
void populate_pages(const void* p, size_t bytes);

// A text that source locations point into: a path and, if known, the physical lines of what was read from
// it. Registered texts live for the rest of the process (diagnostics can outlive the netlist read from the
// file), or until the SourceScope open on the registering thread ends; a run registers one per file read, plus
// one per diagnostic of readers that quote a single line. Thread-safe; the returned pointer is never null.
class SourceFile {
 public:
  // `text` as read from `path`, split into physical lines by detail::line_spans; its first line is line
  // `first_line` (1-based; a diagnostic that quotes one line of a larger file registers that line alone).
  static const SourceFile* add(std::string path, std::string text, int first_line = 1);
  // A path with no text (interned: one object per distinct path).
  static const SourceFile* path_only(const std::string& path);

  const std::string& path() const { return path_; }
  // The whole text and each physical line as (offset into text(), length without terminator).
  std::string_view text() const { return text_; }
  const std::vector<std::pair<size_t, size_t>>& spans() const { return spans_; }
  // Physical line `line` (1-based) without its terminator; "" if out of range.
  std::string_view line(int line) const;

 private:
  SourceFile() = default;
  std::string path_, text_;
  std::vector<std::pair<size_t, size_t>> spans_;
  int first_line_ = 1;
};

// The files registered (SourceFile::add) on one thread while it is open, freed when it is destroyed: a process that
// reads many netlists (the Python module, a fuzzer) keeps only those still in use, where the registry would
// otherwise keep every text it ever read. Contract: nothing that holds a SourceLoc into those files (parsed and
// flattened netlists, Status errors, hardware configurations) may outlive the scope, so declare it before them.
// Scopes do not nest: one opened while another is open on the thread leaves the files to the outer one. Files
// registered on other threads (workers) are not its own and stay for the process, as without a scope.
class SourceScope {
 public:
  SourceScope();
  ~SourceScope();
  SourceScope(const SourceScope&) = delete;
  SourceScope& operator=(const SourceScope&) = delete;
  // Files registered and not yet freed, process-wide (path_only objects included).
  static std::size_t registered();

 private:
  friend class SourceFile;
  bool open_ = false;
  std::vector<const SourceFile*> files_;
};

// Where a parsed object came from: 16 bytes, copied freely (netlists of 10^5 devices carry ~10 per device).
// line/col are 1-based; line 0 = no line (the file as a whole, or no location at all when src is null).
struct SourceLoc {
  const SourceFile* src = nullptr;
  int line = 0;
  int col = 0;
  SourceLoc() = default;
  SourceLoc(const SourceFile* f, int line_, int col_) : src(f), line(line_), col(col_) {}
  // The file as a whole (no line), e.g. for "cannot open" errors.
  static SourceLoc whole(const std::string& path) { return SourceLoc(SourceFile::path_only(path), 0, 0); }
  bool valid() const { return line > 0; }
  // Path as given on the command line or include ("" if none), and the whole source line ("" if unknown).
  const std::string& file() const;
  std::string_view text() const { return src ? src->line(line) : std::string_view(); }
};

// Error classes map to CLI exit codes: Input -> 2, Numerical -> 3, Other -> 1.
enum class ErrorKind { Input, Numerical, Other };

// One diagnostic: a message, optionally located in a source file.
struct Diag {
  ErrorKind kind = ErrorKind::Input;
  std::string message;
  SourceLoc loc;
  // "file:line:col: error: message\n  <line>\n  ^"; "file: error: message" when only the file is known;
  // "error: message" without a location.
  std::string to_string() const;
};

// Result of an operation: ok, or the first error (plus any warnings collected on the way).
struct Status {
  std::vector<Diag> errors;
  std::vector<std::string> warnings;
  bool ok() const { return errors.empty(); }
  explicit operator bool() const { return ok(); }
  static Status success() { return {}; }
  static Status fail(ErrorKind k, std::string msg, SourceLoc loc = {}) {
    Status s;
    s.errors.push_back(Diag{k, std::move(msg), std::move(loc)});
    return s;
  }
  static Status input(std::string msg, SourceLoc loc = {}) { return fail(ErrorKind::Input, std::move(msg), std::move(loc)); }
  static Status numerical(std::string msg) { return fail(ErrorKind::Numerical, std::move(msg)); }
  void merge(const Status& o) {
    errors.insert(errors.end(), o.errors.begin(), o.errors.end());
    warnings.insert(warnings.end(), o.warnings.begin(), o.warnings.end());
  }
  std::string to_string() const;  // all errors, one per paragraph
};

}  // namespace anasim
