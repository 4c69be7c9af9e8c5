// Tests for devices/*.cpp: one small circuit per device, checked against analytic results with relative
// tolerances (resistor, capacitor, inductor, RLC, V/I sources and their time functions, E/G/F/H, diode).
#include <doctest/doctest.h>
#include <cmath>
#include <complex>
#include "tests/circuit_helpers.hpp"

using namespace anasim;
using namespace anasim::test;

namespace {

// Thermal voltage at 27 C with ngspice 39's constants [V] (the diode model's TNOM).
const double kVt = 1.38064852e-23 * 300.15 / 1.6021766208e-19;
constexpr double kGmin = 1e-12;  // [S] default .options gmin, which SPICE places across every junction

// Forward-region SPICE diode current at junction voltage vd (Shockley plus gmin) [A].
double diode_current(double vd, double is, double n) { return is * std::expm1(vd / (n * kVt)) + kGmin * vd; }

// Current through a diode with series resistance rs at a terminal voltage v, solved by bisection on the
// junction voltage: vj + rs * I(vj) = v.
double diode_current_rs(double v, double is, double n, double rs) {
  const double vj = bisect([&](double x) { return x + rs * diode_current(x, is, n) - v; }, std::min(v, 0.0),
                           std::max(v, 0.0));
  return diode_current(vj, is, n);
}

// Admittance seen by an AC source of magnitude 1 whose branch current is `i` (SPICE sign: into the + pin).
std::complex<double> admittance(const Signal& i, size_t row) { return -std::complex<double>(i.re[row], i.im[row]); }

}  // namespace

TEST_CASE("resistor: divider is exact in .op") {
  RunResults r = run_deck(R"(divider
V1 in 0 DC 10
R1 in out 1k
R2 out 0 3k
R3 out 0 6k
.op
.end
)");
  // R2 || R3 = 2k; v(out) = 10 * 2k / 3k.
  CHECK(op_value(r, 0, "v(out)") == doctest::Approx(20.0 / 3.0).epsilon(1e-12));
  CHECK(op_value(r, 0, "v(in)") == doctest::Approx(10.0).epsilon(1e-12));
  // The source delivers 10 V / 3k; SPICE's branch current flows into the + pin, so it is negative.
  CHECK(op_value(r, 0, "i(v1)") == doctest::Approx(-10.0 / 3000.0).epsilon(1e-12));
}

TEST_CASE("capacitor: RC step response follows 1 - exp(-t/RC)") {
  // uic: the capacitor starts discharged and the 1 V source steps on at t = 0.
  RunResults r = run_deck(R"(rc step
V1 in 0 DC 1
R1 in out 1k
C1 out 0 1u
.tran 10u 5m uic
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.sweep.size() > 50);
  CHECK(a.sweep.back() == doctest::Approx(5e-3).epsilon(1e-12));
  const double tau = 1e3 * 1e-6;
  const double err = max_abs_error(a, signal(r, 0, "v(out)"), [&](double t) { return 1 - std::exp(-t / tau); });
  INFO("max |v(out) - (1 - exp(-t/RC))| = " << err);
  CHECK(err < 1e-3);
}

TEST_CASE("capacitor: ic= with uic discharges as ic * exp(-t/RC)") {
  RunResults r = run_deck(R"(rc ic
C1 out 0 1u ic=2
R1 out 0 1k
.tran 10u 5m uic
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.sweep.size() > 50);
  const double tau = 1e-3;
  const double err =
      max_abs_error(a, signal(r, 0, "v(out)"), [&](double t) { return 2 * std::exp(-t / tau); }, 1e-15);
  INFO("max |v(out) - 2 exp(-t/RC)| for t > 0 = " << err);
  CHECK(err < 2e-3);
  // Charge flows from the capacitor through R1: after the first step v(out) is close to 2 V, not 0.
  CHECK(signal(r, 0, "v(out)").re.at(1) == doctest::Approx(2 * std::exp(-a.sweep.at(1) / tau)).epsilon(1e-3));
}

