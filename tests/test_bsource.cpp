// Tests for devices/bsource.cpp (the ngspice B source): small circuits against analytic values, AC
// linearisation, subcircuits, YAML, SPICE export round trip and located errors.
#include <doctest/doctest.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include "engine/export_spice.hpp"
#include "tests/circuit_helpers.hpp"
#include "tests/ngspice_helpers.hpp"

using namespace anasim;
using namespace anasim::test;

namespace {

Status deck_error(const std::string& text) {
  RunResults r;
  Status st = run_deck_status(text, r);
  REQUIRE_FALSE(st.ok());
  return st;
}

}  // namespace

TEST_CASE("bsource: V= and I= sources solve their nonlinear equations") {
  const RunResults r = run_deck(
      "b sources\n"
      "vin in 0 dc 0.8\n"
      "r1 in a 1k\n"
      "b1 a 0 i = 1m*tanh(v(a)/0.2) + 0.1m*v(a)*v(a)\n"
      "b2 out 0 v = 2*v(a) - pwr(v(a), 3) + 10*i(vs)\n"
      "vs out c dc 0\n"
      "r2 c 0 2k\n"
      "b3 0 d i = 3*i(vs)\n"
      "r3 d 0 1k\n"
      ".op\n");
  const double va = op_value(r, 0, "v(a)");
  // KCL at a: the resistor current equals the B source current.
  CHECK((0.8 - va) / 1e3 == doctest::Approx(1e-3 * std::tanh(va / 0.2) + 1e-4 * va * va).epsilon(1e-10));
  // out = 2 va - va^3 + 10 i(vs), with i(vs) = v(out) / 2k.
  const double vout = op_value(r, 0, "v(out)");
  CHECK(vout == doctest::Approx((2 * va - va * va * va) / (1 - 10 / 2e3)).epsilon(1e-10));
  CHECK(op_value(r, 0, "i(vs)") == doctest::Approx(vout / 2e3).epsilon(1e-10));
  CHECK(op_value(r, 0, "v(d)") == doctest::Approx(3 * vout / 2e3 * 1e3).epsilon(1e-10));
  // The V= source has a branch current: it delivers the load current.
  CHECK(op_value(r, 0, "i(b2)") == doctest::Approx(-vout / 2e3).epsilon(1e-10));
}

TEST_CASE("bsource: dc sweep, time and AC linearisation") {
  const RunResults r = run_deck(
      "b sweep\n"
      "vin in 0 dc 0 ac 1\n"
      "b1 out 0 v = v(in) > 0 ? v(in)^2 : -v(in)\n"
      "b2 t 0 v = 1 + 2*time\n"
      "b3 0 g i = 1m*tanh(v(in)/0.5)\n"
      "rg g 0 1k\n"
      "rl out 0 1k\n"
      "rt t 0 1k\n"
      ".dc vin -1 1 0.25\n"
      ".tran 1m 10m\n"
      ".op\n"
      ".ac lin 3 1 100\n");
  const AnalysisResult& dc = r.analyses[0];
  const Signal& out = signal(r, 0, "v(out)");
  const Signal& g = signal(r, 0, "v(g)");
  for (int p = 0; p < dc.rows(); ++p) {
    const double v = dc.sweep[p];
    CHECK(out.re[p] == doctest::Approx(v > 0 ? v * v : -v).epsilon(1e-10));
    CHECK(g.re[p] == doctest::Approx(std::tanh(v / 0.5)).epsilon(1e-10));
  }
  const Signal& t = signal(r, 1, "v(t)");
  for (size_t p = 0; p < t.re.size(); ++p) CHECK(t.re[p] == doctest::Approx(1 + 2 * r.analyses[1].sweep[p]));
  // AC at v(in) = 0: d out / d in = -1 (the else branch), d g / d in = 1m / 0.5 * 1k = 2.
  const Signal& ao = signal(r, 3, "v(out)");
  const Signal& ag = signal(r, 3, "v(g)");
  for (size_t p = 0; p < ao.re.size(); ++p) {
    CHECK(ao.re[p] == doctest::Approx(-1));
    CHECK(ag.re[p] == doctest::Approx(2));
  }
}

TEST_CASE("bsource: inside subcircuits, parameters fold and names map") {
  const RunResults r = run_deck(
      "b subckt\n"
      ".param k = 3\n"
      ".subckt amp in out params: g = 2\n"
      "vsense in m dc 0\n"
      "rin m 0 1k\n"
      "b1 out 0 v = g*k*v(in) + 1k*i(vsense)\n"
      ".ends\n"
      "vin a 0 dc 0.5\n"
      "x1 a y amp g = 4\n"
      "rl y 0 1k\n"
      ".op\n");
  CHECK(op_value(r, 0, "v(y)") == doctest::Approx(4 * 3 * 0.5 + 1e3 * 0.5e-3));
}

