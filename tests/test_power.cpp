// Power probes (engine/power.hpp): analytic powers and energies (divider, capacitor charge, RC source energy),
// Tellegen (the absorbed powers and energies of every device sum to zero, 1e-9 of the sum of |p|) on op, dc and
// tran of small circuits of every device kind and on every example netlist, the opt-in spellings, and total
// power and energy against ngspice on the exported decks (op-amp rails exported as sources).
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>
#include <fmt/format.h>
#include "nn/analyses.hpp"
#include "tests/circuit_helpers.hpp"
#include "tests/ngspice_helpers.hpp"

using namespace anasim;
using namespace anasim::test;
namespace fs = std::filesystem;

namespace {

bool is_power_term(const Signal& s, char q) {  // p(<device>) / e(<device>): not a type sum or the total
  const std::string pre = std::string(1, q) + "(";
  return s.name.rfind(pre, 0) == 0 && s.name.rfind(pre + "type:", 0) != 0 && s.name != pre + "total)";
}

// Worst |sum of the per-type sums| / sum of |per-device terms| over the rows of analysis a, for p (q = 'p') or
// e (q = 'e'); also checks that the per-type sums add the per-device terms. Returns -1 if a has no such signals.
double tellegen(const AnalysisResult& a, char q) {
  std::vector<const Signal*> terms, types;
  for (const Signal& s : a.signals) {
    if (is_power_term(s, q)) terms.push_back(&s);
    else if (s.name.rfind(std::string(1, q) + "(type:", 0) == 0) types.push_back(&s);
  }
  if (terms.empty()) return -1;
  double worst = 0;
  for (int r = 0; r < a.rows(); ++r) {
    double sum = 0, mag = 0, sum_terms = 0;
    for (const Signal* s : types) sum += s->re[r];
    for (const Signal* s : terms) {
      mag += std::fabs(s->re[r]);
      sum_terms += s->re[r];
    }
    CHECK(std::fabs(sum - sum_terms) <= 1e-12 * mag + 1e-300);
    if (mag > 0) worst = std::max(worst, std::fabs(sum) / mag);
  }
  return worst;
}

double worst_tellegen = 0;  // over every check_tellegen call, for the report

// Checks Tellegen on every op/dc/tran analysis of r (powers, and energies in tran); returns how many were checked.
int check_tellegen(const RunResults& r) {
  int checked = 0;
  for (const AnalysisResult& a : r.analyses) {
    if (a.kind != "op" && a.kind != "dc" && a.kind != "tran") continue;
    INFO("analysis " << a.group);
    const double p = tellegen(a, 'p');
    REQUIRE(p >= 0);
    CHECK(p <= 1e-9);
    if (a.kind == "tran") CHECK(tellegen(a, 'e') <= 1e-9);
    worst_tellegen = std::max(worst_tellegen, p);
    ++checked;
  }
  return checked;
}

double last(const RunResults& r, size_t k, const std::string& name) { return signal(r, k, name).re.back(); }

}  // namespace

TEST_CASE("power: resistor divider powers, per type and total") {
  const RunResults r = run_deck(R"(divider
v1 in 0 dc 10
r1 in mid 1k
r2 mid 0 3k
.options power
.op
)");
  const double i = 10.0 / 4e3;
  CHECK(op_value(r, 0, "p(r1)") == doctest::Approx(i * i * 1e3).epsilon(1e-12));
  CHECK(op_value(r, 0, "p(r2)") == doctest::Approx(i * i * 3e3).epsilon(1e-12));
  CHECK(op_value(r, 0, "p(v1)") == doctest::Approx(-10 * i).epsilon(1e-12));
  CHECK(op_value(r, 0, "p(type:r)") == doctest::Approx(10 * i).epsilon(1e-12));
  CHECK(op_value(r, 0, "p(type:v)") == doctest::Approx(-10 * i).epsilon(1e-12));
  CHECK(op_value(r, 0, "p(total)") == doctest::Approx(10 * i).epsilon(1e-12));  // delivered by the supplies
  CHECK(signal(r, 0, "p(total)").unit == "W");
  check_tellegen(r);
}