TEST_CASE("inductor: RL step current follows (1 - exp(-tR/L)) / R") {
  RunResults r = run_deck(R"(rl step
V1 in 0 DC 1
R1 in out 1k
L1 out 0 1m
.tran 10n 5u uic
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.sweep.size() > 50);
  const double tau = 1e-3 / 1e3, R = 1e3;
  const double ierr =
      max_abs_error(a, signal(r, 0, "i(l1)"), [&](double t) { return (1 - std::exp(-t / tau)) / R; });
  INFO("max |i(l1) - (1 - exp(-t/tau))/R| = " << ierr);
  CHECK(ierr < 1e-3 / R);
  // The inductor voltage v(out) = exp(-t/tau) (checked after t = 0, where uic starts from all-zero unknowns).
  const double verr = max_abs_error(a, signal(r, 0, "v(out)"), [&](double t) { return std::exp(-t / tau); }, 1e-15);
  INFO("max |v(out) - exp(-t/tau)| = " << verr);
  CHECK(verr < 1e-3);
}

TEST_CASE("inductor: ic= with uic decays as ic * exp(-tR/L)") {
  RunResults r = run_deck(R"(rl ic
L1 out 0 1m ic=1m
R1 out 0 1k
.tran 10n 5u uic
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.sweep.size() > 50);
  const double tau = 1e-6;
  // i(l1) flows from out through L1 to ground, so it returns through R1 and v(out) = -R * i(l1).
  const double ierr =
      max_abs_error(a, signal(r, 0, "i(l1)"), [&](double t) { return 1e-3 * std::exp(-t / tau); }, 1e-15);
  INFO("max |i(l1) - 1m exp(-t/tau)| for t > 0 = " << ierr);
  CHECK(ierr < 1e-3 * 1e-3);
  const double verr =
      max_abs_error(a, signal(r, 0, "v(out)"), [&](double t) { return -std::exp(-t / tau); }, 1e-15);
  CHECK(verr < 1e-3);
}

