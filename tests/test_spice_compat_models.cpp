// SPICE compatibility of device models, temperature, expressions, sources and options (issue 13, part 1): decks
// written as real decks use these features, run by anasim and by ngspice 39 and compared on every shared signal
// (op/dc pointwise 1e-6 relative, tran/ac 1e-3 of range); and the walk over every option and card the reader
// accepts, each of which must change a result or warn.
#include <doctest/doctest.h>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include <fmt/format.h>
#include "ngspice_helpers.hpp"

using namespace anasim;
using namespace anasim::test;
namespace fs = std::filesystem;

namespace {

// Writes `deck` to <dir>/<stem>.cir and returns its path.
fs::path write_deck(const fs::path& dir, const std::string& stem, const std::string& deck) {
  const fs::path p = dir / (stem + ".cir");
  std::ofstream(p) << deck;
  return p;
}

// Runs the deck text through anasim and ngspice and checks every analysis (paired by kind, in order) within the
// issue's tolerances: op/dc 1e-6 relative (floors 1 nV, 1 pA), tran/ac 1e-3 of the signal's range.
RunResults crosscheck_deck(const std::string& deck, const std::string& stem) {
  REQUIRE(ngspice_available());
  const fs::path dir = scratch_dir("compat_" + stem);
  const fs::path path = write_deck(dir, stem, deck);
  const FlatNetlist fn = elaborate_file(path.string());
  const RunResults r = simulate_flat(fn);
  const std::vector<RawPlot> plots = run_ngspice(path);
  std::map<std::string, int> seen;  // analyses of each kind so far: ngspice orders its plots by kind, not as written
  for (const AnalysisResult& a : r.analyses) {
    const char* prefix = a.kind == "op" ? "Operating Point" : a.kind == "dc" ? "DC transfer" :
                         a.kind == "tran" ? "Transient" : "AC Analysis";
    const RawPlot* match = nullptr;
    int k = seen[a.kind]++;
    for (const RawPlot& p : plots)
      if (p.plotname.rfind(prefix, 0) == 0 && k-- == 0) match = &p;
    INFO(stem << ": analysis " << a.group);
    REQUIRE(match != nullptr);
    const RawPlot& n = *match;
    const Comparison c = a.kind == "tran" ? compare_tran(a, n)
                         : a.kind == "ac" ? compare_ac(a, n)
                                          : compare_points(a, n, 1e-9, 1e-12);
    INFO("worst " << c.worst_name << " " << c.worst << "; missing " << fmt::format("{}", fmt::join(c.missing, " ")));
    CHECK(c.compared > 0);
    CHECK(c.missing.empty());
    CHECK(c.worst <= (a.kind == "tran" || a.kind == "ac" ? 1e-3 : 1e-6));
  }
  return r;
}

// Parses and elaborates SPICE deck text; REQUIREs success.
FlatNetlist elaborate_text(const std::string& text) {
  ParsedNetlist pn;
  FlatNetlist fn;
  Status st = parse_spice_string(text, "deck.cir", builtin_catalog(), pn);
  if (st) st = elaborate(pn, builtin_catalog(), fn);
  INFO(text << "\n" << st.to_string());
  REQUIRE(st.ok());
  return fn;
}

// A diode and resistor network with every temperature model anasim has: diode IS/VJ/CJO through EG and XTI, a
// model TNOM, breakdown; resistor tc1/tc2 on the instance and on a .model, tce; `temper` in an expression.
// Tight tolerances (as tests/crosscheck/ decks): both simulators stop Newton within reltol of the answer, and a
// sweep continued from the previous point stops ~1e-4 apart at the default 1e-3.
std::string network(const std::string& analysis, const std::string& temp_line, bool temper = true) {
  return fmt::format(R"(diode and resistor network over temperature
.options reltol=1e-8 vntol=1e-12
.model dm d is=1e-14 n=1.2 rs=10 cjo=2p vj=0.7 m=0.4 eg=1.11 xti=3 bv=20 ibv=1e-6
.model dlow d is=2e-15 n=1.05 eg=0.69 xti=2 tnom=50
.model rm r tc1=2e-3 tc2=1e-5
{}
v1 in 0 dc 5
r1 in a 1k tc1=1e-3 tc2=2e-6
r2 a k 2k rm
d1 k 0 dm
r3 a 0 5k tce=0.5
d2 a b dlow area=2
r4 b 0 10k
r5 a c {}
d3 0 c dm
v2 c 0 dc 0
{}
.end
)",
                     temp_line, temper ? "{1k*(1+0.001*(temper-27))}" : "1k", analysis);
}

}  // namespace

