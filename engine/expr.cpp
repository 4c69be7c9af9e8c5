// SPICE numbers ("10k", "2.2uF") and parameter expressions: the number scanner, the numparam functions and the
// parser's evaluating back end (evaluate_expr). The parser is in expr_parser.hpp; behavioural expressions are
// compiled in expr_compile.cpp and their tape evaluated in expr_tape.cpp. Errors are located Status values.
#include "engine/expr.hpp"
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <fmt/format.h>
#include "engine/expr_impl.hpp"
#include "engine/expr_parser.hpp"
#include "engine/netlist.hpp"

namespace anasim {

using namespace expr_impl;  // expr_impl.hpp, expr_parser.hpp

const double* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

namespace {

// Scale factor of the letters following a number ("meg", "k", "uF", "ohm" -> 1).
double suffix_scale(std::string_view letters) {
  std::string l = to_lower(std::string(letters));
  if (l.empty()) return 1.0;
  if (l.compare(0, 3, "meg") == 0) return 1e6;
  if (l.compare(0, 3, "mil") == 0) return 25.4e-6;
  switch (l[0]) {
    case 'f': return 1e-15;
    case 'p': return 1e-12;
    case 'n': return 1e-9;
    case 'u': return 1e-6;
    case 'm': return 1e-3;
    case 'k': return 1e3;
    case 'g': return 1e9;
    case 't': return 1e12;
    default: return 1.0;  // a unit such as "V" or "ohm"
  }
}

}  // namespace

namespace expr_impl {

NumScan scan_number(std::string_view s, size_t pos, double& value, size_t& end) {
  size_t p = pos;
  size_t n = s.size();
  bool digits = false;
  while (p < n && is_digit(s[p])) { ++p; digits = true; }
  if (p < n && s[p] == '.') {
    ++p;
    while (p < n && is_digit(s[p])) { ++p; digits = true; }
  }
  if (!digits) return NumScan::NotANumber;
  // Exponent only if digits follow ("1e3", "1e-3"); otherwise "e" is a unit letter.
  if (p < n && (s[p] == 'e' || s[p] == 'E')) {
    size_t q = p + 1;
    if (q < n && (s[q] == '+' || s[q] == '-')) ++q;
    if (q < n && is_digit(s[q])) {
      while (q < n && is_digit(s[q])) ++q;
      p = q;
    }
  }
  double mant = 0.0;
  auto res = std::from_chars(s.data() + pos, s.data() + p, mant);
  size_t q = p;
  // The micro suffix also as UTF-8 µ (U+00B5) or μ (U+03BC), as ngspice reads it ("10µF").
  const bool micro = q + 1 < n && ((s[q] == '\xC2' && s[q + 1] == '\xB5') || (s[q] == '\xCE' && s[q + 1] == '\xBC'));
  if (micro) q += 2;
  while (q < n && is_alpha(s[q])) ++q;
  end = q;
  if (res.ec == std::errc::result_out_of_range) return NumScan::OutOfRange;
  if (res.ec != std::errc() || res.ptr != s.data() + p) return NumScan::NotANumber;
  value = mant * (micro ? 1e-6 : suffix_scale(s.substr(p, q - p)));
  if (!std::isfinite(value) || (value == 0.0 && mant != 0.0)) return NumScan::OutOfRange;
  return NumScan::Ok;
}

double pwl_value(const double* a, size_t n) {
  const size_t pts = (n - 1) / 2;
  size_t k0 = 0, k1 = pts - 1;
  while (k1 - k0 > 1) {
    const size_t k = (k0 + k1) / 2;
    if (a[1 + 2 * k] > a[0]) k1 = k;
    else k0 = k;
  }
  const double x0 = a[1 + 2 * k0], y0 = a[2 + 2 * k0], x1 = a[1 + 2 * k1], y1 = a[2 + 2 * k1];
  return y0 + (y1 - y0) * (a[0] - x0) / (x1 - x0);
}

std::string pwl_check(const std::vector<double>& a) {
  if (a.size() % 2 == 0 || a.size() < 5)
    return fmt::format("pwl(x, x1, y1, x2, y2, ...) needs x and at least two (x, y) pairs, got {} arguments",
                       a.size());
  for (size_t k = 3; k < a.size(); k += 2)
    if (!(a[k] > a[k - 2]))
      return fmt::format("pwl: the x values must increase, got {} after {}", a[k], a[k - 2]);
  return {};
}

void strip_wrappers(const std::string& text, size_t& b, size_t& e) {
  for (;;) {
    while (b < e && is_space(text[b])) ++b;
    while (e > b && is_space(text[e - 1])) --e;
    if (e - b >= 2 && ((text[b] == '{' && text[e - 1] == '}') || (text[b] == '\'' && text[e - 1] == '\'') ||
                       (text[b] == '"' && text[e - 1] == '"'))) {
      ++b;
      --e;
      continue;
    }
    break;
  }
}

}  // namespace expr_impl

namespace {

const Func kFuncs[] = {
    {"sqrt", 1, 1},   {"exp", 1, 1},    {"log", 1, 1},   {"ln", 1, 1},    {"log10", 1, 1},  {"sin", 1, 1},
    {"cos", 1, 1},    {"tan", 1, 1},    {"asin", 1, 1},  {"acos", 1, 1},  {"atan", 1, 1},   {"atan2", 2, 2},
    {"sinh", 1, 1},   {"cosh", 1, 1},   {"tanh", 1, 1},  {"abs", 1, 1},   {"sgn", 1, 1},    {"floor", 1, 1},
    {"ceil", 1, 1},   {"pow", 2, 2},    {"min", 1, -1},  {"max", 1, -1},  {"pwr", 2, 2},    {"nint", 1, 1},
    {"int", 1, 1},    {"sqr", 1, 1},    {"asinh", 1, 1}, {"acosh", 1, 1}, {"atanh", 1, 1},  {"arctan", 1, 1},
    {"u", 1, 1},      {"u2", 1, 1},     {"uramp", 1, 1}, {"eq0", 1, 1},   {"ne0", 1, 1},    {"gt0", 1, 1},
    {"lt0", 1, 1},    {"ge0", 1, 1},    {"le0", 1, 1},   {"limit", 3, 3}, {"ternary_fcn", 3, 3},
    {"pwl", 5, -1},
};

double apply_function(const std::string& f, const std::vector<double>& a) {
  if (f == "sqrt") return std::sqrt(a[0]);
  if (f == "exp") return std::exp(a[0]);
  if (f == "log" || f == "ln") return std::log(a[0]);
  if (f == "log10") return std::log10(a[0]);
  if (f == "sin") return std::sin(a[0]);
  if (f == "cos") return std::cos(a[0]);
  if (f == "tan") return std::tan(a[0]);
  if (f == "asin") return std::asin(a[0]);
  if (f == "acos") return std::acos(a[0]);
  if (f == "atan" || f == "arctan") return std::atan(a[0]);
  if (f == "atan2") return std::atan2(a[0], a[1]);
  if (f == "sinh") return std::sinh(a[0]);
  if (f == "cosh") return std::cosh(a[0]);
  if (f == "tanh") return std::tanh(a[0]);
  if (f == "asinh") return std::asinh(a[0]);
  if (f == "acosh") return std::acosh(a[0]);
  if (f == "atanh") return std::atanh(a[0]);
  if (f == "abs") return std::fabs(a[0]);
  if (f == "sgn") return a[0] > 0 ? 1.0 : (a[0] < 0 ? -1.0 : 0.0);
  if (f == "floor") return std::floor(a[0]);
  if (f == "ceil") return std::ceil(a[0]);
  if (f == "int") return std::trunc(a[0]);
  if (f == "nint") return std::nearbyint(a[0]);
  if (f == "sqr") return a[0] * a[0];
  if (f == "pow") return std::pow(a[0], a[1]);
  if (f == "pwr") return std::pow(std::fabs(a[0]), a[1]);  // numparam's pwr (the B source's keeps the sign)
  if (f == "u") return a[0] > 0 ? 1.0 : a[0] < 0 ? 0.0 : 0.5;
  if (f == "u2") return a[0] <= 0 ? 0.0 : a[0] <= 1 ? a[0] : 1.0;
  if (f == "uramp") return a[0] > 0 ? a[0] : 0.0;
  if (f == "eq0") return a[0] == 0;
  if (f == "ne0") return a[0] != 0;
  if (f == "gt0") return a[0] > 0;
  if (f == "lt0") return a[0] < 0;
  if (f == "ge0") return a[0] >= 0;
  if (f == "le0") return a[0] <= 0;
  if (f == "limit") return a[0] < a[1] ? a[1] : a[0] > a[2] ? a[2] : a[0];
  if (f == "ternary_fcn") return a[0] != 0 ? a[1] : a[2];
  if (f == "pwl") return pwl_value(a.data(), a.size());
  double r = a[0];
  for (double x : a) r = (f == "min") ? std::min(r, x) : std::max(r, x);
  return r;
}

double apply_binary(Bin op, double a, double b) {
  switch (op) {
    case Bin::Add: return a + b;
    case Bin::Sub: return a - b;
    case Bin::Mul: return a * b;
    case Bin::Div: return a / b;
    case Bin::Pow: return std::pow(a, b);
    case Bin::Lt: return a < b;
    case Bin::Le: return a <= b;
    case Bin::Gt: return a > b;
    case Bin::Ge: return a >= b;
    case Bin::Eq: return a == b;
    case Bin::Ne: return a != b;
    case Bin::And: return a != 0 && b != 0;
    case Bin::Or: return a != 0 || b != 0;
  }
  return 0;
}

// Parameter expressions: numbers, evaluated as they are parsed.
struct EvalSink {
  using Value = double;
  void constant(double c, double& v) { v = c; }
  bool is_reference(const std::string&) const { return false; }
  template <class P>
  std::string reference(const std::string&, const std::vector<std::pair<std::string, size_t>>&, P&, double&) {
    return "internal: no references in parameter expressions";
  }
  std::string variable(const std::string& name, double&) { return fmt::format("unknown parameter '{}'", name); }
  std::string negate(double& v, bool logical) {
    v = logical ? (v == 0 ? 1.0 : 0.0) : -v;
    return {};
  }
  std::string binary(Bin op, double& a, double b) {
    if (op == Bin::Div && b == 0.0) return "division by zero";
    const double r = apply_binary(op, a, b);
    if (op == Bin::Pow && !std::isfinite(r) && std::isfinite(a) && std::isfinite(b))
      return fmt::format("math error: {} ^ {} is undefined", a, b);
    a = r;
    return {};
  }
  std::string select(double& c, double a, double b) {
    c = c != 0 ? a : b;
    return {};
  }
  const Func* function(const std::string& name) const {
    for (const Func& g : kFuncs)
      if (name == g.name) return &g;
    return nullptr;
  }
  std::string call(const std::string& name, const std::vector<double>& args, double& v) {
    if (name == "pwl")
      if (std::string e = pwl_check(args); !e.empty()) return e;
    v = apply_function(name, args);
    bool args_finite = true;
    for (double a : args) args_finite = args_finite && std::isfinite(a);
    if (!std::isfinite(v) && args_finite) {
      std::string list;
      for (double a : args) list += (list.empty() ? "" : ", ") + fmt::format("{}", a);
      return fmt::format("math error: {}({}) is undefined", name, list);
    }
    return {};
  }
};

}  // namespace

std::optional<double> parse_spice_number(const std::string& text) {
  size_t b = 0, e = text.size();
  while (b < e && is_space(text[b])) ++b;
  while (e > b && is_space(text[e - 1])) --e;
  std::string t = text.substr(b, e - b);
  double sign = 1.0;
  size_t p = 0;
  if (p < t.size() && (t[p] == '+' || t[p] == '-')) {
    if (t[p] == '-') sign = -1.0;
    ++p;
  }
  double v = 0;
  size_t end = 0;
  if (scan_number(t, p, v, end) != NumScan::Ok || end != t.size()) return std::nullopt;
  return sign * v;
}

Status evaluate_expr(const std::string& text, const SourceLoc& loc, const Scope& scope, double& out) {
  size_t b = 0, e = text.size();
  strip_wrappers(text, b, e);
  // Fast path: a plain number.
  if (auto v = parse_spice_number(text.substr(b, e - b))) {
    out = *v;
    return Status::success();
  }
  EvalSink sink;
  ExprParser<EvalSink> p(text, b, e, loc, scope, sink);
  double v = 0;
  if (Status st = p.run(v); !st) return st;
  if (!std::isfinite(v)) return p.fail(0, "expression value is not a finite number");
  out = v;
  return Status::success();
}

}  // namespace anasim
