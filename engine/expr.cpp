// SPICE numbers ("10k", "2.2uF") and one recursive-descent expression parser with two back ends: a direct
// evaluator for parameter expressions and a compiler of behavioural expressions (B sources) to a tape that is
// evaluated with reverse-mode derivatives. Errors are reported as Status values located at the offending character.
#include "engine/expr.hpp"
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <string_view>
#include <tuple>
#include <fmt/format.h>
#include "engine/limiting.hpp"
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

enum class NumScan { NotANumber, Ok, OutOfRange };

// Scans an unsigned SPICE number starting at s[pos]: mantissa, optional exponent, optional suffix/unit
// letters. On Ok and OutOfRange (a magnitude beyond a double's range, e.g. 1e-400 or 1e400), `end` is one past
// the last character of the number. A view, so scanning the numbers of a long expression stays linear.
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

struct Func {
  const char* name;
  int min_args, max_args;  // max_args < 0: variadic
};

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

// pwl(x, x1, y1, x2, y2, ...): linear interpolation in the points (x ascending), extrapolated along the first and
// last segments (ngspice PTpwl). a holds x then the pairs.
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

// pwl()'s arguments: x and at least two (x, y) pairs, x ascending; "" or what is wrong.
std::string pwl_check(const std::vector<double>& a) {
  if (a.size() % 2 == 0 || a.size() < 5)
    return fmt::format("pwl(x, x1, y1, x2, y2, ...) needs x and at least two (x, y) pairs, got {} arguments",
                       a.size());
  for (size_t k = 3; k < a.size(); k += 2)
    if (!(a[k] > a[k - 2]))
      return fmt::format("pwl: the x values must increase, got {} after {}", a[k], a[k - 2]);
  return {};
}

constexpr int kMaxDepth = 200;

// Binary operators of the grammar.
enum class Bin { Add, Sub, Mul, Div, Pow, Lt, Le, Gt, Ge, Eq, Ne, And, Or };

// Recursive-descent parser shared by the two expression kinds. The Sink gives the values their meaning:
// EvalSink computes numbers (parameter expressions), CompileSink emits a tape (behavioural expressions).
// Sink::Value is what each sub-expression yields; sink operations return "" or an error message.
template <class Sink>
class ExprParser {
 public:
  using V = typename Sink::Value;
  ExprParser(const std::string& s, size_t begin, size_t end, const SourceLoc& loc, const Scope& scope, Sink& sink)
      : s_(s), p_(begin), end_(end), loc_(loc), scope_(scope), sink_(sink) {}

  Status run(V& out) {
    skip();
    if (p_ >= end_) return fail(p_, "empty expression; expected a number or an expression");
    V v{};
    if (!expr(v)) return err_;
    skip();
    if (p_ < end_) {
      if (s_[p_] == ')') return fail(p_, "unbalanced parenthesis: unexpected ')'");
      return fail(p_, fmt::format("unexpected character '{}'; expected an operator", s_[p_]));
    }
    out = v;
    return Status::success();
  }

  Status fail(size_t offset, std::string msg) {
    SourceLoc l = loc_;
    if (l.valid()) l.col = loc_.col + static_cast<int>(offset);
    err_ = Status::input(std::move(msg), std::move(l));
    return err_;
  }
  // Location of character `offset` of the text.
  SourceLoc loc_of(size_t offset) const {
    SourceLoc l = loc_;
    if (l.valid()) l.col = loc_.col + static_cast<int>(offset);
    return l;
  }

 private:
  const std::string& s_;
  size_t p_, end_;
  const SourceLoc& loc_;
  const Scope& scope_;
  Sink& sink_;
  Status err_;
  int depth_ = 0;

  bool error(size_t offset, std::string msg) {
    fail(offset, std::move(msg));
    return false;
  }
  bool check(size_t offset, std::string msg) { return msg.empty() ? true : error(offset, std::move(msg)); }

  void skip() {
    while (p_ < end_ && is_space(s_[p_])) ++p_;
  }
  bool at(char c) {
    skip();
    return p_ < end_ && s_[p_] == c;
  }
  bool at2(char a, char b) {
    skip();
    return p_ + 1 < end_ && s_[p_] == a && s_[p_ + 1] == b;
  }

  bool expr(V& v) {
    if (++depth_ > kMaxDepth) return error(p_, "expression nested too deeply");
    bool ok = ternary(v);
    --depth_;
    return ok;
  }

  // ternary := or ('?' expr ':' expr)?
  bool ternary(V& v) {
    if (!logical_or(v)) return false;
    if (!at('?')) return true;
    size_t q = p_++;
    V a{}, b{};
    if (!expr(a)) return false;
    if (!at(':')) {
      if (p_ < end_) return error(p_, fmt::format("unexpected character '{}'; expected ':' of 'c ? a : b'", s_[p_]));
      return error(q, "'?' without ':'; expected 'c ? a : b'");
    }
    ++p_;
    if (!expr(b)) return false;
    return check(q, sink_.select(v, a, b));
  }

  // logical_or := logical_and ('||' logical_and)*;  logical_and := comparison ('&&' comparison)*
  bool logical_or(V& v) { return left_assoc(v, '|', Bin::Or, &ExprParser::logical_and); }
  bool logical_and(V& v) { return left_assoc(v, '&', Bin::And, &ExprParser::comparison); }