TEST_CASE("temperature: a diode and resistor network at several temperatures matches ngspice (.temp, .options)") {
  for (const char* t : {"-40", "0", "27", "80", "125"}) {
    INFO(".temp " << t);
    crosscheck_deck(network(".op", fmt::format(".temp {}", t)), fmt::format("temp_{}", t[0] == '-' ? "m40" : t));
  }
  // .options temp and tnom: the diode without its own TNOM and the resistors follow .options tnom.
  crosscheck_deck(network(".op", ".options temp=75 tnom=40"), "temp_options");
}

TEST_CASE("temperature: .dc temp sweeps match ngspice; 27 C changes nothing") {
  const RunResults r = crosscheck_deck(network(".dc temp -40 125 15", "", false), "dc_temp");
  REQUIRE(r.analyses.size() == 1);
  CHECK(r.analyses[0].sweep_name == "temp");
  CHECK(r.analyses[0].sweep.size() == 12);
  // A .dc temp sweep inside a nested sweep of a source.
  crosscheck_deck(network(".dc v1 1 5 1 temp 0 100 50", "", false), "dc_temp_nested");

  // At .temp 27 (and tnom 27) every value equals the run without a .temp line, bit for bit.
  const fs::path dir = scratch_dir("compat_t27");
  const RunResults a = simulate_flat(elaborate_file(write_deck(dir, "a", network(".op", "")).string()));
  const RunResults b = simulate_flat(elaborate_file(write_deck(dir, "b", network(".op", ".temp 27")).string()));
  REQUIRE(a.analyses[0].signals.size() == b.analyses[0].signals.size());
  for (size_t k = 0; k < a.analyses[0].signals.size(); ++k)
    CHECK(a.analyses[0].signals[k].re == b.analyses[0].signals[k].re);
}

TEST_CASE("temperature: `temper` follows a .dc temp sweep as in ngspice; YAML options temp/tnom and a temp sweep") {
  // r5's value reads temper: re-evaluated at every sweep temperature (the netlist elaborated again per point),
  // alone, nested inside a source sweep and outside one.
  const RunResults rt = crosscheck_deck(network(".dc temp -40 125 15", ""), "dc_temper");
  REQUIRE(rt.analyses.size() == 1);
  CHECK(rt.analyses[0].sweep.size() == 12);
  crosscheck_deck(network(".dc v1 1 5 1 temp 0 100 50", ""), "dc_temper_outer");
  crosscheck_deck(network(".dc temp 0 100 50 v1 1 5 2", ""), "dc_temper_inner");
  // At 27 C the sweep's point equals the .op (temper = 27 there too).
  const RunResults r27 = simulate_flat(elaborate_file(
      write_deck(scratch_dir("compat_temper27"), "d", network(".op\n.dc temp 27 27 1", "")).string()));
  REQUIRE(r27.analyses.size() == 2);
  for (const Signal& s : r27.analyses[0].signals)
    CHECK(r27.analyses[1].find(s.name)->re[0] == doctest::Approx(s.re[0]).epsilon(1e-9));

  // The YAML netlist: options temp/tnom and a dc sweep of temp give the SPICE deck's numbers.
  const std::string yaml = R"(title: yaml temperature
models:
  dm: {type: d, is: 1e-14, n: 1.2, eg: 1.11, xti: 3}
options: {temp: 80, tnom: 30, reltol: 1e-8, vntol: 1e-12}
devices:
  - {name: v1, type: v, nodes: [in, 0], dc: 5}
  - {name: r1, type: r, nodes: [in, a], r: 1k, tc1: 1e-3}
  - {name: d1, type: d, nodes: [a, 0], model: dm}
analyses:
  - {type: op}
  - {type: dc, source: temp, start: 0, stop: 100, step: 50}
)";
  const RunResults ry = simulate_flat(elaborate_yaml(yaml));
  const std::string spice = "spice temperature\n.model dm d is=1e-14 n=1.2 eg=1.11 xti=3\n"
                            ".options temp=80 tnom=30 reltol=1e-8 vntol=1e-12\n"
                            "v1 in 0 dc 5\nr1 in a 1k tc1=1e-3\nd1 a 0 dm\n.op\n.dc temp 0 100 50\n.end\n";
  const RunResults rs = crosscheck_deck(spice, "yaml_temp");
  REQUIRE(ry.analyses.size() == 2);
  for (size_t k = 0; k < 2; ++k)
    CHECK(ry.analyses[k].find("v(a)")->re == rs.analyses[k].find("v(a)")->re);
}

