// Behavioural expressions (ngspice B sources): the parser's back end that compiles them to a tape (constants folded,
// repeated sub-expressions merged) and compile_expr. The tape is evaluated in expr_tape.cpp.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <fmt/format.h>
#include "engine/expr.hpp"
#include "engine/expr_impl.hpp"
#include "engine/expr_parser.hpp"
#include "engine/netlist.hpp"

namespace anasim {

using namespace expr_impl;  // expr_impl.hpp, expr_parser.hpp

namespace {

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
    if (op == ExprOp::Min || op == ExprOp::Max) {  // args[0..n) in stack order, folded from the right
      Value acc = args.back();
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
