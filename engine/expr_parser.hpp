// Internal to the expression language: the recursive-descent parser of both expression kinds, a template over the
// back end it feeds (its Sink): EvalSink in expr.cpp evaluates parameter expressions, ExprCompiler in
// expr_compile.cpp compiles behavioural ones to a tape. In anasim::expr_impl; not for use outside those files.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include "engine/expr_impl.hpp"
#include "engine/netlist.hpp"

namespace anasim::expr_impl {

constexpr int kMaxDepth = 200;

// Binary operators of the grammar.
enum class Bin { Add, Sub, Mul, Div, Pow, Lt, Le, Gt, Ge, Eq, Ne, And, Or };

// Recursive-descent parser shared by the two expression kinds. The Sink gives the values their meaning:
// EvalSink computes numbers (parameter expressions), ExprCompiler (expr_compile.cpp) emits a tape (behavioural
// expressions).
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

}  // namespace anasim::expr_impl