TEST_CASE("power: off unless asked for; per-analysis YAML key, .options power, options: {power: true}") {
  const RunResults off = run_deck("t\nv1 a 0 1\nr1 a 0 1k\n.op\n");
  CHECK(off.analyses[0].find("p(r1)") == nullptr);
  const RunResults yaml = simulate_flat(elaborate_yaml(R"(
devices:
  - {name: v1, type: v, nodes: [a, 0], dc: 1}
  - {name: r1, type: r, nodes: [a, 0], r: 1k}
analyses:
  - {type: op, power: true}
  - {type: op}
  - {type: dc, source: v1, start: 0, stop: 1, step: 0.5, power: yes}
  - {type: tran, tstep: 1u, tstop: 10u, power: true}
)"));
  CHECK(yaml.analyses[0].find("p(r1)") != nullptr);
  CHECK(yaml.analyses[1].find("p(r1)") == nullptr);
  CHECK(yaml.analyses[2].find("p(r1)") != nullptr);
  CHECK(yaml.analyses[3].find("e(r1)") != nullptr);
  CHECK(signal(yaml, 2, "p(r1)").re.back() == doctest::Approx(1e-3));
  const RunResults opt = simulate_flat(elaborate_yaml(R"(
options: {power: true}
devices:
  - {name: v1, type: v, nodes: [a, 0], dc: 1}
  - {name: r1, type: r, nodes: [a, 0], r: 1k}
analyses: [{type: op}]
)"));
  CHECK(op_value(opt, 0, "p(r1)") == doctest::Approx(1e-3));
  ParsedNetlist pn;
  const Status st = parse_yaml_string("devices: []\nanalyses: [{type: op, power: maybe}]\n", "bad.yaml",
                                      builtin_catalog(), pn);
  REQUIRE(!st.ok());
  CHECK(st.errors[0].message.find("expected true or false for 'power'") != std::string::npos);
}

TEST_CASE("power: capacitor energy 1/2 C V^2 after a charge, source energy C V^2 (RC step)") {
  for (const char* method : {"trap", "gear", "euler"}) {
    INFO("method " << std::string(method));
    const RunResults r = run_deck(fmt::format(R"(rc charge
v1 in 0 pulse(0 2 1u 1n 1n 1 2)
r1 in out 1k
c1 out 0 1u
.options power method={}
.tran 10u 10m
)", method));
    const double c = 1e-6, v = 2.0;
    CHECK(last(r, 0, "e(c1)") == doctest::Approx(0.5 * c * v * v).epsilon(1e-3));
    CHECK(last(r, 0, "e(r1)") == doctest::Approx(0.5 * c * v * v).epsilon(1e-3));
    CHECK(last(r, 0, "e(v1)") == doctest::Approx(-c * v * v).epsilon(1e-3));
    CHECK(last(r, 0, "e(total)") == doctest::Approx(c * v * v).epsilon(1e-3));
    CHECK(signal(r, 0, "e(total)").unit == "J");
    check_tellegen(r);
  }
}

TEST_CASE("power: Tellegen on op, dc and tran of small circuits (R C L V I E F G H D B)") {
  const char* decks[] = {
      R"(rlc with sources
v1 in 0 dc 1 pulse(0 1 0 1u 1u 5u 10u)
i1 0 n2 dc 1m sin(1m 0.5m 100k)
r1 in n1 100
l1 n1 n2 10u
c1 n2 0 10n
r2 n2 0 1k
.options power
.op
.dc v1 0 2 0.5
.tran 0.1u 20u
)",
      R"(controlled sources
v1 in 0 dc 0.3 sin(0.3 0.2 50k)
r1 in a 1k
e1 b 0 a 0 2
rb b 0 2k
g1 0 c a 0 1m
rc c 0 3k
vs a x 0
rx x 0 500
f1 0 d vs 3
rd d 0 1k
h1 e 0 vs 100
re e 0 1k
.options power
.op
.dc v1 -1 1 0.25
.tran 1u 40u
)",
      R"(diode and b source
v1 in 0 dc 1.5 sin(0 2 10k)
r1 in a 200
d1 a k dm
rk k 0 100
ck k 0 10n
b1 b 0 i=v(a)*1m+v(k)*v(k)*1m
rb b 0 1k
b2 c 0 v=tanh(v(a))
rcb c 0 1k
.model dm d is=1e-14 rs=5 cjo=2p tt=1n
.options power
.op
.dc v1 -2 2 0.1
.tran 2u 200u
)",
  };
  for (const char* deck : decks) {
    INFO(std::string(deck));
    CHECK(check_tellegen(run_deck(deck)) == 3);
  }
}