  // operand (cc operand)*, left-associative: the two-character operators '||' and '&&'.
  bool left_assoc(V& v, char c, Bin op_kind, bool (ExprParser::*operand)(V&)) {
    if (!(this->*operand)(v)) return false;
    while (at2(c, c)) {
      size_t op = p_;
      p_ += 2;
      V r{};
      if (!(this->*operand)(r) || !check(op, sink_.binary(op_kind, v, r))) return false;
    }
    return true;
  }

  // comparison := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)*
  bool comparison(V& v) {
    if (!sum(v)) return false;
    for (;;) {
      skip();
      if (p_ >= end_) return true;
      const char c = s_[p_], d = p_ + 1 < end_ ? s_[p_ + 1] : '\0';
      Bin op;
      size_t len = 1;
      if (c == '<') op = d == '=' ? (len = 2, Bin::Le) : Bin::Lt;
      else if (c == '>') op = d == '=' ? (len = 2, Bin::Ge) : Bin::Gt;
      else if (c == '=' && d == '=') op = Bin::Eq, len = 2;
      else if (c == '!' && d == '=') op = Bin::Ne, len = 2;
      else return true;
      size_t pos = p_;
      p_ += len;
      V r{};
      if (!sum(r) || !check(pos, sink_.binary(op, v, r))) return false;
    }
  }

  bool sum(V& v) {
    if (!product(v)) return false;
    for (;;) {
      skip();
      if (p_ >= end_ || (s_[p_] != '+' && s_[p_] != '-')) return true;
      size_t pos = p_;
      char op = s_[p_++];
      V r{};
      if (!product(r) || !check(pos, sink_.binary(op == '+' ? Bin::Add : Bin::Sub, v, r))) return false;
    }
  }

  bool product(V& v) {
    if (!unary(v)) return false;
    for (;;) {
      skip();
      if (p_ >= end_) return true;
      char op = s_[p_];
      if (op != '*' && op != '/') return true;
      if (op == '*' && p_ + 1 < end_ && s_[p_ + 1] == '*') return true;  // '**' is power
      size_t op_pos = p_++;
      V r{};
      if (!unary(r) || !check(op_pos, sink_.binary(op == '/' ? Bin::Div : Bin::Mul, v, r))) return false;
    }
  }

  bool unary(V& v) {
    skip();
    if (p_ < end_ && (s_[p_] == '-' || s_[p_] == '+' || (s_[p_] == '!' && !(p_ + 1 < end_ && s_[p_ + 1] == '=')))) {
      size_t pos = p_;
      char op = s_[p_++];
      if (++depth_ > kMaxDepth) return error(p_, "expression nested too deeply");
      bool ok = unary(v);
      --depth_;
      if (!ok) return false;
      if (op == '+') return true;
      return check(pos, sink_.negate(v, op == '!'));
    }
    return power(v);
  }

  // power := primary (('^' | '**') unary)?   (right associative; -2^2 = -4)
  bool power(V& v) {
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
    V e{};
    if (++depth_ > kMaxDepth) return error(p_, "expression nested too deeply");
    bool ok = unary(e);
    --depth_;
    if (!ok) return false;
    return check(op_pos, sink_.binary(Bin::Pow, v, e));
  }

