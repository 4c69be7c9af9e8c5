// Tests for engine/expr.cpp (SPICE numbers, expressions, error columns) and engine/param.cpp.
#include <doctest/doctest.h>
#include <cmath>
#include "engine/expr.hpp"
#include "engine/param.hpp"

using namespace anasim;

namespace {

SourceLoc loc_at(int col) {
  // the quoted line alone, registered as line 3 of t.cir
  return SourceLoc(SourceFile::add("t.cir", "r1 a b {...}", 3), 3, col);
}

double eval(const std::string& s, const Scope& sc = Scope()) {
  double v = NAN;
  Status st = evaluate_expr(s, loc_at(1), sc, v);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  return v;
}

Diag eval_error(const std::string& s, int col0 = 10, const Scope& sc = Scope()) {
  double v = 0;
  Status st = evaluate_expr(s, loc_at(col0), sc, v);
  REQUIRE_FALSE(st.ok());
  REQUIRE(st.errors.size() == 1);
  return st.errors[0];
}

}  // namespace

TEST_CASE("expr: spice numbers with suffixes") {
  CHECK(*parse_spice_number("100") == doctest::Approx(100));
  CHECK(*parse_spice_number("1e-3") == doctest::Approx(1e-3));
  CHECK(*parse_spice_number("1.5E3") == doctest::Approx(1500));
  CHECK(*parse_spice_number(".5") == doctest::Approx(0.5));
  CHECK(*parse_spice_number("-2.5") == doctest::Approx(-2.5));
  CHECK(*parse_spice_number("10k") == doctest::Approx(1e4));
  CHECK(*parse_spice_number("10K") == doctest::Approx(1e4));
  CHECK(*parse_spice_number("1.5meg") == doctest::Approx(1.5e6));
  CHECK(*parse_spice_number("1.5MEG") == doctest::Approx(1.5e6));
  CHECK(*parse_spice_number("2m") == doctest::Approx(2e-3));
  CHECK(*parse_spice_number("2M") == doctest::Approx(2e-3));  // SPICE: M is milli
  CHECK(*parse_spice_number("3u") == doctest::Approx(3e-6));
  CHECK(*parse_spice_number("4n") == doctest::Approx(4e-9));
  CHECK(*parse_spice_number("5p") == doctest::Approx(5e-12));
  CHECK(*parse_spice_number("6f") == doctest::Approx(6e-15));
  CHECK(*parse_spice_number("7g") == doctest::Approx(7e9));
  CHECK(*parse_spice_number("8t") == doctest::Approx(8e12));
  CHECK(*parse_spice_number("1mil") == doctest::Approx(25.4e-6));
  // Letters after the number or suffix are units.
  CHECK(*parse_spice_number("10uF") == doctest::Approx(1e-5));
  CHECK(*parse_spice_number("1kohm") == doctest::Approx(1e3));
  CHECK(*parse_spice_number("5V") == doctest::Approx(5));
  CHECK(*parse_spice_number("2.2e-3s") == doctest::Approx(2.2e-3));
  CHECK(*parse_spice_number("1e3k") == doctest::Approx(1e6));
  CHECK(*parse_spice_number("  42  ") == doctest::Approx(42));
  // Not complete numbers.
  CHECK_FALSE(parse_spice_number(""));
  CHECK_FALSE(parse_spice_number("k"));
  CHECK_FALSE(parse_spice_number("abc"));
  CHECK_FALSE(parse_spice_number("1k5"));
  CHECK_FALSE(parse_spice_number("1.2.3"));
  CHECK_FALSE(parse_spice_number("2*3"));
  CHECK_FALSE(parse_spice_number("1e999"));
  CHECK_FALSE(parse_spice_number("."));
}

