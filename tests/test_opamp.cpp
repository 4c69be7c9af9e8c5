// Op-amp device (devices/opamp.cpp) against analytic results: finite-gain and ideal closed-loop gains,
// follower bandwidth = GBW, slew rate, clipping at the rails minus headroom, offset times noise gain, bias and
// supply currents, parts table and overrides, and Newton convergence with the output hard in saturation.
#include <doctest/doctest.h>
#include <cmath>
#include <complex>
#include <string>
#include <fmt/format.h>
#include "tests/ngspice_helpers.hpp"

using namespace anasim;
using namespace anasim::test;

namespace {

RunResults run_yaml(const std::string& text) { return simulate_flat(elaborate_yaml(text)); }

const Signal& sig(const AnalysisResult& a, const std::string& name) {
  const Signal* s = a.find(name);
  INFO("signal " << name);
  REQUIRE(s != nullptr);
  return *s;
}

double op(const RunResults& r, const std::string& name, size_t k = 0) { return sig(r.analyses.at(k), name).re.at(0); }

// Inverting amplifier r1 = 1k, r2 = 1k * g with op-amp parameters `amp`, input vin (dc, ac 1).
std::string inverting(double g, const std::string& amp, double vin, const std::string& analyses) {
  return fmt::format(R"(
devices:
  - {{name: vin, type: v, nodes: [in, 0], dc: {}, ac: 1}}
  - {{name: r1, type: r, nodes: [in, inn], r: 1k}}
  - {{name: r2, type: r, nodes: [inn, out], r: {}}}
  - {{name: u1, type: opamp, nodes: [0, inn, out], {}}}
analyses: [{}]
)", vin, 1e3 * g, amp, analyses);
}

// -3 dB frequency of |v(out)| relative to its first point, by log interpolation.
double f3db(const AnalysisResult& a, const std::string& name) {
  const Signal& s = sig(a, name);
  const double ref = std::abs(std::complex<double>(s.re[0], s.im[0])) / std::sqrt(2.0);
  for (size_t k = 1; k < s.re.size(); ++k) {
    const double m0 = std::abs(std::complex<double>(s.re[k - 1], s.im[k - 1]));
    const double m1 = std::abs(std::complex<double>(s.re[k], s.im[k]));
    if (m0 >= ref && m1 < ref) {
      const double t = (m0 - ref) / (m0 - m1);
      return std::exp(std::log(a.sweep[k - 1]) + t * (std::log(a.sweep[k]) - std::log(a.sweep[k - 1])));
    }
  }
  FAIL("no -3 dB point");
  return 0;
}

// Slew rate [V/s] of a rising step from lo to hi, measured between its 20 % and 80 % crossings (a
// point-to-point dV/dt is noise where the integrator takes sub-picosecond steps at the input edge).
double slew_20_80(const AnalysisResult& a, const std::string& name, double lo, double hi) {
  const Signal& s = sig(a, name);
  auto crossing = [&](double level) {
    for (size_t k = 1; k < s.re.size(); ++k)
      if (s.re[k - 1] < level && s.re[k] >= level)
        return a.sweep[k - 1] + (level - s.re[k - 1]) * (a.sweep[k] - a.sweep[k - 1]) / (s.re[k] - s.re[k - 1]);
    FAIL("no crossing of " << level);
    return 0.0;
  };
  const double v20 = lo + 0.2 * (hi - lo), v80 = lo + 0.8 * (hi - lo);
  return (v80 - v20) / (crossing(v80) - crossing(v20));
}

}  // namespace