TEST_CASE("power: Tellegen with op-amps of every level, with and without supply pins; crossbar, DAC, ADC") {
  for (int level : {0, 1, 2}) {
    for (bool supplied : {false, true}) {
      INFO("level " << level << (supplied ? std::string(" with") : std::string(" without")) << " supply pins");
      CAPTURE(level);
      const std::string nodes = supplied ? "[0, inn, out, vcc, vee]" : "[0, inn, out]";
      const RunResults r = simulate_flat(elaborate_yaml(fmt::format(R"(
devices:
  - {{name: vin, type: v, nodes: [in, 0], dc: 0.2, sin: [0, 0.5, 20k]}}
  - {{name: vp, type: v, nodes: [vcc, 0], dc: 5}}
  - {{name: vn, type: v, nodes: [vee, 0], dc: -5}}
  - {{name: r1, type: r, nodes: [in, inn], r: 1k}}
  - {{name: r2, type: r, nodes: [inn, out], r: 4.7k}}
  - {{name: rl, type: r, nodes: [out, 0], r: 2k}}
  - {{name: u1, type: opamp, nodes: {}, level: {}, model: ua741, vpos: 5, vneg: -5}}
analyses:
  - {{type: op, power: true}}
  - {{type: dc, source: vin, start: -1.5, stop: 1.5, step: 0.1, power: true}}
  - {{type: tran, tstep: 1u, tstop: 100u, power: true}}
)", nodes, level)));
      CHECK(check_tellegen(r) == 3);
      // Without supply pins the rails appear as their own term and deliver what the op-amp draws.
      const AnalysisResult& op = r.analyses[0];
      CHECK((op.find("p(u1#rails)") != nullptr) == !supplied);
      if (!supplied) {
        CHECK(op.find("p(u1#rails)")->re[0] < 0);
        CHECK(op.find("p(u1)")->re[0] > 0);
      }
    }
  }
  // Quiescent current from internal rails: iq * (vpos - vneg) with the output at rest.
  const RunResults q = simulate_flat(elaborate_yaml(R"(
devices:
  - {name: u1, type: opamp, nodes: [0, out, out], model: ua741, vpos: 12, vneg: -12, vos: 0}
analyses: [{type: op, power: true}]
)"));
  CHECK(op_value(q, 0, "p(u1#rails)") == doctest::Approx(-1.7e-3 * 24).epsilon(1e-6));
  CHECK(op_value(q, 0, "p(total)") == doctest::Approx(1.7e-3 * 24).epsilon(1e-6));

  const RunResults x = simulate_flat(elaborate_yaml(R"(
devices:
  - {name: d0, type: dac, nodes: [r0, 0], bits: 4, vmin: 0, vmax: 0.3, code: 15, rout: 50}
  - {name: d1, type: dac, nodes: [r1, 0], bits: 4, vmin: 0, vmax: 0.3, code: 7}
  - {name: xb, type: crossbar, nodes: [r0, r1, c0, c1], rows: 2, cols: 2, g: [1e-5, 2e-5, 3e-5, 4e-5], rwire_row: 1,
     rwire_col: 1, cwire: 1f}
  - {name: e0, type: e, nodes: [t0, 0, 0, c0], gain: 1e5}
  - {name: f0, type: r, nodes: [c0, t0], r: 10k}
  - {name: e1, type: e, nodes: [t1, 0, 0, c1], gain: 1e5}
  - {name: f1, type: r, nodes: [c1, t1], r: 10k}
  - {name: adc, type: adc, nodes: [t0, t1, 0], bits: 8, vmin: -1.2, vmax: 0, rin: 1meg}
analyses:
  - {type: op, power: true}
  - {type: tran, tstep: 1n, tstop: 10n, power: true}
)"));
  CHECK(check_tellegen(x) == 2);
  CHECK(op_value(x, 0, "p(type:crossbar)") > 0);
  CHECK(op_value(x, 0, "p(total)") == doctest::Approx(-op_value(x, 0, "p(type:dac)")));
}

TEST_CASE("power: Tellegen on every example netlist") {
  const fs::path dir = fs::path(ANASIM_SOURCE_DIR) / "data" / "examples";
  AnalysisCatalog analyses;
  nn::add_analyses(analyses, (fs::path(ANASIM_SOURCE_DIR) / ".." / "shared" / "mnist").string());
  int files = 0, checked = 0;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    INFO(p.filename().string());
    ParsedNetlist pn;
    REQUIRE(parse_netlist(p.string(), builtin_catalog(), pn, &analyses).ok());
    if (pn.devices.empty()) continue;  // a hardware configuration or nn analyses only
    FlatNetlist fn;
    REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
    fn.options.power = true;  // as `anasim run --power`
    fn.analyses.erase(std::remove_if(fn.analyses.begin(), fn.analyses.end(),
                                     [](const Analysis& a) { return a.kind == AnalysisSpec::Kind::Extension; }),
                      fn.analyses.end());  // nn analyses (MNIST data) are not circuit analyses
    RunResults r;
    const Status st = simulate(fn, builtin_catalog(), r);
    INFO(st.to_string());
    REQUIRE(st.ok());
    checked += check_tellegen(r);
    ++files;
  }
  MESSAGE(files << " example netlists, " << checked << " op/dc/tran analyses checked; worst |sum p| / sum |p| of "
                << "all power tests so far " << worst_tellegen);
  CHECK(files >= 10);
}

namespace {

// Sum over ngspice's voltage sources (names "i(v...)") of the power they deliver, -v * i, at point p; the
// voltage of source `name` is read from `volts` (deck-known values, constant rails) or computed by `v_of`.
double ngspice_delivered(const RawPlot& n, int p, const std::vector<std::pair<std::string, std::string>>& sources) {
  double total = 0;
  for (const auto& [src, node] : sources) {
    const int ki = n.find("i(" + src + ")"), kv = n.find("v(" + node + ")");
    INFO(src << " at " << node);
    REQUIRE(ki >= 0);
    REQUIRE(kv >= 0);
    total -= n.re[kv][p] * n.re[ki][p];
  }
  return total;
}

}  // namespace

TEST_CASE("power: total power and energy against ngspice (op-amp rails as sources, diode)") {
  if (!ngspice_available()) {
    MESSAGE("ngspice not found: skipped");
    return;
  }
  const auto dir = scratch_dir("power");
  struct Case {
    const char* stem;
    const char* yaml;
    std::vector<std::pair<std::string, std::string>> sources;  // ngspice source name, its + node (- is ground)
  };
  const Case cases[] = {
      {"opamp", R"(
devices:
  - {name: vin, type: v, nodes: [in, 0], dc: 0.5, pulse: [0, 0.5, 2u, 1u, 1u, 20u, 50u]}
  - {name: r1, type: r, nodes: [in, inn], r: 1k}
  - {name: r2, type: r, nodes: [inn, out], r: 10k}
  - {name: rl, type: r, nodes: [out, 0], r: 2k}
  - {name: u1, type: opamp, nodes: [0, inn, out], model: ua741, vpos: 12, vneg: -12}
analyses:
  - {type: op, power: true}
  - {type: tran, tstep: 0.1u, tstop: 60u, power: true}
)",
       {{"vin", "in"}, {"v.u1_vp", "u1_vp"}, {"v.u1_vn", "u1_vn"}}},
      {"diode", R"(
devices:
  - {name: v1, type: v, nodes: [in, 0], dc: 1.2, sin: [0.5, 1, 100k]}
  - {name: r1, type: r, nodes: [in, a], r: 100}
  - {name: d1, type: d, nodes: [a, 0], model: dm}
  - {name: c1, type: c, nodes: [a, 0], c: 1n}
models: {dm: {type: d, is: 1e-14, rs: 2, cjo: 5p}}
analyses:
  - {type: op, power: true}
  - {type: tran, tstep: 0.1u, tstop: 30u, power: true}
)",
       {{"v1", "in"}}},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.stem));
    const FlatNetlist fn = elaborate_yaml(c.yaml);
    const RunResults r = simulate_flat(fn);
    const auto deck = dir / (std::string(c.stem) + ".cir");
    REQUIRE(export_spice(fn, deck.string()).ok());
    const std::vector<RawPlot> plots = run_ngspice(deck);
    REQUIRE(plots.size() == 2);
    const double p_anasim = op_value(r, 0, "p(total)");
    const double p_ngspice = ngspice_delivered(plots[0], 0, c.sources);
    CHECK(p_anasim == doctest::Approx(p_ngspice).epsilon(1e-6));
    // tran: energy delivered, ngspice's v * i integrated with the trapezoidal rule on its own grid.
    const RawPlot& t = plots[1];
    double e_ngspice = 0;
    for (int p = 1; p < t.points(); ++p)
      e_ngspice += 0.5 * (t.re[0][p] - t.re[0][p - 1]) *
                   (ngspice_delivered(t, p, c.sources) + ngspice_delivered(t, p - 1, c.sources));
    const double e_anasim = last(r, 1, "e(total)");
    MESSAGE(std::string(c.stem) << ": op p(total) " << p_anasim << " W (ngspice " << p_ngspice << "), tran e(total) " << e_anasim
                   << " J (ngspice " << e_ngspice << ")");
    CHECK(e_anasim == doctest::Approx(e_ngspice).epsilon(1e-3));
    check_tellegen(r);
  }
}