TEST_CASE("RLC series: underdamped step response has the analytic frequency and decay") {
  // R = 10, L = 1m, C = 1u: alpha = R/2L = 5000 /s, w0 = 1/sqrt(LC) = 31623 rad/s, wd = sqrt(w0^2 - alpha^2).
  RunResults r = run_deck(R"(rlc ringing
V1 in 0 DC 1
R1 in a 10
L1 a b 1m
C1 b 0 1u
.tran 0.2u 1m uic
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  const Signal& vc = signal(r, 0, "v(b)");
  const double alpha = 10.0 / (2 * 1e-3), w0 = 1.0 / std::sqrt(1e-3 * 1e-6);
  const double wd = std::sqrt(w0 * w0 - alpha * alpha);
  auto exact = [&](double t) { return 1 - std::exp(-alpha * t) * (std::cos(wd * t) + alpha / wd * std::sin(wd * t)); };
  const double err = max_abs_error(a, vc, exact);
  INFO("max |v(b) - analytic| = " << err);
  CHECK(err < 2e-3);

  // Frequency: zero crossings of v(b) - 1 fall at (k + 1/2) pi / wd - phi/wd; their spacing is pi / wd.
  std::vector<double> zeros;
  for (size_t k = 1; k < a.sweep.size(); ++k) {
    const double y0 = vc.re[k - 1] - 1, y1 = vc.re[k] - 1;
    if ((y0 < 0) != (y1 < 0) && k > 1)
      zeros.push_back(a.sweep[k - 1] - y0 * (a.sweep[k] - a.sweep[k - 1]) / (y1 - y0));
  }
  REQUIRE(zeros.size() >= 8);
  const double half_period = (zeros[7] - zeros[1]) / 6;
  CHECK(M_PI / half_period == doctest::Approx(wd).epsilon(1e-3));

  // Decay: the extrema of v(b) - 1 are at t_k = k pi / wd with magnitude exp(-alpha t_k) (times sqrt(1 +
  // (alpha/wd)^2) * cos(atan(alpha/wd)) = 1); the ratio of the 1st and 5th gives alpha.
  const double t1 = M_PI / wd, t5 = 5 * M_PI / wd;
  const double d1 = std::fabs(interp(a, vc, t1) - 1), d5 = std::fabs(interp(a, vc, t5) - 1);
  CHECK(std::log(d1 / d5) / (t5 - t1) == doctest::Approx(alpha).epsilon(1e-3));
}

TEST_CASE("sources: PULSE, SIN, EXP and PWL values across resistors in a transient") {
  RunResults r = run_deck(R"(time functions
V1 p1 0 PULSE(0 2 1u 0.5u 0.25u 1u 4u)
R1 p1 0 1k
V2 s2 0 SIN(0.5 1.5 250k 2u 1e5 30)
R2 s2 0 1k
V3 e3 0 EXP(-1 1 1u 0.5u 4u 1u)
R3 e3 0 1k
I4 0 w4 PWL(0 0 1u 1m 3u 1m 4u -2m 6u 0.5m)
R4 w4 0 1k
.tran 0.05u 10u
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  auto pulse = [](double t) {
    const double v1 = 0, v2 = 2, td = 1e-6, tr = 0.5e-6, tf = 0.25e-6, pw = 1e-6, per = 4e-6;
    if (t <= td) return v1;
    const double tt = std::fmod(t - td, per);
    if (tt < tr) return v1 + (v2 - v1) * tt / tr;
    if (tt <= tr + pw) return v2;
    if (tt < tr + pw + tf) return v2 + (v1 - v2) * (tt - tr - pw) / tf;
    return v1;
  };
  auto sine = [](double t) {
    const double vo = 0.5, va = 1.5, f = 250e3, td = 2e-6, theta = 1e5, ph = 30 * M_PI / 180;
    if (t <= td) return vo + va * std::sin(ph);
    return vo + va * std::exp(-(t - td) * theta) * std::sin(2 * M_PI * f * (t - td) + ph);
  };
  auto expo = [](double t) {
    const double v1 = -1, v2 = 1, td1 = 1e-6, tau1 = 0.5e-6, td2 = 4e-6, tau2 = 1e-6;
    double v = v1;
    if (t > td1) v += (v2 - v1) * (1 - std::exp(-(t - td1) / tau1));
    if (t > td2) v += (v1 - v2) * (1 - std::exp(-(t - td2) / tau2));
    return v;
  };
  auto pwl = [](double t) {  // current [A] into w4; v(w4) = 1k * I
    const double ts[] = {0, 1e-6, 3e-6, 4e-6, 6e-6}, is[] = {0, 1e-3, 1e-3, -2e-3, 0.5e-3};
    if (t >= ts[4]) return 1e3 * is[4];
    for (int k = 1; k < 5; ++k)
      if (t <= ts[k]) return 1e3 * (is[k - 1] + (is[k] - is[k - 1]) * (t - ts[k - 1]) / (ts[k] - ts[k - 1]));
    return 0.0;
  };
  CHECK(max_abs_error(a, signal(r, 0, "v(p1)"), pulse) < 1e-9);
  CHECK(max_abs_error(a, signal(r, 0, "v(s2)"), sine) < 1e-9);
  CHECK(max_abs_error(a, signal(r, 0, "v(e3)"), expo) < 1e-9);
  CHECK(max_abs_error(a, signal(r, 0, "v(w4)"), pwl) < 1e-9);

  // Every corner is a timepoint, with the exact corner value.
  struct Corner { const char* sig; double t, v; };
  const Corner corners[] = {
      {"v(p1)", 1e-6, 0}, {"v(p1)", 1.5e-6, 2}, {"v(p1)", 2.5e-6, 2}, {"v(p1)", 2.75e-6, 0},
      {"v(p1)", 5e-6, 0}, {"v(p1)", 5.5e-6, 2}, {"v(p1)", 6.5e-6, 2}, {"v(p1)", 6.75e-6, 0},
      {"v(p1)", 9e-6, 0}, {"v(p1)", 9.5e-6, 2},
      {"v(s2)", 2e-6, 0.5 + 1.5 * 0.5},
      {"v(e3)", 1e-6, -1}, {"v(e3)", 4e-6, expo(4e-6)},
      {"v(w4)", 1e-6, 1}, {"v(w4)", 3e-6, 1}, {"v(w4)", 4e-6, -2}, {"v(w4)", 6e-6, 0.5},
  };
  for (const auto& c : corners) {
    INFO(std::string(c.sig) << " at t = " << c.t);
    size_t k = 0;
    double best = INFINITY;
    for (size_t j = 0; j < a.sweep.size(); ++j)
      if (std::fabs(a.sweep[j] - c.t) < best) best = std::fabs(a.sweep[j] - c.t), k = j;
    CHECK(best <= 1e-12 * c.t);
    CHECK(signal(r, 0, c.sig).re[k] == doctest::Approx(c.v).epsilon(1e-9).scale(1.0));
  }
}

TEST_CASE("sources: AC magnitude and phase") {
  RunResults r = run_deck(R"(ac sources
V1 in 0 DC 0 AC 2 30
R1 in 0 1k
I2 0 n AC 1m -60
R2 n 0 2k
.ac lin 3 1k 3k
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.rows() == 3);
  const std::complex<double> v1 = std::polar(2.0, 30 * M_PI / 180), vn = std::polar(2.0, -60 * M_PI / 180);
  for (int k = 0; k < 3; ++k) {
    const Signal& in = signal(r, 0, "v(in)");
    const Signal& n = signal(r, 0, "v(n)");
    const Signal& i1 = signal(r, 0, "i(v1)");
    CHECK(std::abs(std::complex<double>(in.re[k], in.im[k]) - v1) < 1e-12);
    CHECK(std::abs(std::complex<double>(n.re[k], n.im[k]) - vn) < 1e-12);
    CHECK(std::abs(std::complex<double>(i1.re[k], i1.im[k]) + v1 / 1e3) < 1e-15);
  }
}

TEST_CASE("controlled sources: E, G, F, H gains are exact in .op") {
  RunResults r = run_deck(R"(controlled
V1 a 0 DC 2
Ra a 0 1k
Vs a s DC 0
Rs s 0 1k
E1 b 0 a 0 3
Rb b 0 1k
G1 0 c a 0 2m
Rc c 0 1k
F1 0 d vs 5
Rd d 0 1k
H1 e 0 vs 100
Re e 0 1k
.op
.end
)");
  // i(vs) = 2 V / 1k = 2 mA.
  CHECK(op_value(r, 0, "i(vs)") == doctest::Approx(2e-3).epsilon(1e-12));
  CHECK(op_value(r, 0, "v(b)") == doctest::Approx(6.0).epsilon(1e-12));     // E: 3 * 2 V
  CHECK(op_value(r, 0, "v(c)") == doctest::Approx(4.0).epsilon(1e-12));     // G: 2m * 2 V into c, * 1k
  CHECK(op_value(r, 0, "v(d)") == doctest::Approx(10.0).epsilon(1e-12));    // F: 5 * 2 mA into d, * 1k
  CHECK(op_value(r, 0, "v(e)") == doctest::Approx(0.2).epsilon(1e-12));     // H: 100 ohm * 2 mA
  CHECK(op_value(r, 0, "i(e1)") == doctest::Approx(-6e-3).epsilon(1e-12));  // E1 drives Rb
}

TEST_CASE("diode: forward I-V follows Shockley with N and RS") {
  struct Model { const char* card; double is, n, rs; };
  const Model models[] = {
      {".model dm d is=1e-14", 1e-14, 1.0, 0.0},
      {".model dm d is=2e-13 n=1.7", 2e-13, 1.7, 0.0},
      {".model dm d is=1e-12 n=1.5 rs=10", 1e-12, 1.5, 10.0},
      {".model dm d is=5e-15 n=2 rs=0.5", 5e-15, 2.0, 0.5},
  };
  for (const auto& m : models) {
    INFO(std::string(m.card));
    RunResults r = run_deck(std::string("diode iv\nV1 a 0 DC 0\nD1 a 0 dm\n") + m.card +
                            "\n.dc v1 0.1 0.9 0.1\n.end\n");
    const AnalysisResult& a = r.analyses.at(0);
    REQUIRE(a.rows() == 9);
    const Signal& i = signal(r, 0, "i(v1)");
    for (int k = 0; k < a.rows(); ++k) {
      const double v = a.sweep[k];
      INFO("v = " << v);
      CHECK(-i.re[k] == doctest::Approx(diode_current_rs(v, m.is, m.n, m.rs)).epsilon(1e-6));
    }
  }
}

TEST_CASE("diode: reverse current and breakdown") {
  // Below breakdown the reverse current saturates at -IS (SPICE adds gmin across the junction).
  RunResults r = run_deck(R"(diode reverse
V1 a 0 DC -2
D1 a 0 dm
.model dm d is=1e-10 bv=5 ibv=1m
.dc v1 -2 -1 1
.end
)");
  const Signal& i = signal(r, 0, "i(v1)");
  CHECK(-i.re[0] == doctest::Approx(-(1e-10 + kGmin * 2)).epsilon(1e-4));
  CHECK(-i.re[1] == doctest::Approx(-(1e-10 + kGmin * 1)).epsilon(1e-4));

  // At -BV the current is IBV (BV is adjusted so that it is); beyond, it grows with slope 1/(N Vt).
  RunResults r2 = run_deck(R"(diode at bv
V1 a 0 DC -5
D1 a 0 dm
.model dm d is=1e-14 bv=5 ibv=1m
.op
.end
)");
  CHECK(op_value(r2, 0, "i(v1)") == doctest::Approx(1e-3).epsilon(2e-3));

  RunResults r3 = run_deck(R"(zener regulator
V1 in 0 DC -10
R1 in a 1k
D1 a 0 dm
.model dm d is=1e-14 bv=5 ibv=1m
.op
.end
)");
  const double va = op_value(r3, 0, "v(a)");
  // Solve (10 + v) / 1k = IBV exp((-v - BV) / Vt) for the regulated voltage v.
  const double expect =
      bisect([](double v) { return (10 + v) / 1e3 - 1e-3 * std::exp((-v - 5) / kVt); }, -10.0, -5.0);
  CHECK(va == doctest::Approx(expect).epsilon(1e-4));
  CHECK(va < -5.0);
}

TEST_CASE("diode: junction capacitance from the AC admittance at reverse bias") {
  // C = CJO / (1 - V/VJ)^M, read from Im(Y) / omega at 1 MHz.
  for (double vr : {0.5, 3.0}) {
    INFO("reverse bias " << vr << " V");
    RunResults r = run_deck("diode cj\nV1 k 0 DC " + std::to_string(vr) +
                            " AC 1\nD1 0 k dm\n.model dm d is=1e-14 cjo=2p vj=0.7 m=0.4\n.ac lin 1 1meg 1meg\n.end\n");
    const std::complex<double> y = admittance(signal(r, 0, "i(v1)"), 0);
    const double c = y.imag() / (2 * M_PI * 1e6);
    CHECK(c == doctest::Approx(2e-12 / std::pow(1 + vr / 0.7, 0.4)).epsilon(1e-6));
  }
}

TEST_CASE("diode: transit-time (diffusion) capacitance TT * gd in forward bias") {
  RunResults r = run_deck(R"(diode tt
V1 a 0 DC 0.6 AC 1
D1 a 0 dm
.model dm d is=1e-14 tt=10n
.ac lin 1 1meg 1meg
.end
)");
  const std::complex<double> y = admittance(signal(r, 0, "i(v1)"), 0);
  const double gd = 1e-14 / kVt * std::exp(0.6 / kVt);
  CHECK(y.real() == doctest::Approx(gd + kGmin).epsilon(1e-6));
  CHECK(y.imag() / (2 * M_PI * 1e6) == doctest::Approx(10e-9 * gd).epsilon(1e-6));
}