TEST_CASE("opamp: inverting gain with finite A0 matches -R2/R1 / (1 + (1 + R2/R1)/A0)") {
  const double a0 = 1000, g = 10;
  const double exact = -g / (1 + (1 + g) / a0);
  for (int level : {1, 2}) {
    CAPTURE(level);
    // rout tiny so only A0 is finite; level 2's pole sits far above the 1 Hz AC point.
    const std::string amp = fmt::format("level: {}, a0: {}, rout: 1e-6, gbw: 1g, sr: 1e6", level, a0);
    const RunResults r = run_yaml(inverting(g, amp, 1e-3, "{type: op}, {type: ac, variation: lin, points: 1, fstart: 1, fstop: 1}"));
    const Signal& h = sig(r.analyses[1], "v(out)");
    MESSAGE("level " << level << ": AC gain " << h.re[0] << ", exact " << exact);
    CHECK(h.re[0] == doctest::Approx(exact).epsilon(1e-7));
    CHECK(std::fabs(h.im[0]) < 1e-6);
    // DC at 1 mV in: tanh's cubic term is (10 mV / 15 V)^2 / 3 = 1.5e-7 relative.
    CHECK(op(r, "v(out)") == doctest::Approx(exact * 1e-3).epsilon(1e-6));
  }
}