  bool primary(V& v) {
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

  bool number(V& v) {
    size_t start = p_;
    const std::string_view rest = std::string_view(s_).substr(start, end_ - start);
    size_t len = 0;
    double x = 0;
    NumScan r = scan_number(rest, 0, x, len);
    // The number must not run into further digits or dots ("1k5" and "1.2.3" are bad numbers).
    bool clean = r == NumScan::Ok && (len == rest.size() || !(is_ident_char(rest[len]) || rest[len] == '.'));
    if (!clean) {
      size_t run = 0;
      while (run < rest.size() && (is_ident_char(rest[run]) || rest[run] == '.')) ++run;
      std::string tok(rest.substr(0, std::max(run, len)));
      if (r == NumScan::OutOfRange)
        return error(start, fmt::format("number '{}' is out of range (a double holds magnitudes from about 2.2e-308 "
                                        "to 1.8e308)", std::string(rest.substr(0, len))));
      return error(start, fmt::format("bad number '{}'", tok));
    }
    p_ = start + len;
    sink_.constant(x, v);
    return true;
  }

  bool identifier(V& v) {
    size_t start = p_;
    while (p_ < end_ && is_ident_char(s_[p_])) ++p_;
    std::string name = to_lower(s_.substr(start, p_ - start));
    if (at('(')) {
      if (sink_.is_reference(name)) return reference(name, start, v);
      return call(name, start, v);
    }
    if (const double* x = scope_.find(name)) {
      sink_.constant(*x, v);
      return true;
    }
    if (name == "pi") {
      sink_.constant(3.14159265358979323846, v);
      return true;
    }
    return check(start, sink_.variable(name, v));
  }

  // v(node) / v(node, node) / i(device): the arguments are names, not expressions.
  bool reference(const std::string& name, size_t name_pos, V& v) {
    size_t open = p_++;
    std::vector<std::pair<std::string, size_t>> args;
    for (;;) {
      skip();
      size_t b = p_;
      while (p_ < end_ && s_[p_] != ',' && s_[p_] != ')' && s_[p_] != '(' && !is_space(s_[p_])) ++p_;
      if (p_ == b) {
        if (p_ >= end_) return error(open, "unbalanced parenthesis: '(' is never closed");
        return error(p_, fmt::format("expected a {} name in {}(...), got '{}'", name == "i" ? "device" : "node", name,
                                     s_[p_]));
      }
      args.emplace_back(to_lower(s_.substr(b, p_ - b)), b);
      if (at(',')) {
        ++p_;
        continue;
      }
      if (at(')')) break;
      if (p_ < end_) return error(p_, fmt::format("unexpected character '{}'; expected ',' or ')'", s_[p_]));
      return error(open, "unbalanced parenthesis: '(' is never closed");
    }
    ++p_;  // ')'
    const size_t max_args = name == "v" ? 2 : 1;
    if (args.size() > max_args)
      return error(args[max_args].second, name == "v" ? "v() takes one or two node names: v(n) or v(n1, n2)"
                                                      : "i() takes one device name: i(vname)");
    return check(name_pos, sink_.reference(name, args, *this, v));
  }

  bool call(const std::string& name, size_t name_pos, V& v) {
    const Func* f = sink_.function(name);
    if (!f && name == "ddt")
      return error(name_pos, "ddt() (a time derivative) is only available in behavioural (B source) expressions");
    if (!f) return error(name_pos, fmt::format("unknown function '{}'", name));
    size_t open = p_++;  // at '('
    std::vector<V> args;
    if (!at(')')) {
      for (;;) {
        V a{};
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
    return check(name_pos, sink_.call(name, args, v));
  }
};

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

// ---- behavioural expressions: scalar semantics and derivatives (ngspice B source) ----------------

int arity(ExprOp op) {
  if (op <= ExprOp::Time) return 0;
  if (op <= ExprOp::Ddt) return 1;
  if (op <= ExprOp::Or) return 2;
  return 3;
}

// Value of a one-argument op at a and its derivative.
struct D1 {
  double f, da;
};
D1 unary_op(ExprOp op, double a) {
  switch (op) {
    case ExprOp::Neg: return {-a, -1};
    case ExprOp::Not: return {a == 0 ? 1.0 : 0.0, 0};
    case ExprOp::Sqrt: {
      const double r = std::sqrt(a);
      return {r, r > 0 ? 0.5 / r : 0.0};
    }
    case ExprOp::Exp: {
      const double e = a > 227.9559242 ? 1e99 : std::exp(a);  // ngspice's cap
      return {e, e};
    }
    case ExprOp::Ln: return {a == 0 ? -1e99 : std::log(a), a == 0 ? 1e99 : 1 / a};
    case ExprOp::Log10: return {a == 0 ? -1e99 : std::log10(a), a == 0 ? 1e99 : 1 / (a * std::log(10.0))};
    case ExprOp::Sin: return {std::sin(a), std::cos(a)};
    case ExprOp::Cos: return {std::cos(a), -std::sin(a)};
    case ExprOp::Tan: {
      const double t = std::tan(a);
      return {t, 1 + t * t};
    }
    case ExprOp::Asin: return {std::asin(a), 1 / std::sqrt(1 - a * a)};
    case ExprOp::Acos: return {std::acos(a), -1 / std::sqrt(1 - a * a)};
    case ExprOp::Atan: return {std::atan(a), 1 / (1 + a * a)};
    case ExprOp::Sinh: return {std::sinh(a), std::cosh(a)};
    case ExprOp::Cosh: return {std::cosh(a), std::sinh(a)};
    case ExprOp::Tanh: {
      const double t = std::tanh(a);
      return {t, 1 - t * t};
    }
    case ExprOp::Asinh: return {std::asinh(a), 1 / std::sqrt(a * a + 1)};
    case ExprOp::Acosh: return {std::acosh(a), 1 / std::sqrt(a * a - 1)};
    case ExprOp::Atanh: return {std::atanh(a), 1 / (1 - a * a)};
    case ExprOp::Abs: return {std::fabs(a), a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0};
    case ExprOp::Sgn: return {a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0, 0};
    case ExprOp::Floor: return {std::floor(a), 0};
    case ExprOp::Ceil: return {std::ceil(a), 0};
    case ExprOp::Nint: return {std::nearbyint(a), 0};
    case ExprOp::Step: return {a > 0 ? 1.0 : a < 0 ? 0.0 : 0.5, 0};
    case ExprOp::Step2: return {a <= 0 ? 0.0 : a <= 1 ? a : 1.0, a > 0 && a <= 1 ? 1.0 : 0.0};
    case ExprOp::Ramp: return {a > 0 ? a : 0.0, a > 0 ? 1.0 : a < 0 ? 0.0 : 0.5};  // ngspice: d uramp = u
    case ExprOp::Trunc: return {std::trunc(a), 0};
    case ExprOp::Sqr: return {a * a, 2 * a};
    default: return {0, 0};
  }
}

// Value of a two-argument op at (a, b) and its partial derivatives.
struct D2 {
  double f, da, db;
};
D2 binary_op(ExprOp op, double a, double b) {
  switch (op) {
    case ExprOp::Add: return {a + b, 1, 1};
    case ExprOp::Sub: return {a - b, 1, -1};
    case ExprOp::Mul: return {a * b, b, a};
    case ExprOp::Div: {
      const double r = a / b;
      return {r, 1 / b, -r / b};
    }
    case ExprOp::Pow:    // |a|^b
    case ExprOp::Pwr: {  // sgn(a) |a|^b
      const double m = std::fabs(a), r = std::pow(m, b);
      const double sg = a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0;
      const double da = m > 0 ? b * std::pow(m, b - 1) * (op == ExprOp::Pow ? sg : 1.0) : 0.0;
      const double db = m > 0 ? r * std::log(m) * (op == ExprOp::Pow ? 1.0 : sg) : 0.0;
      return {op == ExprOp::Pow ? r : sg * r, da, db};
    }
    case ExprOp::Atan2: {
      const double q = a * a + b * b;
      return {std::atan2(a, b), q > 0 ? b / q : 0.0, q > 0 ? -a / q : 0.0};
    }
    case ExprOp::Min: return a > b ? D2{b, 0, 1} : D2{a, 1, 0};
    case ExprOp::Max: return a > b ? D2{a, 1, 0} : D2{b, 0, 1};
    case ExprOp::Lt: return {a < b ? 1.0 : 0.0, 0, 0};
    case ExprOp::Le: return {a <= b ? 1.0 : 0.0, 0, 0};
    case ExprOp::Gt: return {a > b ? 1.0 : 0.0, 0, 0};
    case ExprOp::Ge: return {a >= b ? 1.0 : 0.0, 0, 0};
    case ExprOp::Eq: return {a == b ? 1.0 : 0.0, 0, 0};
    case ExprOp::Ne: return {a != b ? 1.0 : 0.0, 0, 0};
    case ExprOp::And: return {a != 0 && b != 0 ? 1.0 : 0.0, 0, 0};
    case ExprOp::Or: return {a != 0 || b != 0 ? 1.0 : 0.0, 0, 0};
    default: return {0, 0, 0};
  }
}

// Value of op applied to constant arguments (for folding).
double fold_value(ExprOp op, const double* v) {
  switch (arity(op)) {
    case 1: return unary_op(op, v[0]).f;
    case 2: return binary_op(op, v[0], v[1]).f;
    default:
      if (op == ExprOp::Select) return v[0] != 0 ? v[1] : v[2];
      return v[0] < v[1] ? v[1] : v[0] > v[2] ? v[2] : v[0];  // limit(x, lo, hi)
  }
}

// B-source functions (ngspice names) and their ops; min/max take one or more arguments (folded pairwise).
struct BFunc {
  const char* name;
  ExprOp op;
  int min_args, max_args;
};
const BFunc kBFuncs[] = {
    {"sqrt", ExprOp::Sqrt, 1, 1},   {"exp", ExprOp::Exp, 1, 1},     {"ln", ExprOp::Ln, 1, 1},
    {"log", ExprOp::Ln, 1, 1},      {"log10", ExprOp::Log10, 1, 1}, {"sin", ExprOp::Sin, 1, 1},
    {"cos", ExprOp::Cos, 1, 1},     {"tan", ExprOp::Tan, 1, 1},     {"asin", ExprOp::Asin, 1, 1},
    {"acos", ExprOp::Acos, 1, 1},   {"atan", ExprOp::Atan, 1, 1},   {"atan2", ExprOp::Atan2, 2, 2},
    {"sinh", ExprOp::Sinh, 1, 1},   {"cosh", ExprOp::Cosh, 1, 1},   {"tanh", ExprOp::Tanh, 1, 1},
    {"asinh", ExprOp::Asinh, 1, 1}, {"acosh", ExprOp::Acosh, 1, 1}, {"atanh", ExprOp::Atanh, 1, 1},
    {"abs", ExprOp::Abs, 1, 1},     {"sgn", ExprOp::Sgn, 1, 1},     {"floor", ExprOp::Floor, 1, 1},
    {"ceil", ExprOp::Ceil, 1, 1},   {"nint", ExprOp::Nint, 1, 1},   {"u", ExprOp::Step, 1, 1},
    {"u2", ExprOp::Step2, 1, 1},    {"uramp", ExprOp::Ramp, 1, 1},  {"pow", ExprOp::Pow, 2, 2},
    {"pwr", ExprOp::Pwr, 2, 2},     {"min", ExprOp::Min, 1, -1},    {"max", ExprOp::Max, 1, -1},
    {"limit", ExprOp::Limit, 3, 3},  {"int", ExprOp::Trunc, 1, 1},   {"sqr", ExprOp::Sqr, 1, 1},
    {"arctan", ExprOp::Atan, 1, 1},  {"ddt", ExprOp::Ddt, 1, 1},
    // Composed of the ops above by ExprCompiler::call (ExprOp::Const marks them).
    {"eq0", ExprOp::Const, 1, 1},    {"ne0", ExprOp::Const, 1, 1},   {"gt0", ExprOp::Const, 1, 1},
    {"lt0", ExprOp::Const, 1, 1},    {"ge0", ExprOp::Const, 1, 1},   {"le0", ExprOp::Const, 1, 1},
    {"ternary_fcn", ExprOp::Const, 3, 3}, {"pwl", ExprOp::Const, 5, -1},
};
// The B-source table in the parser's Func form, built once.
const std::vector<Func>& bfunc_specs() {
  static const std::vector<Func> v = [] {
    std::vector<Func> r;
    for (const BFunc& f : kBFuncs) r.push_back(Func{f.name, f.min_args, f.max_args});
    return r;
  }();
  return v;
}

}  // namespace

// Behavioural expressions: the parser's sink that emits the tape, folding constant sub-expressions.
class ExprCompiler {
 public:
  struct Value {
    bool is_const = false;
  };
  ExprCompiler(const ExprNameMap& names, CompiledExpr& out) : names_(names), out_(out) {}

  void constant(double c, Value& v) {
    out_.code_.push_back({ExprOp::Const, 0, c});
    v.is_const = true;
  }
  bool is_reference(const std::string& name) const { return name == "v" || name == "i"; }
  template <class P>
  std::string reference(const std::string& name, const std::vector<std::pair<std::string, size_t>>& args, P& parser,
                        Value& v) {
    if (name == "i") {
      const std::string dev = names_.device ? names_.device(args[0].first) : args[0].first;
      push_var(ExprQuantity::Kind::Current, dev, parser.loc_of(args[0].second), v);
      return {};
    }
    push_node(args[0].first, parser.loc_of(args[0].second), v);
    if (args.size() == 2) {
      Value b;
      push_node(args[1].first, parser.loc_of(args[1].second), b);
      return apply(ExprOp::Sub, {v, b}, v);
    }
    return {};
  }
  std::string variable(const std::string& name, Value& v) {
    if (name != "time") return fmt::format("unknown parameter '{}' (expected a parameter, time, v(node) or i(vsource))", name);
    out_.code_.push_back({ExprOp::Time, 0, 0});
    out_.uses_time_ = true;
    v.is_const = false;
    return {};
  }
  std::string negate(Value& v, bool logical) { return apply(logical ? ExprOp::Not : ExprOp::Neg, {v}, v); }
  std::string binary(Bin op, Value& a, Value b) {
    static constexpr ExprOp kOps[] = {ExprOp::Add, ExprOp::Sub, ExprOp::Mul, ExprOp::Div, ExprOp::Pow,
                                      ExprOp::Lt,  ExprOp::Le,  ExprOp::Gt,  ExprOp::Ge,  ExprOp::Eq,
                                      ExprOp::Ne,  ExprOp::And, ExprOp::Or};
    if (op == Bin::Div && b.is_const && out_.code_.back().c == 0) return "division by zero";
    return apply(kOps[static_cast<int>(op)], {a, b}, a);
  }
  std::string select(Value& c, Value a, Value b) { return apply(ExprOp::Select, {c, a, b}, c); }
  const Func* function(const std::string& name) const {
    for (const Func& f : bfunc_specs())
      if (name == f.name) return &f;
    return nullptr;
  }
  std::string call(const std::string& name, const std::vector<Value>& args, Value& v) {
    ExprOp op = ExprOp::Const;
    for (const BFunc& f : kBFuncs)
      if (name == f.name) op = f.op;
    if (op == ExprOp::Min || op == ExprOp::Max) {  // the arguments are on the stack in order: fold left
      Value acc = args.back();  // the stack holds args[0..n) in order: fold from the right
      for (size_t k = args.size() - 1; k-- > 0;)
        if (std::string e = apply(op, {args[k], acc}, acc); !e.empty()) return e;
      v = acc;
      return {};
    }
    if (op == ExprOp::Const) return composed(name, args, v);
    return apply_n(op, args, v);
  }

  // Once the tape is complete: links every instruction to the instructions producing its operands (the
  // tape's structure is static), and merges repeated sub-expressions (an op-amp model computes its swing centre
  // several times), so the tape becomes a DAG in evaluation order whose root is the last instruction.
  void finish() {
    std::vector<int> stack;
    std::vector<int> id(out_.code_.size());  // old index -> new index
    std::vector<CompiledExpr::Instr> code;
    std::map<std::tuple<int, int, uint64_t, int, int, int>, int> seen;
    for (size_t i = 0; i < out_.code_.size(); ++i) {
      CompiledExpr::Instr in = out_.code_[i];
      const int n = arity(in.op);
      int* args[3] = {&in.a, &in.b, &in.c3};
      for (int k = 0; k < n; ++k) *args[k] = id[stack[stack.size() - n + k]];
      stack.resize(stack.size() - n);
      stack.push_back(static_cast<int>(i));
      uint64_t bits = 0;
      std::memcpy(&bits, &in.c, sizeof bits);
      const auto key = std::make_tuple(static_cast<int>(in.op), in.var, bits, in.a, in.b, in.c3);
      auto [it, added] = seen.emplace(key, static_cast<int>(code.size()));
      if (added) code.push_back(in);
      id[i] = it->second;
    }
    if (!code.empty() && id.back() != static_cast<int>(code.size()) - 1) {
      CompiledExpr::Instr root{ExprOp::Add, 0, 0};  // the whole expression repeats a sub-expression: root + 0
      root.a = id.back();
      root.b = static_cast<int>(code.size());
      code.push_back({ExprOp::Const, 0, 0.0});
      code.push_back(root);
    }
    for (CompiledExpr::Instr& in : code)  // slots after merging: one per distinct tanh
      if (in.op == ExprOp::Tanh) in.var = out_.n_limited_++;
      else if (in.op == ExprOp::Ddt) in.var = out_.n_ddt_++;  // one state per distinct argument
    out_.code_ = std::move(code);
  }

 private:
  const ExprNameMap& names_;
  CompiledExpr& out_;

  void push_node(const std::string& raw, const SourceLoc& loc, Value& v) {
    const std::string n = is_ground_name(raw) ? std::string("0") : names_.node ? names_.node(raw) : raw;
    if (n == "0") return constant(0.0, v);
    push_var(ExprQuantity::Kind::Voltage, n, loc, v);
  }
  void push_var(ExprQuantity::Kind kind, const std::string& name, const SourceLoc& loc, Value& v) {
    auto& qs = out_.quantities_;
    int k = 0;
    while (k < static_cast<int>(qs.size()) && !(qs[k].kind == kind && qs[k].name == name)) ++k;
    if (k == static_cast<int>(qs.size())) {
      ExprQuantity q;
      q.kind = kind;
      q.name = name;
      q.loc = loc;
      qs.push_back(std::move(q));
    }
    out_.code_.push_back({ExprOp::Var, k, 0});
    v.is_const = false;
  }

  // Functions written with the tape's ops: eq0 ... le0 compare with 0, ternary_fcn is c ? a : b, and
  // pwl(x, x1, y1, ...) (constant points) is y1 + s1 (x - x1) + sum over inner points k of (s_k - s_(k-1))
  // uramp(x - x_k), s_k the slope of segment k: ngspice's interpolation, extrapolated along the end segments.
  std::string composed(const std::string& name, const std::vector<Value>& args, Value& v) {
    static const std::pair<const char*, ExprOp> kCompare[] = {{"eq0", ExprOp::Eq}, {"ne0", ExprOp::Ne},
                                                              {"gt0", ExprOp::Gt}, {"lt0", ExprOp::Lt},
                                                              {"ge0", ExprOp::Ge}, {"le0", ExprOp::Le}};
    for (const auto& [fn, op] : kCompare) {
      if (name != fn) continue;
      Value zero;
      constant(0.0, zero);
      return apply(op, {args[0], zero}, v);
    }
    if (name == "ternary_fcn") return apply_n(ExprOp::Select, args, v);
    auto& code = out_.code_;
    std::vector<double> pts;  // the constant arguments after x, each the last instruction of its own
    for (size_t k = 1; k < args.size(); ++k) {
      if (!args[k].is_const) return "pwl: the points (x1, y1, x2, y2, ...) must be constants";
      pts.push_back(code[code.size() - args.size() + k].c);
    }
    code.resize(code.size() - pts.size());
    std::vector<double> all{0.0};
    all.insert(all.end(), pts.begin(), pts.end());
    if (std::string e = pwl_check(all); !e.empty()) return e;
    if (args[0].is_const) {
      all[0] = code.back().c;
      code.back().c = pwl_value(all.data(), all.size());
      v.is_const = true;
      return {};
    }
    // x's instructions: the sub-tape ending at the last instruction.
    size_t start = code.size();
    for (int need = 1; need > 0;) need += arity(code[--start].op) - 1;
    const std::vector<CompiledExpr::Instr> x(code.begin() + static_cast<long>(start), code.end());
    const size_t n = pts.size() / 2;
    auto slope = [&](size_t k) { return (pts[2 * k + 3] - pts[2 * k + 1]) / (pts[2 * k + 2] - pts[2 * k]); };
    auto push = [&](ExprOp op, double c = 0) { code.push_back({op, 0, c}); };
    push(ExprOp::Const, pts[0]);  // x is on the stack: s1 (x - x1) + y1
    push(ExprOp::Sub);
    push(ExprOp::Const, slope(0));
    push(ExprOp::Mul);
    push(ExprOp::Const, pts[1]);
    push(ExprOp::Add);
    for (size_t k = 1; k + 1 < n; ++k) {  // + (s_k - s_(k-1)) uramp(x - x_k); finish() merges the copies of x
      code.insert(code.end(), x.begin(), x.end());
      push(ExprOp::Const, pts[2 * k]);
      push(ExprOp::Sub);
      push(ExprOp::Ramp);
      push(ExprOp::Const, slope(k) - slope(k - 1));
      push(ExprOp::Mul);
      push(ExprOp::Add);
    }
    v.is_const = false;
    return {};
  }

  // Appends op over the last args.size() stack values; if they are all constants, folds them into one.
  std::string apply(ExprOp op, std::initializer_list<Value> args, Value& out) {
    return apply_n(op, std::vector<Value>(args), out);
  }
  std::string apply_n(ExprOp op, const std::vector<Value>& args, Value& out) {
    bool all_const = true;
    for (const Value& a : args) all_const = all_const && a.is_const;
    auto& code = out_.code_;
    if ((op == ExprOp::Add || op == ExprOp::Sub) && !all_const && args[1].is_const && code.back().c == 0) {
      code.pop_back();  // x + 0, x - 0 (e.g. v(a, 0)): x
      out.is_const = false;
      return {};
    }
    code.push_back({op, 0, 0});
    out.is_const = false;
    if (!all_const) return {};
    const size_t n = args.size(), first = code.size() - 1 - n;
    double v[3];
    for (size_t k = 0; k < n; ++k) v[k] = code[first + k].c;
    const double r = fold_value(op, v);
    code.resize(first);
    if (!std::isfinite(r)) return "math error: the value is undefined for these constant arguments";
    code.push_back({ExprOp::Const, 0, r});
    out.is_const = true;
    return {};
  }
};

namespace {
// The name an op is written with (B-source function name, or the operator).
std::string op_name(ExprOp op) {
  switch (op) {
    case ExprOp::Ln: return "log";
    case ExprOp::Neg: return "unary -";
    case ExprOp::Add: return "+";
    case ExprOp::Sub: return "-";
    case ExprOp::Mul: return "*";
    case ExprOp::Div: return "/";
    case ExprOp::Pow: return "^ (pow)";
    default: break;
  }
  for (const BFunc& f : kBFuncs)
    if (f.op == op) return f.name;
  return "an operation";
}
}  // namespace

std::string CompiledExpr::domain_error(const double* work) const {
  const double* val = work;
  for (size_t i = 0; i < code_.size(); ++i) {
    const Instr& in = code_[i];
    const int n = arity(in.op);
    if (std::isfinite(val[i]) || n == 0) continue;
    const double a = val[in.a], b = n > 1 ? val[in.b] : 0.0;
    if (!std::isfinite(a) || (n > 1 && !std::isfinite(b)) || (n > 2 && !std::isfinite(val[in.c3]))) continue;
    const std::string name = op_name(in.op);
    switch (in.op) {
      case ExprOp::Sqrt:
      case ExprOp::Ln:
      case ExprOp::Log10: return fmt::format("{} of a negative argument ({:.6g})", name, a);
      case ExprOp::Asin:
      case ExprOp::Acos: return fmt::format("{} of an argument outside [-1, 1] ({:.6g})", name, a);
      case ExprOp::Acosh: return fmt::format("acosh of an argument below 1 ({:.6g})", a);
      case ExprOp::Atanh: return fmt::format("atanh of an argument outside (-1, 1) ({:.6g})", a);
      case ExprOp::Div:
        if (b == 0) return fmt::format("division by zero ({:.6g} / 0)", a);
        break;
      case ExprOp::Pow:
      case ExprOp::Pwr:
        if (a == 0 && b < 0) return fmt::format("{} of zero to a negative power ({:.6g})", name, b);
        break;
      default: break;
    }
    return n == 1 ? fmt::format("{} overflows at argument {:.6g}", name, a)
                  : fmt::format("{} overflows at arguments {:.6g}, {:.6g}", name, a, b);
  }
  return {};
}

double CompiledExpr::eval(const double* x, double t, double* grad, double* work, ExprLimiting* lim,
                          const ExprIntegration* integ) const {
  // Forward sweep: the value of every instruction and the partial derivatives with respect to its operands.
  const size_t m = code_.size();
  double* val = work;
  double* pa = val + m;
  double* pb = pa + m;
  double* pc = pb + m;
  double* adj = pc + m;
  for (size_t i = 0; i < m; ++i) {
    const Instr& in = code_[i];
    switch (in.op) {
      case ExprOp::Const: val[i] = in.c; break;
      case ExprOp::Var: val[i] = x[in.var]; break;
      case ExprOp::Time: val[i] = t; break;
      case ExprOp::Select: {
        const bool c = val[in.a] != 0;
        val[i] = c ? val[in.b] : val[in.c3];
        pa[i] = 0;
        pb[i] = c;
        pc[i] = !c;
        break;
      }
      case ExprOp::Limit: {  // limit(x, lo, hi)
        const double v = val[in.a], lo = val[in.b], hi = val[in.c3];
        const int k = v < lo ? 1 : v > hi ? 2 : 0;
        val[i] = k == 1 ? lo : k == 2 ? hi : v;
        pa[i] = k == 0;
        pb[i] = k == 1;
        pc[i] = k == 2;
        break;
      }
      case ExprOp::Ddt: {  // d q / dt = ag0 q + hist; 0 without integration (DC)
        const double q = val[in.a];
        if (integ && integ->q) integ->q[in.var] = q;
        const bool on = integ && integ->hist;
        val[i] = on ? integ->ag0 * q + integ->hist[in.var] : 0.0;
        pa[i] = on ? integ->ag0 : 0.0;
        break;
      }
      case ExprOp::Tanh:
        if (lim) {  // the tangent at the limited argument xl stands in for tanh at the argument a
          const double a = val[in.a];
          double& prev = lim->prev[in.var];
          bool limited = false;
          const double xl = lim->first ? a : limit_tanh_arg(a, prev, limited);
          const double th = std::tanh(xl), s = 1 - th * th;
          prev = xl;
          val[i] = th + s * (a - xl);
          pa[i] = s;
          if (limited && std::fabs(val[i] - std::tanh(a)) > 1e-15) lim->limited = true;
          break;
        }
        [[fallthrough]];
      default:
        if (in.op <= ExprOp::Sqr) {
          const D1 r = unary_op(in.op, val[in.a]);
          val[i] = r.f;
          pa[i] = r.da;
        } else {
          const D2 r = binary_op(in.op, val[in.a], val[in.b]);
          val[i] = r.f;
          pa[i] = r.da;
          pb[i] = r.db;
        }
    }
  }
  // Reverse sweep: adjoints d f / d (instruction i), accumulated into the operands and, at Var, the gradient.
  const int n = n_vars();
  for (int k = 0; k < n; ++k) grad[k] = 0;
  for (size_t i = 0; i < m; ++i) adj[i] = 0;
  adj[m - 1] = 1;
  for (size_t i = m; i-- > 0;) {
    const double g = adj[i];
    if (g == 0) continue;
    const Instr& in = code_[i];
    switch (arity(in.op)) {
      case 0:
        if (in.op == ExprOp::Var) grad[in.var] += g;
        break;
      case 3:
        if (pc[i] != 0) adj[in.c3] += pc[i] * g;
        [[fallthrough]];
      case 2:
        if (pb[i] != 0) adj[in.b] += pb[i] * g;
        [[fallthrough]];
      default:
        if (pa[i] != 0) adj[in.a] += pa[i] * g;
    }
  }
  return val[m - 1];
}

void CompiledExpr::ac_gradient(const double* work, double omega, std::complex<double>* grad) const {
  const size_t m = code_.size();
  const double* pa = work + m;
  const double* pb = pa + m;
  const double* pc = pb + m;
  std::vector<std::complex<double>> adj(m);
  const int n = n_vars();
  for (int k = 0; k < n; ++k) grad[k] = 0;
  if (m == 0) return;
  adj[m - 1] = 1;
  for (size_t i = m; i-- > 0;) {
    const std::complex<double> g = adj[i];
    if (g == 0.0) continue;
    const Instr& in = code_[i];
    switch (arity(in.op)) {
      case 0:
        if (in.op == ExprOp::Var) grad[in.var] += g;
        break;
      case 3:
        adj[in.c3] += pc[i] * g;
        [[fallthrough]];
      case 2:
        adj[in.b] += pb[i] * g;
        [[fallthrough]];
      default:
        adj[in.a] += in.op == ExprOp::Ddt ? std::complex<double>(0, omega) * g : pa[i] * g;
    }
  }
}

std::string CompiledExpr::text(const std::function<std::string(const ExprQuantity&)>& name) const {
  std::vector<std::string> st;  // the text of each instruction
  auto num = [](double c) { return c < 0 ? fmt::format("({:.17g})", c) : fmt::format("{:.17g}", c); };
  for (const Instr& in : code_) {
    const int n = arity(in.op);
    std::vector<std::string> a;
    for (int k : {in.a, in.b, in.c3})
      if (static_cast<int>(a.size()) < n) a.push_back(st[k]);
    std::string r;
    const char* fn = nullptr;
    for (const BFunc& f : kBFuncs)
      if (f.op == in.op && !fn) fn = f.name;
    switch (in.op) {
      case ExprOp::Const: r = num(in.c); break;
      case ExprOp::Var: r = name(quantities_[in.var]); break;
      case ExprOp::Time: r = "time"; break;
      case ExprOp::Neg: r = "(-" + a[0] + ")"; break;
      case ExprOp::Not: r = "(!" + a[0] + ")"; break;
      case ExprOp::Add: r = "(" + a[0] + "+" + a[1] + ")"; break;
      case ExprOp::Sub: r = "(" + a[0] + "-" + a[1] + ")"; break;
      case ExprOp::Mul: r = "(" + a[0] + "*" + a[1] + ")"; break;
      case ExprOp::Div: r = "(" + a[0] + "/" + a[1] + ")"; break;
      case ExprOp::Pow: r = "(" + a[0] + "^" + a[1] + ")"; break;
      case ExprOp::Lt: r = "(" + a[0] + "<" + a[1] + ")"; break;
      case ExprOp::Le: r = "(" + a[0] + "<=" + a[1] + ")"; break;
      case ExprOp::Gt: r = "(" + a[0] + ">" + a[1] + ")"; break;
      case ExprOp::Ge: r = "(" + a[0] + ">=" + a[1] + ")"; break;
      case ExprOp::Eq: r = "(" + a[0] + "==" + a[1] + ")"; break;
      case ExprOp::Ne: r = "(" + a[0] + "!=" + a[1] + ")"; break;
      case ExprOp::And: r = "(" + a[0] + "&&" + a[1] + ")"; break;
      case ExprOp::Or: r = "(" + a[0] + "||" + a[1] + ")"; break;
      case ExprOp::Select: r = "(" + a[0] + "?" + a[1] + ":" + a[2] + ")"; break;
      case ExprOp::Limit: r = "min(max(" + a[0] + "," + a[1] + ")," + a[2] + ")"; break;  // ngspice has no limit()
      case ExprOp::Trunc: r = "(sgn(" + a[0] + ")*floor(abs(" + a[0] + ")))"; break;  // nor int()
      case ExprOp::Sqr: r = "(" + a[0] + "*" + a[0] + ")"; break;
      default: r = std::string(fn ? fn : "?") + "(" + fmt::format("{}", fmt::join(a, ",")) + ")";
    }
    st.push_back(std::move(r));
  }
  return st.empty() ? std::string("0") : st.back();
}

namespace {
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

// Narrows [b, e) of `text` past surrounding whitespace, braces and quotes; offsets stay relative to `text` (for the
// caret of error messages).
static void strip_wrappers(const std::string& text, size_t& b, size_t& e) {
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

namespace anasim {

Status compile_expr(const std::string& text, const SourceLoc& loc, const Scope& scope, const ExprNameMap& names,
                    CompiledExpr& out) {
  out = CompiledExpr{};
  size_t b = 0, e = text.size();
  strip_wrappers(text, b, e);
  ExprCompiler sink(names, out);
  ExprParser<ExprCompiler> p(text, b, e, loc, scope, sink);
  ExprCompiler::Value v;
  if (Status st = p.run(v); !st) return st;
  sink.finish();
  return Status::success();
}

}  // namespace anasim
