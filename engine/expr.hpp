// Numbers with SPICE engineering suffixes, arithmetic expressions over named parameters, and behavioural
// expressions (ngspice B sources) compiled once to a small tape that yields a value and its exact gradient.
#pragma once
#include <complex>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>
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
// the functions of ngspice's numparam and B sources (sqrt sqr exp log ln log10 sin cos tan asin acos atan arctan
// atan2 sinh cosh tanh asinh acosh atanh abs sgn floor ceil int nint pow pwr min max limit u u2 uramp
// eq0 ne0 gt0 lt0 ge0 le0 ternary_fcn pwl), constants pi. pwr(x, y) is |x|^y here (numparam) and sgn(x) |x|^y in
// behavioural expressions (B source), as in ngspice. A domain error names the function, located at its name.
// Surrounding braces or quotes ("{...}", "'...'") are stripped. On error returns a Status located at
// the offending character (column offset from loc).
// Both kinds of expression also take comparisons (< <= > >= == !=, value 1 or 0), ! && || and c ? a : b.
Status evaluate_expr(const std::string& text, const SourceLoc& loc, const Scope& scope, double& out);

// ---- behavioural expressions ----------------------------------------------------------------------

// A circuit quantity a behavioural expression reads: a node voltage v(n) [V] or the branch current i(name) [A]
// of a device (a voltage source or inductor).
struct ExprQuantity {
  enum class Kind { Voltage, Current };
  Kind kind = Kind::Voltage;
  std::string name;        // flattened node or device name
  SourceLoc loc;           // first reference in the expression (at the name)
  NodeId node;             // Voltage: set by resolution (elaboration)
  std::string device_key;  // Current: type key of the device carrying the branch ("v", "l"), set by resolution
};

// Operations of the tape (postfix: operands are on a stack).
enum class ExprOp : uint8_t {
  Const, Var, Time,
  Neg, Not, Sqrt, Exp, Ln, Log10, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh,
  Abs, Sgn, Floor, Ceil, Nint, Step, Step2, Ramp, Trunc, Sqr, Ddt,
  Add, Sub, Mul, Div, Pow, Pwr, Atan2, Min, Max, Lt, Le, Gt, Ge, Eq, Ne, And, Or,
  Select, Limit,
};

// Newton step limiting state of one place a behavioural expression is evaluated (one B source instance).
// Every tanh() whose argument depends on the unknowns has a slot: its argument is limited against the one
// of the previous iterate (engine/limiting.hpp), and tanh is replaced by its tangent at the limited argument,
// as SPICE's device models limit their junction voltages. A converged iterate is never limited.
struct ExprLimiting {
  double* prev = nullptr;  // size n_limited(): each slot's argument at the previous iterate (updated by eval)
  bool first = false;      // first iteration from a fresh start: evaluate unlimited and record the arguments
  bool limited = false;    // out: an argument was limited and the tangent differs from the function there
};

// The time derivatives ddt(q) of one place a behavioural expression is evaluated (one B source instance). Each
// distinct ddt() argument is a state integrated like a capacitor's charge: ddt(q) = ag0 q + hist (the circuit's
// integration formula, engine/integrator.hpp). Without it (DC, the operating point) ddt is 0, as in ngspice.
struct ExprIntegration {
  double ag0 = 0;                // [1/s] the integration formula's coefficient of the present state
  const double* hist = nullptr;  // size n_ddt(): history term of each state [argument's unit / s]
  double* q = nullptr;           // size n_ddt(): out: each ddt argument at this evaluation
};

// A behavioural expression compiled once: parameters are folded to constants, node voltages and branch
// currents are variables x[0..n). eval() returns the value and the exact gradient without allocating: a
// forward sweep computes every instruction's value and local partial derivatives, a reverse sweep accumulates
// the adjoints (reverse-mode differentiation, cost independent of the number of variables). Function semantics follow ngspice's B source (x^y and pow are
// |x|^y, pwr(x,y) = sgn(x) |x|^y, u(0) = 0.5, log = ln).
class CompiledExpr {
 public:
  struct Instr {
    ExprOp op;
    int var = 0;     // Var: index into quantities(); Tanh: limiting slot (ExprLimiting::prev); Ddt: state
    double c = 0;    // Const: the value
    int a = -1, b = -1, c3 = -1;  // indices of the instructions producing the operands (by arity)
  };
  std::vector<ExprQuantity>& quantities() { return quantities_; }
  const std::vector<ExprQuantity>& quantities() const { return quantities_; }
  int n_vars() const { return static_cast<int>(quantities_.size()); }
  // Size of the scratch array eval() needs [doubles].
  size_t work_size() const { return 5 * code_.size(); }
  bool uses_time() const { return uses_time_; }
  // Number of tanh() calls with Newton step limiting (slots of ExprLimiting::prev).
  int n_limited() const { return n_limited_; }
  // Number of distinct ddt() arguments (states of ExprIntegration).
  int n_ddt() const { return n_ddt_; }
  // Value at variables x (size n_vars) and time t [s]; writes d value / d x_k to grad (size n_vars).
  // work: scratch of work_size() doubles. With `lim`, tanh arguments are limited against the previous
  // iterate (Newton iterations); without, the expression is evaluated exactly. `integ`: ddt() in a transient
  // (null: ddt is 0, with no derivative).
  double eval(const double* x, double t, double* grad, double* work, ExprLimiting* lim = nullptr,
              const ExprIntegration* integ = nullptr) const;
  // The small-signal gradient at angular frequency omega [rad/s] of the evaluation whose scratch is `work`
  // (the operating point's): d value / d x_k with every ddt() contributing j omega d(argument) / d x_k, as a
  // capacitor does; writes grad (size n_vars).
  void ac_gradient(const double* work, double omega, std::complex<double>* grad) const;
  // After an eval() whose value was not finite, with the same work array: the first operation that gave a
  // non-finite value from finite operands, e.g. "sqrt of a negative argument (-0.5)"; empty if there is none.
  std::string domain_error(const double* work) const;
  // The expression as ngspice text (fully parenthesised, constants to 17 digits); name(q) spells a quantity.
  std::string text(const std::function<std::string(const ExprQuantity&)>& name) const;
  const std::vector<Instr>& code() const { return code_; }

 private:
  friend class ExprCompiler;
  std::vector<Instr> code_;
  std::vector<ExprQuantity> quantities_;
  bool uses_time_ = false;
  int n_limited_ = 0;
  int n_ddt_ = 0;
};

// Maps names written in an expression to flattened names (subcircuit ports and prefixes); a node that maps
// to "0" is ground. Empty functions mean identity.
struct ExprNameMap {
  std::function<std::string(const std::string&)> node;
  std::function<std::string(const std::string&)> device;
};

// Compiles a behavioural expression: everything evaluate_expr takes, plus v(n), v(n1, n2), i(name), time,
// and the ngspice B-source functions (u u2 uramp pwr nint asinh acosh atanh limit). Surrounding braces or
// quotes are stripped. Errors are located at the offending character. Quantities are left unresolved
// (node = 0, device_key empty) for the caller to bind.
Status compile_expr(const std::string& text, const SourceLoc& loc, const Scope& scope, const ExprNameMap& names,
                    CompiledExpr& out);

}  // namespace anasim