TEST_CASE("resistor and capacitor .model cards, m= and scale=, R ac= match ngspice (op, ac, tran)") {
  const std::string deck = R"(R and C models
.model rsheet r rsh=100 narrow=0.1u short=0.2u tc1=1e-3
.model rdef r r=3k
.model cm c cj=1e-3 cjsw=1e-9 defw=4u
.model cv c cap=2n tc1=1e-3
v1 in 0 dc 1 ac 1 pulse(0 1 0 10n 10n 2u 5u)
r1 in a rsheet l=20u w=2u
r2 a 0 rsheet
r3 a b rdef m=2
r4 b 0 1k scale=1.5 ac=2k
c1 b 0 cm l=10u
c2 a 0 cv m=3 scale=0.5
c3 b 0 1n
.temp 60
.options reltol=1e-6 vntol=1e-9 abstol=1e-15
.op
.ac dec 10 1k 100meg
.tran 20n 10u
.end
)";
  crosscheck_deck(deck, "rc_models");
  // A bare name that is no model but a parameter is the value, as before.
  crosscheck_deck("r value by name\n.param rval=2k\nv1 a 0 1\nr1 a b rval\nr2 b 0 {rval}\n.op\n.end\n",
                  "r_param_name");
}

TEST_CASE("expression functions: value expressions and B sources agree with ngspice's definitions") {
  auto eval = [](const std::string& text) {
    double v = NAN;
    const Status st = evaluate_expr(text, SourceLoc{}, Scope{}, v);
    INFO(text << ": " << st.to_string());
    CHECK(st.ok());
    return v;
  };
  CHECK(eval("pwr(-2, 2)") == 4);  // numparam: |x|^y
  CHECK(eval("nint(2.5)") == 2);
  CHECK(eval("int(-2.7)") == -2);
  CHECK(eval("sqr(3)") == 9);
  CHECK(eval("asinh(1)") == doctest::Approx(std::asinh(1.0)));
  CHECK(eval("acosh(2)") == doctest::Approx(std::acosh(2.0)));
  CHECK(eval("atanh(0.5)") == doctest::Approx(std::atanh(0.5)));
  CHECK(eval("arctan(1)") == doctest::Approx(M_PI / 4));
  CHECK(eval("max(3)") == 3);
  CHECK(eval("min(3)") == 3);
  CHECK(eval("eq0(0) + ne0(2) + gt0(1) + lt0(-1) + ge0(0) + le0(0)") == 6);
  CHECK(eval("ternary_fcn(1, 2, 3)") == 2);
  CHECK(eval("pwl(1.5, 0, 0, 1, 10, 2, 0)") == 5);
  CHECK(eval("pwl(3, 0, 0, 1, 10, 2, 0)") == -10);  // extrapolated along the last segment
  // A domain error names the function, located at it.
  double v;
  Status st = evaluate_expr("1 + acosh(0.5)", SourceLoc{}, Scope{}, v);
  REQUIRE(!st.ok());
  CHECK(st.errors[0].message.find("acosh") != std::string::npos);
  st = evaluate_expr("pwl(1, 0, 0, 0, 1)", SourceLoc{}, Scope{}, v);
  REQUIRE(!st.ok());
  CHECK(st.errors[0].message.find("pwl") != std::string::npos);
  st = evaluate_expr("2 * ddt(3)", SourceLoc{}, Scope{}, v);  // B sources only: says so, at the name
  REQUIRE(!st.ok());
  CHECK(st.errors[0].message.find("ddt() (a time derivative) is only available in behavioural") != std::string::npos);

  // B sources with the ngspice functions, against ngspice over a DC sweep.
  crosscheck_deck(R"(B source functions
v1 x 0 dc 0
b1 o1 0 v=pwl(v(x), -1, 0, 0, 1, 1, 3, 2, 2)
r1 o1 0 1k
b2 o2 0 v=eq0(v(x)) + 2*gt0(v(x)) + 4*le0(v(x)-0.6) + ne0(v(x)) + lt0(v(x)) + ge0(v(x))
r2 o2 0 1k
b3 o3 0 v=ternary_fcn(v(x) > 0.3, v(x)*v(x), -v(x)) + max(v(x), 0.5) + min(2*v(x), 1)
r3 o3 0 1k
b4 o4 0 v=pwr(v(x), 3) + asinh(v(x)) + atanh(v(x)/3) + acosh(2 + v(x)*v(x))
r4 o4 0 1k
.dc v1 -1.5 2.5 0.25
.end
)",
                  "bsource_functions");
  // One-argument min and max (ngspice 39's B source crashes on max(x) and returns x for min(2*x): not compared).
  const FlatNetlist fn = elaborate_yaml("devices:\n  - {name: v1, type: v, nodes: [x, 0], dc: 0.7}\n"
                                        "  - {name: b1, type: bsource, nodes: [o, 0], v: 'max(2*v(x)) + min(v(x))'}\n"
                                        "  - {name: r1, type: r, nodes: [o, 0], r: 1k}\nanalyses:\n  - {type: op}\n");
  CHECK(simulate_flat(fn).analyses[0].find("v(o)")->re[0] == doctest::Approx(2.1));
}