TEST_CASE("power: Tellegen and the same powers when conjugate gradients solve (a 48x24 crossbar, op and tran)") {
  // 2,400 unknowns: both analyses take conjugate gradients under solver: pcg (auto keeps KLU: a circuit with states
  // below 20,000 unknowns); the power meter's refinement step then solves its small correction by them too.
  std::string yaml = "devices:\n";
  std::string pins;
  const int R = 48, C = 24;
  for (int i = 0; i < R; ++i) {
    yaml += fmt::format("  - {{name: v{0}, type: v, nodes: [r{0}, 0], dc: {1}}}\n", i, 0.05 + 0.004 * (i % 7));
    pins += fmt::format("r{}, ", i);
  }
  std::string g;
  for (int k = 0; k < R * C; ++k) g += fmt::format("{}{}", k ? ", " : "", 1e-5 * (1 + (k * 7) % 10));
  for (int j = 0; j < C; ++j) pins += fmt::format("n{}{}", j, j + 1 < C ? ", " : "");
  yaml += fmt::format("  - {{name: xb, type: crossbar, rows: {}, cols: {}, rwire_row: 1, rwire_col: 1, cwire: 10f, "
                      "g: [{}], nodes: [{}]}}\n", R, C, g, pins);
  for (int j = 0; j < C; ++j)
    yaml += fmt::format("  - {{name: e{0}, type: e, nodes: [o{0}, 0, 0, n{0}], gain: 1e5}}\n"
                        "  - {{name: f{0}, type: r, nodes: [n{0}, o{0}], r: 10k}}\n", j);
  auto run = [&](const char* solver) {
    return simulate_flat(elaborate_yaml(yaml + fmt::format("options: {{solver: {}}}\nanalyses:\n"
                                                           "  - {{type: op, power: true}}\n"
                                                           "  - {{type: tran, tstep: 0.1n, tstop: 2n, power: true}}\n",
                                                           solver)));
  };
  const RunResults klu = run("klu"), cg = run("pcg"), aut = run("auto");
  CHECK(cg.analyses[0].stats.cg_iterations > 0);
  CHECK(cg.analyses[1].stats.cg_iterations > 0);
  CHECK(aut.analyses[0].stats.cg_iterations == 0);
  CHECK(aut.analyses[1].stats.cg_iterations == 0);
  CHECK(check_tellegen(cg) == 2);
  CHECK(check_tellegen(aut) == 2);
  for (const std::string name : {"p(total)", "p(xb)", "p(type:v)", "p(e3)"})
    CHECK(op_value(cg, 0, name) == doctest::Approx(op_value(klu, 0, name)).epsilon(1e-10));
  CHECK(last(cg, 1, "e(total)") == doctest::Approx(last(klu, 1, "e(total)")).epsilon(1e-9));
}

