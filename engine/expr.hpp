// Numbers with SPICE engineering suffixes and arithmetic expressions over named parameters.
#pragma once
#include <map>
#include <optional>
#include <string>
#include "engine/types.hpp"

namespace anasim {

// Named parameter values visible to an expression. Lookups fall back to the parent scope.
class Scope {
 public:
  explicit Scope(const Scope* parent = nullptr) : parent_(parent) {}
  void set(const std::string& name, double v) { vars_[name] = v; }
  const double* find(const std::string& name) const;
 private:
  const Scope* parent_;
  std::map<std::string, double> vars_;
};

// Parses a SPICE number: "10k", "1.5meg", "2.2uF", "1e-3", "100" (trailing letters after a suffix are units and
// ignored, as in SPICE). Returns nullopt if text is not a complete number.
std::optional<double> parse_spice_number(const std::string& text);

// Evaluates an expression: numbers (with suffixes), parameter names, + - * / ^ ** unary -, parentheses,
// functions sqrt exp log log10 ln sin cos tan atan abs min max pow floor ceil, constants pi.
// Surrounding braces or quotes ("{...}", "'...'") are stripped. On error returns a Status located at
// the offending character (column offset from loc).
Status evaluate_expr(const std::string& text, const SourceLoc& loc, const Scope& scope, double& out);

}  // namespace anasim
