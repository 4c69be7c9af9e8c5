// Internal to the expression language (expr.cpp, expr_compile.cpp, expr_tape.cpp and the parser in expr_parser.hpp):
// the character classes, the number scanner, the function tables and the helpers more than one of those files uses,
// in anasim::expr_impl. Not for use outside them.
#pragma once
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>
#include "engine/expr.hpp"

namespace anasim::expr_impl {

inline bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
inline bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
inline bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
inline bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }

enum class NumScan { NotANumber, Ok, OutOfRange };

// Scans an unsigned SPICE number starting at s[pos]: mantissa, optional exponent, optional suffix/unit
// letters. On Ok and OutOfRange (a magnitude beyond a double's range, e.g. 1e-400 or 1e400), `end` is one past
// the last character of the number. A view, so scanning the numbers of a long expression stays linear.
NumScan scan_number(std::string_view s, size_t pos, double& value, size_t& end);

struct Func {
  const char* name;
  int min_args, max_args;  // max_args < 0: variadic
};

// pwl(x, x1, y1, x2, y2, ...): linear interpolation in the points (x ascending), extrapolated along the first and
// last segments (ngspice PTpwl). a holds x then the pairs.
double pwl_value(const double* a, size_t n);

// pwl()'s arguments: x and at least two (x, y) pairs, x ascending; "" or what is wrong.
std::string pwl_check(const std::vector<double>& a);

// Narrows [b, e) of `text` past surrounding whitespace, braces and quotes; offsets stay relative to `text` (for the
// caret of error messages).
void strip_wrappers(const std::string& text, size_t& b, size_t& e);

// ---- behavioural expressions (ngspice B source) --------------------------------------------------

// Number of operands an op takes from the stack (0 to 3).
inline int arity(ExprOp op) {
  if (op <= ExprOp::Time) return 0;
  if (op <= ExprOp::Ddt) return 1;
  if (op <= ExprOp::Or) return 2;
  return 3;
}

// Value of op applied to constant arguments (for folding).
double fold_value(ExprOp op, const double* v);

// B-source functions (ngspice names) and their ops; min/max take one or more arguments (folded pairwise).
struct BFunc {
  const char* name;
  ExprOp op;
  int min_args, max_args;
};
inline const BFunc kBFuncs[] = {
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

}  // namespace anasim::expr_impl