TEST_CASE("expr: arithmetic, precedence, functions and parameters") {
  Scope top;
  top.set("rval", 2e3);
  top.set("w", 3);
  Scope inner(&top);
  inner.set("w", 5);
  CHECK(eval("1+2*3") == doctest::Approx(7));
  CHECK(eval("(1+2)*3") == doctest::Approx(9));
  CHECK(eval("10/4") == doctest::Approx(2.5));
  CHECK(eval("2^3^2") == doctest::Approx(512));  // right associative
  CHECK(eval("2**3") == doctest::Approx(8));
  CHECK(eval("-2^2") == doctest::Approx(-4));
  CHECK(eval("2^-1") == doctest::Approx(0.5));
  CHECK(eval("--3") == doctest::Approx(3));
  CHECK(eval("+3-1") == doctest::Approx(2));
  CHECK(eval("1k*2") == doctest::Approx(2000));
  CHECK(eval("1meg/1k") == doctest::Approx(1000));
  CHECK(eval("{2*rval}", top) == doctest::Approx(4e3));
  CHECK(eval("'rval + 1'", top) == doctest::Approx(2001));
  CHECK(eval(" { RVAL } ", top) == doctest::Approx(2e3));
  CHECK(eval("w", inner) == doctest::Approx(5));
  CHECK(eval("rval", inner) == doctest::Approx(2e3));
  CHECK(eval("sqrt(16)") == doctest::Approx(4));
  CHECK(eval("exp(0)+log(1)+ln(1)") == doctest::Approx(1));
  CHECK(eval("log10(1000)") == doctest::Approx(3));
  CHECK(eval("sin(0)+cos(0)+tan(0)+atan(0)") == doctest::Approx(1));
  CHECK(eval("abs(-3)") == doctest::Approx(3));
  CHECK(eval("min(3, 1, 2)") == doctest::Approx(1));
  CHECK(eval("max(3, 1, 2)") == doctest::Approx(3));
  CHECK(eval("pow(2, 10)") == doctest::Approx(1024));
  CHECK(eval("floor(2.7)+ceil(2.2)") == doctest::Approx(5));
  CHECK(eval("2*pi") == doctest::Approx(2 * 3.14159265358979));
  CHECK(eval("1e-3*2") == doctest::Approx(2e-3));
  CHECK(eval("2.5e+2") == doctest::Approx(250));
}

TEST_CASE("expr: errors point at the offending character") {
  Scope sc;
  sc.set("a", 1);
  // loc.col = 10 is the column of text[0].
  Diag d = eval_error("2*x+1", 10, sc);
  CHECK(d.message == "unknown parameter 'x'");
  CHECK(d.loc.col == 12);
  CHECK(d.loc.line == 3);
  CHECK(d.loc.file() == "t.cir");

  d = eval_error("{a + bb}", 10, sc);
  CHECK(d.message == "unknown parameter 'bb'");
  CHECK(d.loc.col == 15);

  d = eval_error("(1+2", 10);
  CHECK(d.message.find("unbalanced parenthesis") != std::string::npos);
  CHECK(d.loc.col == 10);

  d = eval_error("1+2)", 10);
  CHECK(d.message.find("unbalanced parenthesis") != std::string::npos);
  CHECK(d.loc.col == 13);

  d = eval_error("1 + 1k5", 10);
  CHECK(d.message == "bad number '1k5'");
  CHECK(d.loc.col == 14);

  d = eval_error("3 # 4", 10);
  CHECK(d.message.find("unexpected character '#'") != std::string::npos);
  CHECK(d.loc.col == 12);

  d = eval_error("2 * ", 10);
  CHECK(d.message.find("unexpected end of expression") != std::string::npos);
  CHECK(d.loc.col == 13);

  d = eval_error("foo(1)", 10);
  CHECK(d.message == "unknown function 'foo'");
  CHECK(d.loc.col == 10);

  d = eval_error("sqrt(1, 2)", 10);
  CHECK(d.message == "function sqrt takes 1 argument, got 2");

  d = eval_error("1/(a-1)", 10, sc);
  CHECK(d.message == "division by zero");
  CHECK(d.loc.col == 11);

  d = eval_error("sqrt(-1)", 10);
  CHECK(d.message.find("math error") != std::string::npos);

  d = eval_error("", 10);
  CHECK(d.message.find("empty expression") != std::string::npos);

  d = eval_error("{}", 10);
  CHECK(d.message.find("empty expression") != std::string::npos);

  d = eval_error("1e999", 10);
  CHECK(d.message.find("out of range") != std::string::npos);

  // Nesting is bounded (no stack overflow).
  d = eval_error(std::string(100000, '('), 1);
  CHECK(d.message.find("nested too deeply") != std::string::npos);
  d = eval_error(std::string(100000, '-'), 1);
  CHECK(d.message.find("nested too deeply") != std::string::npos);

  // The caret display points at the character.
  SourceLoc l(SourceFile::add("t.cir", "r1 a b {2*q}"), 1, 8);
  double v = 0;
  Status st = evaluate_expr("{2*q}", l, sc, v);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].to_string() == "t.cir:1:11: error: unknown parameter 'q'\n  r1 a b {2*q}\n            ^");
}