TEST_CASE("ddt in B sources: a capacitor's current written as I = C*ddt(v) is the capacitor (tran, ac); ngspice") {
  // The same RC twice: c1 a capacitor, b1 its current as a B source. One integration formula for both: the
  // waveforms agree to Newton's tolerance, and the AC responses (j omega C) to rounding.
  const std::string rc = R"(ddt against a capacitor
v1 in 0 dc 0 ac 1 pulse 0 1 10u 5u 5u 50u 200u
r1 in a 1k
c1 a 0 10n
r2 in b 1k
b1 b 0 i = 10n*ddt(v(b))
{}
.end
)";
  const RunResults tr = simulate_flat(elaborate_text(fmt::format(rc, ".tran 1u 400u")));
  const Signal& va = *tr.analyses[0].find("v(a)");
  const Signal& vb = *tr.analyses[0].find("v(b)");
  REQUIRE(va.re.size() == vb.re.size());
  double worst = 0;
  for (size_t k = 0; k < va.re.size(); ++k) worst = std::max(worst, std::fabs(va.re[k] - vb.re[k]));
  CHECK(worst < 1e-6);
  const RunResults ac = simulate_flat(elaborate_text(fmt::format(rc, ".ac dec 5 1k 10meg")));
  const Signal& aa = *ac.analyses[0].find("v(a)");
  const Signal& ab = *ac.analyses[0].find("v(b)");
  for (size_t k = 0; k < aa.re.size(); ++k) {
    CHECK(ab.re[k] == doctest::Approx(aa.re[k]).epsilon(1e-12));
    CHECK(ab.im[k] == doctest::Approx(aa.im[k]).epsilon(1e-12));
  }
  // ngspice's own example (examples/ddt/ddt-test3.cir: ddt of an RC's voltage, here driven by a sine) and a ddt
  // of a smooth expression of time and a node, against ngspice's lagged finite difference: 1e-3 of range. (At
  // ddt-test3's 1 ns pulse edges the lag of ngspice's difference, one step, is most of the spike: not compared.)
  crosscheck_deck(R"(ddt of an RC voltage and of an expression
v1 1 0 dc 0 sin 0 2 1k
r1 1 2 1k
c1 2 0 1u
b2 22 0 v = ddt(v(2))/1000
v3 3 0 dc 0 sin 0 1 200
b4 4 0 v = ddt(v(3)*v(3) + 1e-3*cos(2*pi*500*time))/1e3
r4 4 0 1k
.tran 100n 3m
.end
)",
                  "bsource_ddt");
}