TEST_CASE("run: the flat devices are released after the build only for a transient that reads none of them") {
  const std::string devices = R"(
devices:
  - {name: v1, type: v, nodes: [a, 0], dc: 1}
  - {name: r1, type: r, nodes: [a, b], r: 1k}
  - {name: c1, type: c, nodes: [b, 0], c: 1n}
)";
  auto releases = [&](const std::string& rest) { return releases_devices(elaborate_yaml(devices + rest)); };
  CHECK(releases("analyses: [{type: tran, tstep: 1u, tstop: 10u}]\n"));
  CHECK(releases("analyses: [{type: op}, {type: tran, tstep: 1u, tstop: 10u}]\n"));
  CHECK_FALSE(releases("analyses: [{type: op}]\n"));  // an op's peak is past by then: not worth the freeing
  CHECK_FALSE(releases("analyses: [{type: tran, tstep: 1u, tstop: 10u, power: true}]\n"));
  CHECK_FALSE(releases("options: {power: true}\nanalyses: [{type: tran, tstep: 1u, tstop: 10u}]\n"));
  CHECK_FALSE(releases("analyses: [{type: dc, source: v1, start: 0, stop: 1, step: 0.5}, "
                       "{type: tran, tstep: 1u, tstop: 10u}]\n"));
  CHECK_FALSE(releases("outputs: ['@r1[r]']\nanalyses: [{type: tran, tstep: 1u, tstop: 10u}]\n"));
  // released, the run gives what it gives with them kept
  FlatNetlist fn = elaborate_yaml(devices + "analyses: [{type: tran, tstep: 1u, tstop: 10u}]\n");
  const FlatNetlist kept = fn;
  RunResults a, b;
  REQUIRE(simulate(fn, builtin_catalog(), a, nullptr, nullptr, &fn.devices).ok());
  CHECK(fn.devices.empty());
  REQUIRE(simulate(kept, builtin_catalog(), b).ok());
  CHECK(signal(a, 0, "v(b)").re == signal(b, 0, "v(b)").re);
}