TEST_CASE("expr: param tables assign, alias, range checks") {
  static const ParamTable table = {
      {"r", "ohm", 1e3, 0, kInf, "resistance", ParamKind::Real, true, "res"},
      {"tc1", "1/K", 0, -kInf, kInf, "temperature coefficient"},
      {"off", "", 0, 0, 1, "start off", ParamKind::Flag},
      {"pwl", "", 0, -kInf, kInf, "points", ParamKind::List},
  };
  ParamValues pv = default_params(table);
  CHECK(pv[0] == 1e3);
  CHECK_FALSE(pv.has(0));
  CHECK(pv.index_of("r") == 0);
  CHECK(pv.index_of("RES") == 0);
  CHECK(pv.index_of("tc1") == 1);
  CHECK(pv.index_of("nope") == -1);

  Scope sc;
  sc.set("k", 2);
  SourceLoc al(SourceFile::path_only("a.cir"), 2, 8);
  std::vector<ParamAssign> as;
  as.push_back(ParamAssign{"res", {ValueExpr{"2k*k", al}}, false, al});
  ParamAssign list{"pwl", {}, true, al};
  list.values = {ValueExpr{"0", al}, ValueExpr{"1", al}, ValueExpr{"1n", al}, ValueExpr{"k", al}};
  as.push_back(list);
  as.push_back(ParamAssign{"off", {ValueExpr{"1", al}}, false, al});
  Status st = assign_params(pv, as, sc, "resistor r1");
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  CHECK(pv[0] == doctest::Approx(4e3));
  CHECK(pv.has(0));
  CHECK(pv.loc(0).line == 2);
  CHECK(pv.list()[3].size() == 4);
  CHECK(pv.list()[3][3] == doctest::Approx(2));
  CHECK(pv[2] == 1);

  SourceLoc vl = al;
  vl.col = 12;
  ParamValues p2 = default_params(table);
  st = assign_params(p2, {ParamAssign{"r", {ValueExpr{"-5", vl}}, false, al}}, sc, "resistor r1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "parameter r of resistor r1 must be > 0 ohm, got -5");
  CHECK(st.errors[0].loc.col == 12);

  st = assign_params(p2, {ParamAssign{"rr", {ValueExpr{"1", vl}}, false, al}}, sc, "resistor r1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "unknown parameter 'rr' for resistor r1; expected one of: r, tc1, off, pwl");
  CHECK(st.errors[0].loc.col == 8);

  st = assign_params(p2, {ParamAssign{"off", {ValueExpr{"2", vl}}, false, al}}, sc, "diode d1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "parameter off of diode d1 must be >= 0 and <= 1, got 2");

  st = assign_params(p2, {ParamAssign{"r", {ValueExpr{"1", vl}, ValueExpr{"2", vl}}, true, al}}, sc, "resistor r1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "parameter r of resistor r1 takes a single value, got 2");

  st = assign_params(p2, {ParamAssign{"r", {ValueExpr{"zz", vl}}, false, al}}, sc, "resistor r1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "unknown parameter 'zz' (in parameter r of resistor r1)");
  CHECK(st.errors[0].loc.col == 12);
}

// ---- behavioural expressions (compile_expr) ---------------------------------------------------------

namespace {

CompiledExpr compile(const std::string& s, const Scope& sc = Scope(), const ExprNameMap& names = {}) {
  CompiledExpr ce;
  Status st = compile_expr(s, loc_at(1), sc, names, ce);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  return ce;
}

Diag compile_error(const std::string& s, int col0 = 10) {
  CompiledExpr ce;
  Status st = compile_expr(s, loc_at(col0), Scope(), {}, ce);
  REQUIRE_FALSE(st.ok());
  REQUIRE(st.errors.size() == 1);
  return st.errors[0];
}

// Value and gradient of ce at x.
double eval_at(const CompiledExpr& ce, const std::vector<double>& x, std::vector<double>& grad, double t = 0) {
  REQUIRE(static_cast<int>(x.size()) == ce.n_vars());
  grad.assign(x.size(), NAN);
  std::vector<double> work(ce.work_size());
  return ce.eval(x.data(), t, grad.data(), work.data());
}

// Checks the exact gradient of ce against central differences at x.
void check_gradient(const CompiledExpr& ce, std::vector<double> x) {
  x.resize(static_cast<size_t>(ce.n_vars()));
  std::vector<double> g, dummy;
  eval_at(ce, x, g);
  for (size_t k = 0; k < x.size(); ++k) {
    const double h = 1e-6 * std::max(1.0, std::fabs(x[k]));
    std::vector<double> xp = x, xm = x;
    xp[k] += h;
    xm[k] -= h;
    const double fd = (eval_at(ce, xp, dummy) - eval_at(ce, xm, dummy)) / (2 * h);
    CHECK_MESSAGE(g[k] == doctest::Approx(fd).epsilon(1e-6).scale(1.0), "d/dx" << k << " at " << x[k]);
  }
}

}  // namespace

TEST_CASE("expr: behavioural expressions have exact gradients") {
  Scope sc;
  sc.set("gain", 3.0);
  const CompiledExpr ce = compile("gain*v(a)^2 - tanh(v(a,b)/0.2) + exp(-v(b))*sin(i(v1)) + 7", sc);
  REQUIRE(ce.n_vars() == 3);  // v(a), v(b), i(v1)
  CHECK(ce.quantities()[0].name == "a");
  CHECK(ce.quantities()[1].name == "b");
  CHECK(ce.quantities()[2].kind == ExprQuantity::Kind::Current);
  std::vector<double> g;
  const double a = 0.7, b = -0.3, i = 0.25;
  const double f = eval_at(ce, {a, b, i}, g);
  CHECK(f == doctest::Approx(3 * a * a - std::tanh((a - b) / 0.2) + std::exp(-b) * std::sin(i) + 7));
  const double s = 1 - std::pow(std::tanh((a - b) / 0.2), 2);
  CHECK(g[0] == doctest::Approx(6 * a - s / 0.2));
  CHECK(g[1] == doctest::Approx(s / 0.2 - std::exp(-b) * std::sin(i)));
  CHECK(g[2] == doctest::Approx(std::exp(-b) * std::cos(i)));

  // Every differentiable function, away from its kinks, against central differences.
  for (const char* e : {"sqrt(v(a)+2)", "ln(v(a)+2)*log(v(a)+3)", "log10(v(a)+2)", "cos(v(a))*tan(v(b))",
                        "asin(v(a)/2)+acos(v(b)/2)+atan(v(a)*v(b))", "sinh(v(a))+cosh(v(b))+tanh(v(a)-v(b))",
                        "asinh(v(a))+acosh(v(b)+3)+atanh(v(a)/2)", "abs(v(a))+uramp(v(b))+u2(v(a)+0.3)",
                        "pow(v(a),2.5)+pwr(v(b),3)+v(a)**1.5", "v(a)/v(b)", "min(v(a),v(b),0.1)*max(v(a),-v(b))",
                        "atan2(v(a),v(b))", "v(a) > v(b) ? v(a)*v(a) : 2*v(b)", "limit(v(a)*3, -1, 1)",
                        "uramp(v(a))+ln(1+exp(-abs(v(a))))"}) {
    INFO(std::string(e));
    const CompiledExpr c = compile(e);
    check_gradient(c, {0.4, -0.7});
    check_gradient(c, {-0.2, 0.9});
  }
}

TEST_CASE("expr: tanh arguments are Newton-limited against the previous iterate") {
  // Two distinct tanh calls, one repeated (merged into one slot), one constant (folded, no slot).
  const CompiledExpr ce = compile("tanh(v(a)/0.1) + 2*tanh(v(b)) - tanh(v(a)/0.1) + tanh(0.5)");
  REQUIRE(ce.n_limited() == 2);
  std::vector<double> prev(2, 0.0), g(2), work(ce.work_size());
  auto eval = [&](double a, double b, bool first, bool& limited) {
    ExprLimiting lim;
    lim.prev = prev.data();
    lim.first = first;
    const std::vector<double> x = {a, b};
    const double f = ce.eval(x.data(), 0, g.data(), work.data(), &lim);
    limited = lim.limited;
    return f;
  };
  bool limited = false;
  // First iteration: exact, and the arguments are recorded.
  CHECK(eval(0.05, 30, true, limited) == doctest::Approx(2 * std::tanh(30.0) + std::tanh(0.5)));
  CHECK_FALSE(limited);
  CHECK(prev[1] == 30);
  // From 30 into the opposite tail (-30): restart from 0, the tangent there (slope 1) stands in for tanh.
  const double f = eval(0.05, -30, false, limited);
  CHECK(limited);
  CHECK(prev[1] == 0);
  CHECK(f == doctest::Approx(2 * -30.0 + std::tanh(0.5)));
  CHECK(g[1] == doctest::Approx(2));
  // Then the argument at most doubles per iteration (from the linear region: to -2, -4, ...).
  eval(0.05, -30, false, limited);
  CHECK(prev[1] == -2);
  eval(0.05, -30, false, limited);
  CHECK(prev[1] == -4);
  // Inside the linear region nothing is limited; without limiting state the evaluation is exact.
  CHECK(eval(0.05, -1.5, false, limited) == doctest::Approx(2 * std::tanh(-1.5) + std::tanh(0.5)));
  CHECK_FALSE(limited);
  std::vector<double> g2;
  CHECK(eval_at(ce, {0.05, -30}, g2) == doctest::Approx(2 * std::tanh(-30.0) + std::tanh(0.5)));
}

TEST_CASE("expr: behavioural expressions follow ngspice's function semantics") {
  std::vector<double> g;
  auto value = [&](const std::string& s) { return eval_at(compile(s), {}, g); };
  CHECK(value("(-2)^3") == 8);         // x^y is |x|^y
  CHECK(value("pow(-2, 2)") == 4);
  CHECK(value("pwr(-2, 2)") == -4);    // sgn(x) |x|^y
  CHECK(value("u(0)") == 0.5);
  CHECK(value("u(-1) + u(2)") == 1);
  CHECK(value("uramp(-1) + uramp(2)") == 2);
  CHECK(value("u2(0.25) + u2(3)") == 1.25);
  CHECK(value("log(exp(2))") == doctest::Approx(2));  // log is ln
  CHECK(value("5 > 3 ? 1 : 2") == 1);
  CHECK(value("(1 < 2) + (2 <= 2) + (3 >= 4) + (1 == 1) + (1 != 1) + !0 + (1 && 0) + (1 || 0)") == 5);
  CHECK(value("limit(5, 0, 1) + min(3, 1, 2) + max(-1, -3)") == 1);
  CHECK(value("-2^2") == -4);
  CHECK(value("exp(1000)") == 1e99);   // ngspice's cap instead of overflow
}

TEST_CASE("expr: behavioural expressions fold constants, map names and print back") {
  Scope sc;
  sc.set("k", 2.0);
  const ExprNameMap names{[](const std::string& n) { return n == "in" ? std::string("top_in") : "x1." + n; },
                          [](const std::string& d) { return "x1." + d; }};
  const CompiledExpr ce = compile("{k*3 + v(in) + v(mid, 0) - v(gnd) + i(vs) * sqrt(k*8)}", sc, names);
  // The constants fold: the tape is 6 + v(top_in) + v(x1.mid) + i(x1.vs) * 4.
  REQUIRE(ce.n_vars() == 3);
  CHECK(ce.quantities()[0].name == "top_in");
  CHECK(ce.quantities()[1].name == "x1.mid");
  CHECK(ce.quantities()[2].name == "x1.vs");
  int consts = 0;
  for (const auto& in : ce.code()) consts += in.op == ExprOp::Const;
  CHECK(consts == 2);
  auto spell = [](const ExprQuantity& q) {
    return (q.kind == ExprQuantity::Kind::Voltage ? "v(" : "i(") + q.name + ")";
  };
  const std::string text = ce.text(spell);
  // The printed text compiles to the same function.
  const CompiledExpr back = compile(text);
  std::vector<double> g1, g2;
  CHECK(eval_at(ce, {0.1, 0.2, 0.3}, g1) == doctest::Approx(eval_at(back, {0.1, 0.2, 0.3}, g2)));
  CHECK(g1 == g2);
  CHECK(compile("time * 2").uses_time());
  CHECK(eval_at(compile("time * 2"), {}, g1, 1.5) == 3);
}

TEST_CASE("expr: behavioural expression errors are located") {
  Diag d = compile_error("v(a) + foo(1)", 10);
  CHECK(d.message.find("unknown function 'foo'") != std::string::npos);
  CHECK(d.loc.col == 17);
  d = compile_error("2 * vdd", 10);
  CHECK(d.message.find("unknown parameter 'vdd'") != std::string::npos);
  CHECK(d.loc.col == 14);
  d = compile_error("v(a, b, c)", 10);
  CHECK(d.message.find("one or two node names") != std::string::npos);
  CHECK(d.loc.col == 18);
  d = compile_error("v(a) +", 10);
  CHECK(d.message.find("unexpected end of expression") != std::string::npos);
  d = compile_error("v(a) ? 1", 10);
  CHECK(d.message.find("':'") != std::string::npos);
  d = compile_error("v(a) / 0", 10);
  CHECK(d.message.find("division by zero") != std::string::npos);
  CHECK(d.loc.col == 15);
  d = compile_error("tanh(v(a), 2)", 10);
  CHECK(d.message.find("takes 1 argument") != std::string::npos);
  d = compile_error("v()", 10);
  CHECK(d.message.find("expected a node name") != std::string::npos);
}