TEST_CASE("behavioural E/G/F/H: POLY(n) and VALUE= / VOL= / CUR= match ngspice (vendor macromodel syntax)") {
  // POLY(2) to the third order with grouped "(a,b)" pairs, POLY(1) with one coefficient (p0, as ngspice), G, F and
  // H polynomials of source currents, and the VALUE/VOL/CUR expression forms; swept so every term counts.
  crosscheck_deck(R"(poly and value sources
v1 1 0 dc 0.5
v2 2 0 dc -0.3
r1 1 0 1k
r2 2 0 1k
e1 3 0 poly(2) (1,0) (2,0) 0.1 2 -1 0.5 0.25 -0.75 0.1 0.2 0.3 0.4
r3 3 0 1k
e2 4 0 poly(1) 1 0 3
r4 4 0 1k
g1 0 5 poly(2) 1 0 2 0 1m 2m 3m 4m
r5 5 0 1k
vs 6 0 dc 0
r6 1 6 100
f1 0 7 poly(1) vs 0 2 5
r7 7 0 1k
h1 8 0 poly(2) vs v1 0.2 100 -50 1e3
r8 8 0 1k
e3 9 0 value={v(1)*v(2) + 1}
r9 9 0 1k
g2 0 10 cur='2m*v(1)'
r10 10 0 1k
e4 11 0 vol = 'v(2)*3'
r11 11 0 1k
.options reltol=1e-8 vntol=1e-12
.save v(1) v(2) v(3) v(4) v(5) v(6) v(7) v(8) v(9) v(10) v(11)
.dc v1 -0.95 1 0.1
.end
)",
                  "poly_value");  // (ngspice's POLY sources are XSPICE code models with other current names)
  Status st;
  ParsedNetlist pn;
  st = parse_spice_string("t\ne1 a 0 poly(2) 1 0 2\n", "p.cir", builtin_catalog(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message.find("expected 4 controlling nodes after POLY(2)") != std::string::npos);
  CHECK(st.errors[0].loc.line == 2);
}

TEST_CASE("sources: 8-value PULSE, AM and SFFM match ngspice; PULSE at t = tstop; DISTOF warns; the µ suffix") {
  const RunResults r = crosscheck_deck(R"(sources
v1 p 0 pulse(0 1 1u 0.2u 0.2u 1u 3u 2)
r1 p 0 1k
v2 a 0 am(1 0.5 100k 1meg 1u)
r2 a 0 1k
v3 f 0 sffm(0.2 1 1meg 2 100k)
r3 f 0 1k
v4 e 0 pulse(0 2 0 1n 1n)
r4 e 0 1k
i1 0 m dc 1µA distof1 0.1 distof2 0.2 45
r5 m 0 1k
.tran 10n 12u
.end
)",
                                       "sources");
  // The default PULSE (per = pw = tstop) is at v2 at exactly t = tstop, as in ngspice.
  const Signal* e = r.analyses[0].find("v(e)");
  REQUIRE(e);
  CHECK(r.analyses[0].sweep.back() == doctest::Approx(12e-6));
  CHECK(e->re.back() == doctest::Approx(2.0));
  CHECK(r.analyses[0].find("v(m)")->re.front() == doctest::Approx(1e-3));  // 1 µA into 1 kohm

  ParsedNetlist pn;
  const Status st = parse_spice_string("t\ni1 0 m dc 1 distof1 0.1\nr1 m 0 1k\n.op\n.end\n", "d.cir",
                                         builtin_catalog(), pn);
  REQUIRE(st.ok());
  REQUIRE(st.warnings.size() == 1);
  CHECK(st.warnings[0].find("DISTOF1") != std::string::npos);
}

