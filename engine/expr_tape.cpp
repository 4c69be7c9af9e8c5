// The tape of a compiled behavioural expression: the ops' values and derivatives (ngspice B-source semantics) and
// CompiledExpr's evaluation (reverse-mode derivatives), small-signal gradient, domain errors and ngspice text.
#include <cmath>
#include <complex>
#include <string>
#include <vector>
#include <fmt/format.h>
#include "engine/expr.hpp"
#include "engine/expr_impl.hpp"
#include "engine/limiting.hpp"

namespace anasim {

using namespace expr_impl;  // expr_impl.hpp

namespace {

// ---- behavioural expressions: scalar semantics and derivatives (ngspice B source) ----------------

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

}  // namespace

namespace expr_impl {

double fold_value(ExprOp op, const double* v) {
  switch (arity(op)) {
    case 1: return unary_op(op, v[0]).f;
    case 2: return binary_op(op, v[0], v[1]).f;
    default:
      if (op == ExprOp::Select) return v[0] != 0 ? v[1] : v[2];
      return v[0] < v[1] ? v[1] : v[0] > v[2] ? v[2] : v[0];  // limit(x, lo, hi)
  }
}

}  // namespace expr_impl

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

}  // namespace anasim