TEST_CASE("opamp: ideal level gives exact gains") {
  const RunResults inv = run_yaml(inverting(7.5, "level: 0", 0.4, "{type: op}, {type: ac, variation: dec, points: 2, fstart: 1, fstop: 1g}"));
  CHECK(op(inv, "v(out)") == doctest::Approx(-3.0).epsilon(1e-14));
  CHECK(std::fabs(op(inv, "v(inn)")) < 1e-15);
  for (double re : sig(inv.analyses[1], "v(out)").re) CHECK(re == doctest::Approx(-7.5).epsilon(1e-14));
  // Non-inverting 1 + r2/r1 = 4; the output current is the branch unknown i(u1) [A], leaving out into the device.
  const RunResults non = run_yaml(R"(
devices:
  - {name: vin, type: v, nodes: [in, 0], dc: 0.25}
  - {name: r1, type: r, nodes: [inn, 0], r: 1k}
  - {name: r2, type: r, nodes: [inn, out], r: 3k}
  - {name: u1, type: opamp, nodes: [in, inn, out], level: 0, vos: 1}
analyses: [{type: op}]
)");
  CHECK(op(non, "v(out)") == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(op(non, "i(u1)") == doctest::Approx(-1.0 / 4e3).epsilon(1e-12));
}

TEST_CASE("opamp: unity follower bandwidth equals GBW") {
  for (const std::string amp : {"level: 2, gbw: 1meg", "model: opa1611", "model: opa1611, gbw: 10meg", "model: lm358"}) {
    CAPTURE(amp);
    const double gbw = amp == "model: opa1611" ? 40e6 : amp == "model: lm358" ? 0.7e6
                       : amp.find("10meg") != std::string::npos ? 10e6 : 1e6;
    const RunResults r = run_yaml(fmt::format(R"(
devices:
  - {{name: vin, type: v, nodes: [in, 0], dc: 0, ac: 1}}
  - {{name: u1, type: opamp, nodes: [in, out, out], {}}}
analyses: [{{type: ac, variation: dec, points: 200, fstart: 1k, fstop: 1g}}]
)", amp));
    const double f = f3db(r.analyses[0], "v(out)");
    MESSAGE(amp << ": follower -3 dB at " << f << " Hz, GBW " << gbw << " Hz");
    CHECK(f == doctest::Approx(gbw).epsilon(0.05));
  }
}

TEST_CASE("opamp: a large step at the follower input ramps at the slew rate") {
  for (const std::string amp : {"level: 2, sr: 1, gbw: 1meg", "model: lm358", "model: opa1611"}) {
    CAPTURE(amp);
    const double sr = amp == "model: lm358" ? 0.3e6 : amp == "model: opa1611" ? 27e6 : 1e6;
    const double tr = 4.0 / sr;  // the 4 V ramp takes this long [s]
    const RunResults r = run_yaml(fmt::format(R"(
devices:
  - {{name: vin, type: v, nodes: [in, 0], dc: -2, pulse: [-2, 2, {}, 1e-12, 1e-12, 1, 2]}}
  - {{name: u1, type: opamp, nodes: [in, out, out], {}}}
analyses: [{{type: tran, tstep: {}, tstop: {}}}]
)", 0.1 * tr, amp, tr / 400, 2 * tr));
    const AnalysisResult& a = r.analyses[0];
    const double slope = slew_20_80(a, "v(out)", -2, 2);
    MESSAGE(amp << ": dV/dt (20-80 %) " << slope << " V/s, SR " << sr << " V/s");
    CHECK(slope == doctest::Approx(sr).epsilon(0.05));
    CHECK(slope <= sr * 1.001);
    CHECK(sig(a, "v(out)").re.back() == doctest::Approx(2.0).epsilon(5e-3));  // lm358: vos = 3 mV
  }
}

TEST_CASE("opamp: the output clips at the rails minus headroom") {
  for (int level : {1, 2}) {
    for (const std::string p : {"[in, 0, out, vcc, vee]", "[in, 0, out]"}) {
      CAPTURE(level);
      CAPTURE(p);
      // +-12 V supplies (pins) or vpos/vneg parameters; headroom 1.5 V high, 0.5 V low: swing -11.5 .. 10.5 V.
      const RunResults r = run_yaml(fmt::format(R"(
devices:
  - {{name: vin, type: v, nodes: [in, 0], dc: 0}}
  - {{name: vcc, type: v, nodes: [vcc, 0], dc: 12}}
  - {{name: vee, type: v, nodes: [vee, 0], dc: -12}}
  - {{name: u1, type: opamp, nodes: {}, level: {}, vpos: 12, vneg: -12, headroom_hi: 1.5, headroom_lo: 0.5}}
  - {{name: rl, type: r, nodes: [out, 0], r: 1meg}}
analyses: [{{type: dc, source: vin, start: -1, stop: 1, step: 0.5}}]
)", p, level));
      const Signal& out = sig(r.analyses[0], "v(out)");
      MESSAGE("level " << level << " " << p << ": out " << out.re.front() << " .. " << out.re.back());
      CHECK(out.re.front() == doctest::Approx(-11.5).epsilon(1e-4));
      CHECK(out.re.back() == doctest::Approx(10.5).epsilon(1e-4));
    }
  }
}

TEST_CASE("opamp: input offset appears multiplied by the noise gain 1 + R2/R1") {
  for (int level : {1, 2}) {
    CAPTURE(level);
    const double g = 99, vos = 1e-3, a0 = 1e6;
    const RunResults r = run_yaml(inverting(g, fmt::format("level: {}, a0: {}, vos: {}, rout: 1e-6", level, a0, vos), 0.0,
                                            "{type: op}"));
    const double expect = vos * (1 + g) / (1 + (1 + g) / a0);
    MESSAGE("level " << level << ": out " << op(r, "v(out)") << " V, vos (1 + R2/R1) = " << vos * (1 + g));
    CHECK(op(r, "v(out)") == doctest::Approx(expect).epsilon(1e-5));
  }
}

TEST_CASE("opamp: bias currents, quiescent current and load current drawn from the supplies") {
  // Follower fed through 100 k: ib = 100 nA into each input shifts the output by -ib * 100 k = -10 mV.
  const RunResults r = run_yaml(R"(
devices:
  - {name: vin, type: v, nodes: [in, 0], dc: 1}
  - {name: rs, type: r, nodes: [in, inp], r: 100k}
  - {name: vcc, type: v, nodes: [vcc, 0], dc: 15}
  - {name: vee, type: v, nodes: [vee, 0], dc: -15}
  - {name: u1, type: opamp, nodes: [inp, out, out, vcc, vee], level: 2, ib: 100n, iq: 2m, a0: 1e9}
  - {name: rl, type: r, nodes: [out, 0], r: 1k}
analyses: [{type: op}]
)");
  const double out = op(r, "v(out)");
  CHECK(out == doctest::Approx(1 - 100e-9 * 100e3).epsilon(1e-6));
  // Sourcing: vcc delivers iq + the load current; vee returns iq.
  const double iload = out / 1e3 + 100e-9;  // into rl and the inverting input
  CHECK(-op(r, "i(vcc)") == doctest::Approx(2e-3 + iload).epsilon(1e-5));
  CHECK(op(r, "i(vee)") == doctest::Approx(2e-3).epsilon(1e-5));
}

TEST_CASE("opamp: CMRR adds the common-mode input over CMRR to the differential input") {
  // Follower at vin = 5 V, cmrr 60 dB: vd_eff = vin - out + (vin + out)/2 / 1000 = out / A0 -> out = vin (1 + 1e-3).
  const RunResults r = run_yaml(R"(
devices:
  - {name: vin, type: v, nodes: [in, 0], dc: 5}
  - {name: u1, type: opamp, nodes: [in, out, out], level: 2, cmrr: 60, a0: 1e9}
analyses: [{type: op}]
)");
  const double k = 1e-3;
  CHECK(op(r, "v(out)") == doctest::Approx(5 * (1 + k / 2) / (1 - k / 2)).epsilon(1e-7));
}

TEST_CASE("opamp: Newton converges with the output hard in saturation") {
  // Gain -100 asked for -100 V (levels 1, 2 and the uA741 part), an overdriven superdiode, a current-limited
  // short: each must converge from the zero initial guess in a modest number of iterations.
  struct Case {
    std::string text;
    std::string sig;
    double expect;
  };
  const Case cases[] = {
      {inverting(100, "level: 1", 1.0, "{type: op}"), "v(out)", -15.0},
      {inverting(100, "level: 2", 1.0, "{type: op}"), "v(out)", -15.0},
      {inverting(100, "model: ua741", -1.0, "{type: op}"), "v(out)", 14.0 - 75 * 14.0 / 100e3},
      {R"(
devices:
  - {name: vin, type: v, nodes: [in, 0], dc: -1}
  - {name: u1, type: opamp, nodes: [in, out, a], model: opa1611}
  - {name: d1, type: d, nodes: [a, out], model: dd}
  - {name: rl, type: r, nodes: [out, 0], r: 10k}
models: {dd: {type: d}}
analyses: [{type: op}]
)", "v(a)", -14.4},
      {R"(
devices:
  - {name: vin, type: v, nodes: [in, 0], dc: 1}
  - {name: u1, type: opamp, nodes: [in, 0, out], model: lm358}
  - {name: rl, type: r, nodes: [out, 0], r: 1}
analyses: [{type: op}]
)", "v(out)", 40e-3},  // the 40 mA current limit into 1 ohm
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const RunResults r = run_yaml(c.text);
    const long it = r.analyses[0].stats.newton_iterations;
    MESSAGE(c.sig << " = " << op(r, c.sig) << " after " << it << " Newton iterations");
    CHECK(it <= 40);
    CHECK(op(r, c.sig) == doctest::Approx(c.expect).epsilon(1e-4));
  }
}

TEST_CASE("opamp: netlist errors") {
  ParsedNetlist pn;
  FlatNetlist fn;
  auto elab = [&](const std::string& text) {
    pn = {};
    fn = {};
    Status st = parse_yaml_string(text, "bad.yaml", builtin_catalog(), pn);
    if (st) st = elaborate(pn, builtin_catalog(), fn);
    if (st) {
      RunResults r;
      st = simulate(fn, builtin_catalog(), r);
    }
    return st;
  };
  Status st = elab("devices: [{name: u1, type: opamp, nodes: [a, b, c], model: lm741}]");
  REQUIRE_FALSE(st.ok());
  CHECK(st.to_string().find("built-in: ua741, lm358, opa1611") != std::string::npos);
  st = elab("devices: [{name: v1, type: v, nodes: [a, 0], dc: 1}, {name: u1, type: opamp, nodes: [a, b, b, c]}]");
  REQUIRE_FALSE(st.ok());
  CHECK(st.to_string().find("needs 3 nodes") != std::string::npos);
  st = elab("devices: [{name: v1, type: v, nodes: [a, 0], dc: 1}, {name: u1, type: opamp, nodes: [a, b, b], level: 1.5}]");
  REQUIRE_FALSE(st.ok());
  CHECK(st.to_string().find("level must be 0, 1 or 2") != std::string::npos);
  // A user-defined op-amp model.
  st = elab(R"(
models: {myamp: {type: opamp, level: 1, a0: 50}}
devices:
  - {name: v1, type: v, nodes: [a, 0], dc: 0.1}
  - {name: u1, type: opamp, nodes: [a, b, b], model: myamp}
analyses: [{type: op}]
)");
  CHECK(st.ok());
}