TEST_CASE("bsource: YAML type bsource") {
  const FlatNetlist fn = elaborate_yaml(
      "devices:\n"
      "  - {name: vin, type: v, nodes: [in, 0], dc: 2}\n"
      "  - {name: b1, type: bsource, nodes: [out, 0], v: 'sqrt(v(in)) * 3'}\n"
      "  - {name: rl, type: r, nodes: [out, 0], r: 1k}\n"
      "analyses:\n"
      "  - {type: op}\n");
  const RunResults r = simulate_flat(fn);
  CHECK(op_value(r, 0, "v(out)") == doctest::Approx(3 * std::sqrt(2.0)));
}

TEST_CASE("bsource: export --spice round trip") {
  const std::string deck =
      "b export\n"
      ".subckt cell a b params: w = 1\n"
      "vm a m dc 0\n"
      "b1 m b i = w*1m*tanh(v(m, b)/0.1) + 1u*v(m)\n"
      "bv n 0 v = limit(v(m), -0.3, 0.3) + 0.1*i(vm)\n"
      "rn n 0 1k\n"
      ".ends\n"
      "vin in 0 dc 0.4 sin(0 1 1k)\n"
      "x1 in o cell w = 2\n"
      "ro o 0 100\n"
      ".op\n"
      ".tran 10u 2m\n";
  ParsedNetlist pn;
  FlatNetlist fn;
  REQUIRE(parse_spice_string(deck, "deck.cir", builtin_catalog(), pn).ok());
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  const RunResults r1 = simulate_flat(fn);
  const std::string text = spice_deck(fn);
  CHECK(text.find("b.x1.b1 x1.m o i = ") != std::string::npos);
  CHECK(text.find("i(v.x1.vm)") != std::string::npos);
  ParsedNetlist pn2;
  FlatNetlist fn2;
  Status st = parse_spice_string(text, "exported.cir", builtin_catalog(), pn2);
  if (st) st = elaborate(pn2, builtin_catalog(), fn2);
  INFO(text << st.to_string());
  REQUIRE(st.ok());
  const RunResults r2 = simulate_flat(fn2);
  for (const char* s : {"v(o)", "v(x1.n)", "v(x1.m)"}) {
    CHECK(op_value(r2, 0, s) == doctest::Approx(op_value(r1, 0, s)).epsilon(1e-12));
    const Signal& a = signal(r1, 1, s);
    const Signal& b = signal(r2, 1, s);
    REQUIRE(a.re.size() == b.re.size());
    for (size_t p = 0; p < a.re.size(); ++p) CHECK(b.re[p] == doctest::Approx(a.re[p]).epsilon(1e-12));
  }
}

TEST_CASE("bsource: errors are located in the expression") {
  Status st = deck_error("t\nr1 a 0 1k\nb1 a 0 v = 2 * v(a) + foo(v(a))\n.op\n");
  CHECK(st.errors[0].message.find("unknown function 'foo'") != std::string::npos);
  CHECK(st.errors[0].loc.line == 3);
  CHECK(st.errors[0].loc.col == 23);
  CHECK(st.errors[0].to_string().find("^") != std::string::npos);
  st = deck_error("t\nr1 a 0 1k\nb1 a 0 i = 1m * v(nowhere)\n.op\n");
  CHECK(st.errors[0].message.find("node 'nowhere' is not in the circuit") != std::string::npos);
  CHECK(st.errors[0].loc.col == 19);
  st = deck_error("t\nr1 a 0 1k\nb1 a 0 i = 1m * i(r1)\n.op\n");
  CHECK(st.errors[0].message.find("not a voltage source") != std::string::npos);
  CHECK(st.errors[0].loc.col == 19);
  st = deck_error("t\nr1 a 0 1k\nb1 a 0\n.op\n");
  CHECK(st.errors[0].message.find("needs V=expression or I=expression") != std::string::npos);
  st = deck_error("t\nr1 a 0 1k\nb1 a 0 v =\n.op\n");
  CHECK(st.errors[0].message.find("expected an expression") != std::string::npos);
  st = deck_error("t\nr1 a 0 1k\nb1 a 0 v = (v(a) + 1\n.op\n");
  CHECK(st.errors[0].message.find("never closed") != std::string::npos);
}
