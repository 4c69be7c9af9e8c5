// Basic vocabulary of the engine: typed indices, source locations and status values.
// Engine and device code report failures as values (Status / Diag); only the CLI throws or exits.
#pragma once
#include <memory>
#include <string>
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

// An immutable string shared by reference: copying a SourceLoc copies two pointers, not two strings
// (netlists of 10^5 devices carry ~10 locations per device).
class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string s) : p_(std::make_shared<const std::string>(std::move(s))) {}
  SharedText(const char* s) : SharedText(std::string(s)) {}
  const std::string& str() const { return p_ ? *p_ : empty_str(); }
  operator const std::string&() const { return str(); }
  bool empty() const { return str().empty(); }
  size_t size() const { return str().size(); }
  char operator[](size_t i) const { return str()[i]; }
  std::string substr(size_t pos, size_t n = std::string::npos) const { return str().substr(pos, n); }
  friend bool operator==(const SharedText& a, const SharedText& b) { return a.p_ == b.p_ || a.str() == b.str(); }
  friend bool operator!=(const SharedText& a, const SharedText& b) { return !(a == b); }
  friend bool operator==(const SharedText& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const std::string& a, const SharedText& b) { return a == b.str(); }
  friend bool operator==(const SharedText& a, const char* b) { return a.str() == b; }
  friend std::string operator+(const SharedText& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const SharedText& b) { return a + b.str(); }
 private:
  static const std::string& empty_str() {
    static const std::string e;
    return e;
  }
  std::shared_ptr<const std::string> p_;
};

// Where a parsed object came from. line/col are 1-based; line 0 = no location (built programmatically).
struct SourceLoc {
  SharedText file;        // path as given on the command line / include
  int line = 0;
  int col = 0;
  SharedText text;        // the whole source line, for the caret display
  bool valid() const { return line > 0; }
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

template <>
struct fmt::formatter<anasim::SharedText> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const anasim::SharedText& t, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(t.str()), ctx);
  }
};
