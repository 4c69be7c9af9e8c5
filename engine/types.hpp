// Basic vocabulary of the engine: typed indices, source locations and status values.
// Engine and device code report failures as values (Status / Diag); only the CLI throws or exits.
#pragma once
#include <string>
#include <vector>
#include <cstdint>

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

// Where a parsed object came from. line/col are 1-based; line 0 = no location (built programmatically).
struct SourceLoc {
  std::string file;       // path as given on the command line / include
  int line = 0;
  int col = 0;
  std::string text;       // the whole source line, for the caret display
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
