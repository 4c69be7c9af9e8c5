// Tests for engine/expr.cpp (SPICE numbers, expressions, error columns) and engine/param.cpp.
#include <doctest/doctest.h>
#include <cmath>
#include "engine/expr.hpp"
#include "engine/param.hpp"

using namespace anasim;

namespace {

SourceLoc loc_at(int col) {
  SourceLoc l;
  l.file = "t.cir";
  l.line = 3;
  l.col = col;
  l.text = "r1 a b {...}";
  return l;
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
  CHECK(d.loc.file == "t.cir");

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
  SourceLoc l;
  l.file = "t.cir";
  l.line = 1;
  l.col = 8;
  l.text = "r1 a b {2*q}";
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
  SourceLoc al;
  al.file = "a.cir";
  al.line = 2;
  al.col = 8;
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
  CHECK(pv.loc[0].line == 2);
  CHECK(pv.list[3].size() == 4);
  CHECK(pv.list[3][3] == doctest::Approx(2));
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