TEST_CASE("conjugate gradients in Newton: a crossbar with diodes, the same operating point as KLU's") {
  // Diodes to ground at some row nodes: each Newton iteration refactors the preconditioner; the warm start carries.
  std::string yaml = "devices:\n";
  std::string pins;
  const int R = 40, C = 20;
  for (int i = 0; i < R; ++i) {
    yaml += fmt::format("  - {{name: v{0}, type: v, nodes: [r{0}, 0], dc: {1}}}\n", i, 0.3 + 0.01 * (i % 9));
    pins += fmt::format("r{}, ", i);
  }
  std::string g;
  for (int k = 0; k < R * C; ++k) g += fmt::format("{}{}", k ? ", " : "", 1e-5 * (1 + (k * 3) % 10));
  for (int j = 0; j < C; ++j) pins += fmt::format("n{}{}", j, j + 1 < C ? ", " : "");
  yaml += fmt::format("  - {{name: xb, type: crossbar, rows: {}, cols: {}, rwire_row: 1, rwire_col: 1, g: [{}], "
                      "nodes: [{}]}}\n", R, C, g, pins);
  for (int j = 0; j < C; ++j)
    yaml += fmt::format("  - {{name: e{0}, type: e, nodes: [o{0}, 0, 0, n{0}], gain: 1e5}}\n"
                        "  - {{name: f{0}, type: r, nodes: [n{0}, o{0}], r: 10k}}\n"
                        "  - {{name: d{0}, type: d, nodes: [n{0}, 0], model: dm}}\n", j);
  yaml += "models: {dm: {type: d, is: 1e-9, n: 1.5}}\n";
  auto run = [&](const char* solver) {
    return simulate_flat(elaborate_yaml(yaml + fmt::format("options: {{solver: {}}}\nanalyses: [{{type: op}}]\n",
                                                           solver)));
  };
  const RunResults klu = run("klu"), cg = run("pcg");
  CHECK(cg.analyses[0].stats.cg_iterations > 0);
  CHECK(cg.analyses[0].stats.newton_iterations > 1);
  double worst = 0;
  for (const Signal& s : klu.analyses[0].signals)
    if (s.name.rfind("v(", 0) == 0) worst = std::max(worst, std::fabs(s.re[0] - op_value(cg, 0, s.name)));
  CHECK(worst < 1e-11);
}