namespace {

// What a deck gives: parse and elaboration warnings, the error if any, and every analysis's numbers.
struct Outcome {
  std::vector<std::string> warnings;
  std::string error;
  std::string title;
  std::vector<std::string> groups;          // analysis group names
  std::vector<std::vector<double>> values;  // per analysis: the sweep, then every signal's values
  bool operator==(const Outcome& o) const {
    return error == o.error && title == o.title && groups == o.groups && values == o.values;
  }
};

Outcome outcome(const std::string& deck, const fs::path& dir, const std::string& stem) {
  Outcome out;
  const fs::path path = write_deck(dir, stem, deck);
  ParsedNetlist pn;
  FlatNetlist fn;
  Status st = parse_netlist(path.string(), builtin_catalog(), pn);
  out.warnings = st.warnings;
  if (st) {
    st = elaborate(pn, builtin_catalog(), fn);
    out.warnings.insert(out.warnings.end(), st.warnings.begin(), st.warnings.end());
  }
  out.title = fn.title;
  RunResults r;
  if (st) st = simulate(fn, builtin_catalog(), r);
  if (!st) {
    out.error = st.errors[0].message;
    return out;
  }
  for (const AnalysisResult& a : r.analyses) {
    out.groups.push_back(a.group);
    std::vector<double> v = a.sweep;
    for (const Signal& s : a.signals) {
      v.insert(v.end(), s.re.begin(), s.re.end());
      v.insert(v.end(), s.im.begin(), s.im.end());
    }
    out.values.push_back(std::move(v));
  }
  return out;
}

// The deck every option and card is tried on: a diode, an RC with a pulse, a temperature coefficient.
const char* const kWalkDeck = R"(option and card walk
v1 in 0 dc 1 pulse(0 1 0 1u 1u 3u 10u)
r1 in out 1k tc1=1e-3
d1 out k dm
r2 k 0 2k
c1 out 0 1n
.model dm d is=1e-14
{}
.op
.tran 0.1u 10u
.end
)";

}  // namespace

TEST_CASE("the option table's defaults are Options' defaults") {
  Options o;
  o.method = Integration::Gear;  // every member away from its default, then the table's defaults applied
  o.maxord = 1;
  o.reltol = o.abstol = o.vntol = o.chgtol = o.trtol = o.gmin = o.temp = o.tnom = 5;
  o.itl1 = o.itl4 = 3;
  o.power = true;
  o.maxdevices = 7;
  o.lureuse = 9;
  REQUIRE(apply_params(default_params(option_table()), o, "options").ok());
  const Options d;
  CHECK(o.method == d.method);
  CHECK(o.maxord == d.maxord);
  CHECK(o.reltol == d.reltol);
  CHECK(o.abstol == d.abstol);
  CHECK(o.vntol == d.vntol);
  CHECK(o.chgtol == d.chgtol);
  CHECK(o.trtol == d.trtol);
  CHECK(o.gmin == d.gmin);
  CHECK(o.temp == d.temp);
  CHECK(o.tnom == d.tnom);
  CHECK(o.itl1 == d.itl1);
  CHECK(o.itl4 == d.itl4);
  CHECK(o.power == d.power);
  CHECK(o.maxdevices == d.maxdevices);
  CHECK(o.lureuse == d.lureuse);
}

TEST_CASE("every option the reader accepts changes a result or warns") {
  const fs::path dir = scratch_dir("compat_options");
  const Outcome base = outcome(fmt::format(kWalkDeck, ""), dir, "base");
  REQUIRE(base.error.empty());
  REQUIRE(base.warnings.empty());
  // A value for each option that acts, away from its default (maxord acts on gear: compared with gear).
  const std::map<std::string, std::string> trial = {
      {"reltol", "0.1"}, {"abstol", "1e-3"},  {"vntol", "0.1"},  {"chgtol", "1e-6"},   {"trtol", "1000"},
      {"gmin", "1e-3"},  {"itl1", "1"},       {"itl4", "1"},     {"method", "gear"},   {"maxord", "1 method=gear"},
      {"power", "1"},    {"maxdevices", "1"}, {"temp", "100"},   {"tnom", "0"},     {"solver", "umfpack"},
      {"lureuse", "1"},
  };
  const Outcome gear = outcome(fmt::format(kWalkDeck, ".options method=gear"), dir, "gear");
  int acting = 0, warning = 0;
  for (const ParamSpec& s : option_table()) {
    INFO("option " << std::string(s.name));
    if (s.no_effect) {
      const Outcome o = outcome(fmt::format(kWalkDeck, fmt::format(".options {}", s.name)), dir, s.name);
      REQUIRE(o.warnings.size() == 1);
      CHECK(o.warnings[0].find(s.name) != std::string::npos);
      CHECK(o == base);
      ++warning;
      continue;
    }
    const auto it = trial.find(s.name);
    REQUIRE_MESSAGE(it != trial.end(), "an option that acts needs a trial value here");
    const Outcome o = outcome(fmt::format(kWalkDeck, fmt::format(".options {}={}", s.name, it->second)), dir, s.name);
    ++acting;
    // solver chooses the sparse LU (tests/test_sparse_lu.cpp), lureuse when Newton solves with earlier factors
    // (tests/test_analyses.cpp): the same results to rounding, so no exact difference is required here
    if (std::string(s.name) == "solver" || std::string(s.name) == "lureuse") {
      CHECK(o.error.empty());
      CHECK(o.warnings.empty());
      continue;
    }
    CHECK_FALSE(o == (std::string(s.name) == "maxord" ? gear : base));
  }
  CHECK(acting == 16);
  CHECK(warning > 30);
  // Anything else is an error located at the option.
  const Outcome o = outcome(fmt::format(kWalkDeck, ".options rshunt=1e12"), dir, "unknown");
  CHECK(o.error.find("unknown option 'rshunt'") != std::string::npos);
}

