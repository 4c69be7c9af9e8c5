// SPICE numbers ("10k", "2.2uF") and a small recursive-descent evaluator for parameter expressions.
// Errors are reported as Status values located at the offending character.
#include "engine/expr.hpp"
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include "engine/netlist.hpp"

namespace anasim {

const double* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

namespace {

bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }

// Scale factor of the letters following a number ("meg", "k", "uF", "ohm" -> 1).
double suffix_scale(const std::string& letters) {
  std::string l = to_lower(letters);
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

enum class NumScan { NotANumber, Ok, OutOfRange };

// Scans an unsigned SPICE number starting at s[pos]: mantissa, optional exponent, optional suffix/unit
// letters. On Ok, `end` is one past the last consumed character.
NumScan scan_number(const std::string& s, size_t pos, double& value, size_t& end) {
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
  if (res.ec == std::errc::result_out_of_range) return NumScan::OutOfRange;
  if (res.ec != std::errc() || res.ptr != s.data() + p) return NumScan::NotANumber;
  size_t q = p;
  while (q < n && is_alpha(s[q])) ++q;
  value = mant * suffix_scale(s.substr(p, q - p));
  if (!std::isfinite(value)) return NumScan::OutOfRange;
  end = q;
  return NumScan::Ok;
}

struct Func {
  const char* name;
  int min_args, max_args;  // max_args < 0: variadic
};

const Func kFuncs[] = {
    {"sqrt", 1, 1},  {"exp", 1, 1},   {"log", 1, 1},  {"ln", 1, 1},    {"log10", 1, 1}, {"sin", 1, 1},
    {"cos", 1, 1},   {"tan", 1, 1},   {"asin", 1, 1}, {"acos", 1, 1},  {"atan", 1, 1},  {"atan2", 2, 2},
    {"sinh", 1, 1},  {"cosh", 1, 1},  {"tanh", 1, 1}, {"abs", 1, 1},   {"sgn", 1, 1},   {"floor", 1, 1},
    {"ceil", 1, 1},  {"pow", 2, 2},   {"min", 2, -1}, {"max", 2, -1},
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
  if (f == "atan") return std::atan(a[0]);
  if (f == "atan2") return std::atan2(a[0], a[1]);
  if (f == "sinh") return std::sinh(a[0]);
  if (f == "cosh") return std::cosh(a[0]);
  if (f == "tanh") return std::tanh(a[0]);
  if (f == "abs") return std::fabs(a[0]);
  if (f == "sgn") return a[0] > 0 ? 1.0 : (a[0] < 0 ? -1.0 : 0.0);
  if (f == "floor") return std::floor(a[0]);
  if (f == "ceil") return std::ceil(a[0]);
  if (f == "pow") return std::pow(a[0], a[1]);
  double r = a[0];
  for (double x : a) r = (f == "min") ? std::min(r, x) : std::max(r, x);
  return r;
}

constexpr int kMaxDepth = 200;

class ExprParser {
 public:
  ExprParser(const std::string& s, size_t begin, size_t end, const SourceLoc& loc, const Scope& scope)
      : s_(s), p_(begin), end_(end), loc_(loc), scope_(scope) {}

  Status run(double& out) {
    skip();
    if (p_ >= end_) return fail(p_, "empty expression; expected a number or an expression");
    double v = 0;
    if (!expr(v)) return err_;
    skip();
    if (p_ < end_) {
      if (s_[p_] == ')') return fail(p_, "unbalanced parenthesis: unexpected ')'");
      return fail(p_, fmt::format("unexpected character '{}'; expected an operator", s_[p_]));
    }
    if (!std::isfinite(v)) return fail(0, "expression value is not a finite number");
    out = v;
    return Status::success();
  }

 private:
  const std::string& s_;
  size_t p_, end_;
  const SourceLoc& loc_;
  const Scope& scope_;
  Status err_;
  int depth_ = 0;

  Status fail(size_t offset, std::string msg) {
    SourceLoc l = loc_;
    if (l.valid()) l.col = loc_.col + static_cast<int>(offset);
    err_ = Status::input(std::move(msg), std::move(l));
    return err_;
  }
  bool error(size_t offset, std::string msg) {
    fail(offset, std::move(msg));
    return false;
  }

  void skip() {
    while (p_ < end_ && is_space(s_[p_])) ++p_;
  }
  bool at(char c) {
    skip();
    return p_ < end_ && s_[p_] == c;
  }

  bool expr(double& v) {
    if (++depth_ > kMaxDepth) return error(p_, "expression nested too deeply");
    bool ok = sum(v);
    --depth_;
    return ok;
  }

  bool sum(double& v) {
    if (!product(v)) return false;
    for (;;) {
      skip();
      if (p_ >= end_ || (s_[p_] != '+' && s_[p_] != '-')) return true;
      char op = s_[p_++];
      double r = 0;
      if (!product(r)) return false;
      v = (op == '+') ? v + r : v - r;
    }
  }

  bool product(double& v) {
    if (!unary(v)) return false;
    for (;;) {
      skip();
      if (p_ >= end_) return true;
      char op = s_[p_];
      if (op != '*' && op != '/') return true;
      if (op == '*' && p_ + 1 < end_ && s_[p_ + 1] == '*') return true;  // '**' is power
      size_t op_pos = p_++;
      double r = 0;
      if (!unary(r)) return false;
      if (op == '/') {
        if (r == 0.0) return error(op_pos, "division by zero");
        v /= r;
      } else {
        v *= r;
      }
    }
  }

  bool unary(double& v) {
    skip();
    if (p_ < end_ && (s_[p_] == '-' || s_[p_] == '+')) {
      char op = s_[p_++];
      if (++depth_ > kMaxDepth) return error(p_, "expression nested too deeply");
      bool ok = unary(v);
      --depth_;
      if (op == '-') v = -v;
      return ok;
    }
    return power(v);
  }

  // power := primary (('^' | '**') unary)?   (right associative; -2^2 = -4)
  bool power(double& v) {
    if (!primary(v)) return false;
    skip();
    size_t op_pos = p_;
    if (p_ < end_ && s_[p_] == '^') {
      ++p_;
    } else if (p_ + 1 < end_ && s_[p_] == '*' && s_[p_ + 1] == '*') {
      p_ += 2;
    } else {
      return true;
    }
    double e = 0;
    if (++depth_ > kMaxDepth) return error(p_, "expression nested too deeply");
    bool ok = unary(e);
    --depth_;
    if (!ok) return false;
    double r = std::pow(v, e);
    if (!std::isfinite(r) && std::isfinite(v) && std::isfinite(e))
      return error(op_pos, fmt::format("math error: {} ^ {} is undefined", v, e));
    v = r;
    return true;
  }

  bool primary(double& v) {
    skip();
    if (p_ >= end_) return error(p_, "unexpected end of expression; expected a number, a parameter name or '('");
    char c = s_[p_];
    if (is_digit(c) || (c == '.' && p_ + 1 < end_ && is_digit(s_[p_ + 1]))) return number(v);
    if (is_alpha(c) || c == '_') return identifier(v);
    if (c == '(') {
      size_t open = p_++;
      if (!expr(v)) return false;
      if (!at(')')) {
        if (p_ < end_)
          return error(p_, fmt::format("unexpected character '{}'; expected ')' or an operator", s_[p_]));
        return error(open, "unbalanced parenthesis: '(' is never closed");
      }
      ++p_;
      return true;
    }
    if (c == ')') return error(p_, "unbalanced parenthesis: unexpected ')'; expected a number, a parameter name or '('");
    return error(p_, fmt::format("unexpected character '{}'; expected a number, a parameter name or '('", c));
  }

  bool number(double& v) {
    size_t start = p_;
    std::string rest = s_.substr(start, end_ - start);
    size_t len = 0;
    NumScan r = scan_number(rest, 0, v, len);
    // The number must not run into further digits or dots ("1k5" and "1.2.3" are bad numbers).
    bool clean = r == NumScan::Ok && (len == rest.size() || !(is_ident_char(rest[len]) || rest[len] == '.'));
    if (!clean) {
      size_t run = 0;
      while (run < rest.size() && (is_ident_char(rest[run]) || rest[run] == '.')) ++run;
      std::string tok = rest.substr(0, std::max(run, len));
      if (r == NumScan::OutOfRange) return error(start, fmt::format("number out of range '{}'", tok));
      return error(start, fmt::format("bad number '{}'", tok));
    }
    p_ = start + len;
    return true;
  }

  bool identifier(double& v) {
    size_t start = p_;
    while (p_ < end_ && is_ident_char(s_[p_])) ++p_;
    std::string name = to_lower(s_.substr(start, p_ - start));
    if (at('(')) return call(name, start, v);
    if (const double* x = scope_.find(name)) {
      v = *x;
      return true;
    }
    if (name == "pi") {
      v = 3.14159265358979323846;
      return true;
    }
    return error(start, fmt::format("unknown parameter '{}'", name));
  }

  bool call(const std::string& name, size_t name_pos, double& v) {
    const Func* f = nullptr;
    for (const Func& g : kFuncs)
      if (name == g.name) f = &g;
    if (!f) return error(name_pos, fmt::format("unknown function '{}'", name));
    size_t open = p_++;  // at '('
    std::vector<double> args;
    if (!at(')')) {
      for (;;) {
        double a = 0;
        if (!expr(a)) return false;
        args.push_back(a);
        if (at(',')) {
          ++p_;
          continue;
        }
        if (at(')')) break;
        if (p_ < end_)
          return error(p_, fmt::format("unexpected character '{}'; expected ',' or ')'", s_[p_]));
        return error(open, "unbalanced parenthesis: '(' is never closed");
      }
    }
    ++p_;  // ')'
    int n = static_cast<int>(args.size());
    if (n < f->min_args || (f->max_args >= 0 && n > f->max_args)) {
      std::string expect = f->max_args < 0 ? fmt::format("at least {}", f->min_args)
                           : f->min_args == f->max_args ? fmt::format("{}", f->min_args)
                                                        : fmt::format("{} to {}", f->min_args, f->max_args);
      return error(name_pos, fmt::format("function {} takes {} argument{}, got {}", name, expect,
                                         f->min_args == 1 && f->max_args == 1 ? "" : "s", n));
    }
    v = apply_function(name, args);
    bool args_finite = true;
    for (double a : args) args_finite = args_finite && std::isfinite(a);
    if (!std::isfinite(v) && args_finite) {
      std::string list;
      for (double a : args) list += (list.empty() ? "" : ", ") + fmt::format("{}", a);
      return error(name_pos, fmt::format("math error: {}({}) is undefined", name, list));
    }
    return true;
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
  // Strip surrounding whitespace, braces and quotes; offsets stay relative to `text` for the caret.
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
  // Fast path: a plain number.
  if (auto v = parse_spice_number(text.substr(b, e - b))) {
    out = *v;
    return Status::success();
  }
  ExprParser p(text, b, e, loc, scope);
  return p.run(out);
}

}  // namespace anasim