// The deck with and without the snippet's lines marked '!' (the lines of the card under test).
std::pair<std::string, std::string> with_and_without(std::string_view snippet) {
  std::string with, without;
  for (std::string_view rest = snippet; !rest.empty();) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const bool card = !line.empty() && line[0] == '!';
    if (card) line.remove_prefix(1);
    with += std::string(line) + "\n";
    if (!card) without += std::string(line) + "\n";
  }
  return {fmt::format(kWalkDeck, with), fmt::format(kWalkDeck, without)};
}

TEST_CASE("every dot card the SPICE reader accepts changes a result or warns") {
  const fs::path dir = scratch_dir("compat_cards");
  std::ofstream(dir / "inc.cir") << "r9 out 0 3k\n";
  std::ofstream(dir / "lib.cir") << ".lib typ\nr9 out 0 3k\n.endl typ\n";
  const Outcome base = outcome(fmt::format(kWalkDeck, ""), dir, "base");
  REQUIRE(base.error.empty());
  // Each card in a snippet, and the snippet without the card's lines (those marked '!'): the two must differ,
  // or the card must warn. A card that others need (.model for its device) differs by an error without it.
  // (.meas / .measure are checked against ngspice's results in test_spice_compat.cpp.)
  struct Card {
    const char* name;
    const char* snippet;
  };
  const Card cards[] = {
      {".model", "!.model dx d is=1e-12\nd9 out 0 dx"},
      {".subckt .ends", "!.subckt sx a\n!r1 a 0 1k\n!.ends sx\nx1 out sx"},
      {".param", "!.param rv=3k\nr9 out 0 {rv}"},
      {".func", "!.func half(x) {x/2}\nr9 out 0 {half(4k)}"},
      {".include", "!.include inc.cir"},
      {".inc", "!.inc inc.cir"},
      {".lib .endl", "!.lib lib.cir typ"},
      {".op", "!.op"},
      {".dc", "!.dc v1 0 1 0.5"},
      {".tran", "!.tran 1u 2u"},
      {".ac", "!.ac dec 2 1k 10k"},
      {".options", "!.options temp=80"},
      {".option", "!.option temp=80"},
      {".opt", "!.opt temp=80"},
      {".temp", "!.temp 80"},
      {".ic", "!.ic v(out)=0.3"},
      {".save", "!.save v(out)"},
      {".probe", "!.probe v(out)"},
      {".global", "!.global gx\n.subckt sx a\nr1 a gx 1k\n.ends sx\nx1 out sx\nr9 gx 0 1k"},
      {".if .else .endif", "!.if (1)\n!r8 out 0 1k\n!.else\nr9 out 0 3k\n!.endif"},
      {".title", "!.title another title"},
      {".end", "!.end\nr9 out 0 3k"},
      {".csparam", "!.csparam x=1"},
      {".print", "!.print tran v(out)"},
      {".plot", "!.plot tran v(out)"},
      {".width", "!.width out=80"},
      {".four", "!.four 100k v(out)"},
      {".nodeset", "!.nodeset v(out)=0.5"},
      {".control .endc", "!.control\n!run\n!.endc"},
  };
  for (const Card& c : cards) {
    INFO("card " << c.name);
    const auto [with, without] = with_and_without(c.snippet);
    const Outcome a = outcome(with, dir, "with");
    const Outcome b = outcome(without, dir, "without");
    INFO("with: " << a.error << " without: " << b.error);
    CHECK((!(a == b) || !a.warnings.empty()));
  }
}

TEST_CASE("every .control command the SPICE reader accepts changes a result or warns; others are located errors") {
  const fs::path dir = scratch_dir("compat_control");
  // As the card walk: each command in a .control block, with and without its lines ('!'). The block ends in
  // quit where the command's effect would otherwise be hidden by the dot analyses ngspice -b runs after it.
  // (meas is checked against ngspice's results in test_spice_compat.cpp, tests/compat/control_*.cir.)
  const char* const commands[][2] = {
      {"op", ".control\n!op\nquit\n.endc"},
      {"dc", ".control\n!dc v1 0 1 0.5\nquit\n.endc"},
      {"tran", ".control\n!tran 1u 2u\nquit\n.endc"},
      {"ac", ".control\n!ac dec 2 1k 10k\nquit\n.endc"},
      {"run", ".control\n!run\nquit\n.endc"},
      {"option", ".control\n!option temp=80\nrun\nquit\n.endc"},
      {"options", ".control\n!options temp=80\nrun\nquit\n.endc"},
      {"opt", ".control\n!opt temp=80\nrun\nquit\n.endc"},
      {"save", ".control\n!save v(out)\nrun\nquit\n.endc"},
      {"quit", ".control\nop\n!quit\n.endc"},
      {"exit", ".control\nop\n!exit\n.endc"},
      {"print", ".control\nrun\n!print v(out)\nquit\n.endc"},
      {"wrdata", ".control\nrun\n!wrdata out.txt v(out)\nquit\n.endc"},
      {"write", ".control\nrun\n!write out.raw\nquit\n.endc"},
      {"plot", ".control\nrun\n!plot v(out)\nquit\n.endc"},
      {"gnuplot", ".control\nrun\n!gnuplot g v(out)\nquit\n.endc"},
      {"hardcopy", ".control\nrun\n!hardcopy h.ps v(out)\nquit\n.endc"},
      {"asciiplot", ".control\nrun\n!asciiplot v(out)\nquit\n.endc"},
      {"echo", ".control\n!echo \"value =\" $&x\nrun\nquit\n.endc"},
      {"display", ".control\nrun\n!display\nquit\n.endc"},
      {"show", ".control\nrun\n!show r1\nquit\n.endc"},
      {"listing", ".control\n!listing\nrun\nquit\n.endc"},
      {"rusage", ".control\nrun\n!rusage all\nquit\n.endc"},
      {"destroy", ".control\nrun\n!destroy all\nquit\n.endc"},
      {"set", ".control\n!set filetype=ascii\nrun\nquit\n.endc"},
      {"unset", ".control\n!unset askquit\nrun\nquit\n.endc"},
  };
  for (const auto& [name, snippet] : commands) {
    INFO("control command " << name);
    const auto [with, without] = with_and_without(snippet);
    const Outcome a = outcome(with, dir, "with");
    const Outcome b = outcome(without, dir, "without");
    INFO("with: " << a.error << " without: " << b.error);
    CHECK(a.error.empty());
    CHECK((!(a == b) || !a.warnings.empty()));
  }
  // Anything else is an error located at the command; lines after quit never run (as in ngspice).
  for (const char* cmd : {"let x = 1", "if x > 1", "foreach v 1 2", "alter r1 2k", "setplot dc1"}) {
    const Outcome o = outcome(fmt::format(kWalkDeck, fmt::format(".control\nrun\n{}\n.endc", cmd)), dir, "bad");
    INFO(cmd);
    CHECK(o.error.find(".control command '" + std::string(cmd).substr(0, std::string(cmd).find(' ')) +
                       "' is not supported") != std::string::npos);
  }
  CHECK(outcome(fmt::format(kWalkDeck, ".control\nrun\nquit\nlet x = 1\n.endc"), dir, "after_quit").error.empty());
}
