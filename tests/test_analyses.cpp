// Tests for the analysis drivers and numerical core (engine/an_*.cpp, newton.cpp, integrator.cpp): solver
// statistics of linear circuits, DC sweep order, transient accuracy per integration method, LU reuse,
// breakpoints, AC frequency grids, operating-point continuation, and how singular or non-convergent
// circuits are reported.
#include <doctest/doctest.h>
#include <cmath>
#include <complex>
#include <cstdio>
#include <regex>
#include <fmt/format.h>
#include "engine/integrator.hpp"
#include "tests/circuit_helpers.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
using namespace anasim::test;

namespace {

const double kVt = 1.38064852e-23 * 300.15 / 1.6021766208e-19;  // [V] at 27 C (ngspice constants)

// RC low-pass (R = 1k, C = 1u, tau = 1 ms) driven by a 1 V step at t = 0 (1 ns rise); `extra` adds cards.
std::string rc_step_deck(const std::string& extra) {
  return "rc step\nV1 in 0 PULSE(0 1 0 1n 1n 1 2)\nR1 in out 1k\nC1 out 0 1u\n" + extra + "\n.end\n";
}

// Step response of the RC low-pass to the PULSE above: a 1 ns ramp, then exponential approach to 1 V.
double rc_step_exact(double t) {
  const double tau = 1e-3, tr = 1e-9;
  if (t <= tr) return t / tr - tau / tr * (1 - std::exp(-t / tau));
  const double v_tr = 1 - tau / tr * (1 - std::exp(-tr / tau));
  return 1 - (1 - v_tr) * std::exp(-(t - tr) / tau);
}

using test_support::contains;

// True if a message refers to the matrix by a bare index ("unknown 3", "row 2", "column #1", "an unknown").
bool names_an_index(const std::string& msg) {
  static const std::regex bare(R"((unknown|row|column|col|index)\s*#?\d|an unknown\b)", std::regex::icase);
  return std::regex_search(msg, bare);
}

}  // namespace

TEST_CASE(".op of a linear circuit is one factorization and one solve") {
  RunResults r = run_deck(R"(linear op
V1 in 0 DC 12
R1 in a 2k
R2 a 0 2k
R3 a b 1k
R4 b 0 3k
I1 0 b 1m
.op
.end
)");
  const SolverStats& s = r.analyses.at(0).stats;
  CHECK(s.factorizations == 1);
  CHECK(s.refactorizations == 0);
  CHECK(s.solves == 1);
  CHECK(s.newton_iterations == 1);
  CHECK(s.timepoints == 1);
  // Nodal analysis by hand: (va-12)/2k + va/2k + (va-vb)/1k = 0, (vb-va)/1k + vb/3k = 1m.
  // => 2 va - vb = 6, -3 va + 4 vb = 3 => va = 27/5, vb = 24/5.
  CHECK(op_value(r, 0, "v(a)") == doctest::Approx(27.0 / 5).epsilon(1e-12));
  CHECK(op_value(r, 0, "v(b)") == doctest::Approx(24.0 / 5).epsilon(1e-12));
}

TEST_CASE(".dc sweep of a divider matches the linear formula at every point") {
  RunResults r = run_deck(R"(dc divider
V1 in 0 DC 0
R1 in out 1k
R2 out 0 3k
.dc v1 -2 3 0.25
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.rows() == 21);
  CHECK(a.sweep_name == "v1");
  CHECK(a.stats.timepoints == 21);
  const Signal& out = signal(r, 0, "v(out)");
  for (int k = 0; k < a.rows(); ++k) {
    CHECK(a.sweep[k] == doctest::Approx(-2 + 0.25 * k).epsilon(1e-12).scale(1.0));
    CHECK(out.re[k] == doctest::Approx(0.75 * a.sweep[k]).epsilon(1e-12).scale(1e-12));
  }
  CHECK(a.sweep.back() == doctest::Approx(3.0).epsilon(1e-12));
}

TEST_CASE(".dc nested sweep: the first source varies fastest") {
  // v(out) = (v(a) + v(b)) / 3 for three equal resistors meeting at out.
  RunResults r = run_deck(R"(nested dc
V1 a 0 DC 0
V2 b 0 DC 0
R1 a out 1k
R2 b out 1k
R3 out 0 1k
.dc v1 0 2 1 v2 -1 1 0.5
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.rows() == 3 * 5);
  REQUIRE(a.sweep2.size() == 15u);
  CHECK(a.sweep_name == "v1");
  CHECK(a.sweep2_name == "v2");
  const Signal& out = signal(r, 0, "v(out)");
  const Signal& vb = signal(r, 0, "v(b)");
  for (int k = 0; k < 15; ++k) {
    const double v1 = k % 3, v2 = -1 + 0.5 * (k / 3);
    INFO("row " << k);
    CHECK(a.sweep[k] == doctest::Approx(v1).scale(1.0));
    CHECK(a.sweep2[k] == doctest::Approx(v2).scale(1.0));
    CHECK(vb.re[k] == doctest::Approx(v2).scale(1.0));
    CHECK(out.re[k] == doctest::Approx((v1 + v2) / 3).epsilon(1e-12).scale(1.0));
  }
}

TEST_CASE(".dc sweep: a point that fails from the previous one is reached in halved steps") {
  // i(b1) = sqrt(v(x) + 1) - v(a) = 0 gives v(x) = v(a)^2 - 1. Newton from the solution at v(a) = 10 (y = v(x) + 1
  // = 100) toward v(a) = 4 lands at y = 2 v(a) sqrt(y) - y = -20, where sqrt is undefined; gmin stepping (its
  // first step lands at negative y for any shunt) and source stepping (y = -1 at zero sources) fail as well.
  // Half the step (10 -> 7 -> 4) stays in the domain. Only the requested points are recorded.
  RunResults r = run_deck(R"(dc sweep step halving
va a 0 10
b1 x 0 i=sqrt(v(x)+1)-v(a)
.dc va 10 4 -6
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  REQUIRE(a.rows() == 2);
  CHECK(a.sweep == std::vector<double>{10, 4});
  const Signal& x = signal(r, 0, "v(x)");
  CHECK(x.re[0] == doctest::Approx(99).epsilon(1e-6));
  CHECK(x.re[1] == doctest::Approx(15).epsilon(1e-6));

  // No solution at v(a) < 0 (a square root is not negative): halving approaches 0 and gives up after ten
  // halvings with the direct attempt's located error.
  RunResults bad;
  const Status st = run_deck_status("no solution below 0\nva a 0 10\nb1 x 0 i=sqrt(v(x)+1)-v(a)\n.dc va 10 -4 -14\n"
                                    ".end\n", bad);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "dc sweep at va = -4"));
  CHECK(contains(st.to_string(), "sqrt of a negative argument"));
}

TEST_CASE(".tran of a linear RC with a fixed maximum step reuses the LU factorization") {
  // tmax = 5 us is far below what the LTE allows for tau = 1 ms, so after the 1 ns edge the step settles at
  // tmax and the matrix stops changing: most timepoints need neither a factorization nor a refactorization.
  RunResults r = run_deck(rc_step_deck(".tran 5u 2m 0 5u"));
  const AnalysisResult& a = r.analyses.at(0);
  const SolverStats& s = a.stats;
  INFO("timepoints " << s.timepoints << ", factorizations " << s.factorizations << ", refactorizations "
                     << s.refactorizations << ", solves " << s.solves << ", rejected " << s.rejected);
  CHECK(s.timepoints >= 400);
  CHECK(s.timepoints == static_cast<long>(a.sweep.size()) - 1);  // the t = 0 row is the operating point
  CHECK(s.solves >= s.timepoints);
  CHECK(s.factorizations + s.refactorizations < s.timepoints / 10);
  CHECK(max_abs_error(a, signal(r, 0, "v(out)"), rc_step_exact) < 1e-4);
}

TEST_CASE(".tran of a linear circuit finds the matrices it factored before") {
  // After every breakpoint of the periodic pulse the step control repeats the same steps (a tenth of the distance,
  // doubling up to tmax), so the same few matrices come back 80 times: each is factored once (NewtonSolver keeps
  // the factorizations of a linear circuit's transient). Without that: 885 factorizations for 4,805 points.
  RunResults r = run_deck(
      "rc driven by a periodic pulse\nv1 in 0 PULSE(0 1 0 1n 1n 0.5u 1u)\nr1 in out 1k\nc1 out 0 10n\n"
      ".tran 10n 40u\n.end\n");
  const AnalysisResult& a = r.analyses.at(0);
  const SolverStats& s = a.stats;
  INFO("timepoints " << s.timepoints << ", factorizations " << s.factorizations << ", refactorizations "
                     << s.refactorizations);
  CHECK(s.timepoints >= 4000);
  CHECK(s.factorizations + s.refactorizations <= s.timepoints / 20);
  // The RC (tau = 10 us) averages the 50% duty pulse: v(out) climbs toward 0.5 V.
  const Signal& out = signal(r, 0, "v(out)");
  CHECK(out.re.back() > 0.45);
  CHECK(out.re.back() < 0.55);
}

TEST_CASE(".tran of a linear circuit: right-hand-side-only steps give the full loads' waveforms bit for bit") {
  // Every device here splits its stamps (Device::rhs_split), so a step at a companion coefficient the solver has
  // factored before loads only the right-hand side. With power probes every load goes through the meter, in full:
  // the waveforms must not differ in a single bit.
  const std::string deck =
      "linear devices of every kind\nv1 in 0 PULSE(0 1 0 1n 1n 0.5u 1u)\ni1 0 b SIN(0 1m 3meg)\n"
      "r1 in a 1k\nc1 a 0 10n\nl1 a b 10u\nr2 b 0 200\nc2 b 0 1n\ne1 e 0 a 0 2\nr3 e 0 1k\n"
      "g1 0 g a b 1m\nr4 g 0 1k\nvs b s 0\nr5 s 0 1e6\nf1 0 f vs 3\nr6 f 0 1k\nh1 h 0 vs 100\nr7 h 0 1k\n"
      ".tran 10n 5u\n";
  RunResults split = run_deck(deck + ".end\n");
  RunResults full = run_deck(deck + ".options power\n.end\n");
  const AnalysisResult &a = split.analyses.at(0), &b = full.analyses.at(0);
  REQUIRE(a.stats.timepoints > 500);
  CHECK(a.stats.timepoints == b.stats.timepoints);
  CHECK(a.sweep == b.sweep);
  int compared = 0;
  for (const Signal& sg : a.signals) {
    const Signal* other = b.find(sg.name);
    REQUIRE(other);
    INFO(sg.name);
    CHECK(sg.re == other->re);
    ++compared;
  }
  CHECK(compared >= 10);
}

TEST_CASE("Predictor extrapolates the solution linearly from the last two accepted timepoints") {
  Predictor p(3);
  p.accept({1.0, -2.0, 0.0}, 0.0);  // initial point: no older one to extrapolate from
  std::vector<double> x;
  p.predict(1e-6, x);
  CHECK(x == std::vector<double>{1.0, -2.0, 0.0});
  p.accept({2.0, -1.0, 0.0}, 1e-6);  // x(t) = x0 + t / 1 us
  p.predict(0.5e-6, x);
  CHECK(x[0] == doctest::Approx(2.5));
  CHECK(x[1] == doctest::Approx(-0.5));
  CHECK(x[2] == 0.0);
  CHECK(p.last() == std::vector<double>{2.0, -1.0, 0.0});
  p.accept({7.0, 7.0, 0.0}, 0.0);  // a restart forgets the older point
  p.predict(1e-6, x);
  CHECK(x == std::vector<double>{7.0, 7.0, 0.0});
}

TEST_CASE(".tran of a diode rectifier takes about two Newton iterations per timestep (predictor)") {
  // Without the predictor (Newton starting from the previous timepoint's solution) this took 2.17 per step; ngspice
  // takes 2.0 on the same deck.
  RunResults r = run_deck(R"(half-wave rectifier
.model dr d(is=2.5e-9 n=1.75 rs=0.05 cjo=40p vj=0.6 m=0.45 tt=4u)
vs in 0 sin(0 10 50)
d1 in out dr
rl out 0 500
cl out 0 100u
.tran 50u 40m 0 10u
.end
)");
  const SolverStats& s = r.analyses.at(0).stats;
  const double per_step = static_cast<double>(s.newton_iterations) / (s.timepoints + s.rejected);
  INFO("timepoints " << s.timepoints << ", rejected " << s.rejected << ", newton " << s.newton_iterations);
  CHECK(s.timepoints > 4000);
  CHECK(per_step < 2.08);
}

// Options::lureuse: a nonlinear circuit's Newton solves with the factors of an earlier iteration's matrix as GMRES's
// preconditioner (engine/krylov.hpp). Forced here on a small circuit (a diode clamping an RC line driven by a sine):
// the operating point and the waveforms equal those of a factorization per iteration (the GMRES solutions are within
// 1e-10 of a direct solve's, far inside Newton's tolerances), with fewer factorizations.
TEST_CASE(".options lureuse: Newton solves with earlier factors give the factored solves' operating point and waveforms") {
  std::string deck =
      "diode-clamped RC line\n.model dc d(is=1e-14 n=1.2 cjo=5p)\nvs in 0 sin(0.4 3 100k)\nrs in n0 200\n";
  for (int k = 0; k < 60; ++k) deck += fmt::format("r{0} n{0} n{1} 50\nc{0} n{1} 0 20p\n", k, k + 1);
  deck += "d1 n60 0 dc\nd2 0 n30 dc\nrl n60 0 10k\n.op\n.tran 20n 30u\n";
  RunResults direct = run_deck(deck + ".options lureuse=0\n.end\n");
  RunResults reuse = run_deck(deck + ".options lureuse=10\n.end\n");
  // UMFPACK's factors, applied in single precision as GMRES's preconditioner (krylov.hpp, kSinglePrecisionTol).
  RunResults single = run_deck(deck + ".options lureuse=10 solver=umfpack\n.end\n");
  const SolverStats &sd = direct.analyses.at(1).stats, &sr = reuse.analyses.at(1).stats;
  INFO("direct: timepoints " << sd.timepoints << ", factorizations " << sd.factorizations << " + "
                             << sd.refactorizations << "; reuse: timepoints "
                             << sr.timepoints << ", factorizations " << sr.factorizations << " + "
                             << sr.refactorizations << ", reuses "
                             << sr.lu_reuses << ", gmres iterations " << sr.gmres_iterations);
  CHECK(sd.lu_reuses == 0);
  CHECK(sr.lu_reuses > sr.timepoints / 2);
  CHECK(sr.factorizations + sr.refactorizations < (sd.factorizations + sd.refactorizations) / 2);
  CHECK(sr.timepoints == sd.timepoints);
  // GMRES starts from the last Newton iterate and resolves only the step: 4.6 iterations per solve (11.5 from 0).
  CHECK(sr.gmres_iterations <= 6 * sr.lu_reuses);
  CHECK(reuse.analyses.at(0).stats.lu_reuses > 0);
  const SolverStats& ss = single.analyses.at(1).stats;
  CHECK(ss.multifrontal);
  CHECK(ss.lu_reuses > ss.timepoints / 2);
  CHECK(ss.gmres_iterations <= 6 * ss.lu_reuses);
  for (const RunResults* r : {&reuse, &single})
    for (const char* name : {"v(n30)", "v(n60)", "i(vs)"}) {
      INFO(name << (r == &single ? " (UMFPACK, single-precision preconditioner)" : ""));
      CHECK(std::fabs(op_value(*r, 0, name) - op_value(direct, 0, name)) <=
            1e-9 * std::fabs(op_value(direct, 0, name)));
      const Signal &a = signal(direct, 1, name), &b = signal(*r, 1, name);
      REQUIRE(a.re.size() == b.re.size());
      double range = 0, diff = 0;
      for (size_t i = 0; i < a.re.size(); ++i) {
        range = std::max(range, std::fabs(a.re[i]));
        diff = std::max(diff, std::fabs(a.re[i] - b.re[i]));
      }
      CHECK(diff <= 1e-8 * range);
    }
}

// The variable-step BDF of orders 3..5 (Integrator, Gear above order 2): its derivative is exact on polynomials
// up to its order on an uneven grid, and on y' = -y / tau its error falls as h^k; the rate error that sizes its
// steps in the network transient (bdf_rate_error) has its leading term z^k / (k + 1).
TEST_CASE("integrator: variable-step BDF of orders 3 to 5") {
  for (int k = 3; k <= Integrator::kMaxOrder; ++k) {
    INFO("order " << k);
    // q(t) = polynomial of degree k on the times 0, 1, 2.5, 3, 4.5, 5, 6.2 (steps 1, 1.5, 0.5, 1.5, 0.5, 1.2).
    auto poly = [k](double t) {
      double p = 0.3;
      for (int d = 1; d <= k; ++d) p += std::pow(-0.7, d) * std::pow(t, d) / d;
      return p;
    };
    auto dpoly = [k](double t) {
      double p = 0;
      for (int d = 1; d <= k; ++d) p += std::pow(-0.7, d) * std::pow(t, d - 1);
      return p;
    };
    const std::vector<double> times = {0, 1, 2.5, 3, 4.5, 5, 6.2};
    Integrator integ(1, k);
    LoadContext ctx;
    ctx.mode = LoadContext::Mode::Tran;
    ctx.q = integ.q0().data();
    ctx.q[0] = poly(0);
    integ.start_from_dc(ctx);
    for (size_t i = 1; i < times.size(); ++i) {
      integ.prepare(ctx, Integration::Gear, std::min<int>(k, static_cast<int>(i)), times[i] - times[i - 1]);
      ctx.q[0] = poly(times[i]);
      if (static_cast<int>(i) >= k)
        CHECK(ctx.ag0 * ctx.q[0] + ctx.hist[0] == doctest::Approx(dpoly(times[i])).epsilon(1e-10));
      integ.finish(ctx);
      integ.accept();
    }
    // y' = -y, y(0) = 1 to t = 2, the history from the exact solution: the error at t = 2 falls as h^k.
    double err[2];
    for (int r = 0; r < 2; ++r) {
      const double h = r == 0 ? 0.1 : 0.05;
      Integrator in(1, k);
      LoadContext c;
      c.mode = LoadContext::Mode::Tran;
      c.q = in.q0().data();
      c.q[0] = std::exp((k - 1) * h);
      in.start_from_dc(c);
      for (int j = k - 2; j >= 0; --j) {  // exact history at -(k - 1) h ... 0
        in.prepare(c, Integration::Gear, 1, h);
        c.q[0] = std::exp(j * h);
        in.finish(c);
        in.accept();
      }
      const int n = static_cast<int>(std::lround(2 / h));
      for (int j = 1; j <= n; ++j) {
        in.prepare(c, Integration::Gear, k, h);
        c.q[0] = -c.hist[0] / (c.ag0 + 1);  // ag0 q + hist = -q
        in.finish(c);
        in.accept();
      }
      err[r] = std::fabs(in.q0()[0] - std::exp(-2.0));
    }
    INFO("error at h 0.1 / 0.05: " << err[0] << " / " << err[1]);
    CHECK(err[0] / err[1] == doctest::Approx(std::pow(2.0, k)).epsilon(0.25));
    // The rate error: leading term z^k / (k + 1), and its inverse.
    CHECK(bdf_rate_error(k, 1e-2) == doctest::Approx(std::pow(1e-2, k) / (k + 1)).epsilon(0.05));
    const double z = bdf_step_for_rate_error(k, 5e-4);
    CHECK(bdf_rate_error(k, z) == doctest::Approx(5e-4).epsilon(1e-6));
  }
  // Backward Euler's rate error in closed form: R = 1 / (1 + z).
  CHECK(bdf_rate_error(1, 0.2) == doctest::Approx(1 - std::log(1.2) / 0.2).epsilon(1e-9));
}

TEST_CASE(".tran integration methods converge to the analytic RC response; euler is the least accurate") {
  // Max error over all timepoints for each method at two maximum steps (tmax = 20 us and 5 us, tau = 1 ms).
  const char* methods[3] = {"trap", "gear", "euler"};
  double err[3][2];
  for (int m = 0; m < 3; ++m) {
    for (int k = 0; k < 2; ++k) {
      const char* tran = k == 0 ? ".tran 20u 3m 0 20u" : ".tran 5u 3m 0 5u";
      INFO(std::string(methods[m]) << " " << std::string(tran));
      RunResults r = run_deck(rc_step_deck(std::string(".options method=") + methods[m] + "\n" + tran));
      err[m][k] = max_abs_error(r.analyses.at(0), signal(r, 0, "v(out)"), rc_step_exact);
    }
  }
  INFO("max error at tmax 20u / 5u: trap " << err[0][0] << " / " << err[0][1] << ", gear " << err[1][0] << " / "
                                          << err[1][1] << ", euler " << err[2][0] << " / " << err[2][1]);
  // Every method converges: a 4x smaller step gives a clearly smaller error, and all are accurate at 5 us.
  for (int m = 0; m < 3; ++m) {
    CHECK(err[m][1] < 0.5 * err[m][0]);
    CHECK(err[m][1] < 1e-3);
  }
  // Second-order methods are accurate already at 20 us; backward Euler (first order) is not.
  CHECK(err[0][0] < 1e-4);
  CHECK(err[1][0] < 1e-4);
  CHECK(err[2][0] > 10 * err[0][0]);
  CHECK(err[2][0] > 10 * err[1][0]);
  // Trapezoidal and Gear-2 errors scale like h^2 (16x for a 4x smaller step), backward Euler's like h.
  CHECK(err[0][0] / err[0][1] > 8.0);
  CHECK(err[1][0] / err[1][1] > 8.0);
  // Backward Euler's error scales like h: roughly 4x smaller for a 4x smaller step.
  CHECK(err[2][0] / err[2][1] > 3.0);
}

TEST_CASE(".tran hits PULSE corners exactly") {
  // Times are multiples of u = 2^-20 s (td = 1.25u, tr = 0.75u, pw = 2.5u, tf = 0.5u, per = 10u), so every
  // corner is exactly representable and does not depend on the order of the additions.
  RunResults r = run_deck(R"(pulse corners
V1 in 0 PULSE(0 1 1.1920928955078125e-06 7.152557373046875e-07 4.76837158203125e-07 2.384185791015625e-06 9.5367431640625e-06)
R1 in out 1k
C1 out 0 1n
.tran 0.1u 20u
.end
)");
  const AnalysisResult& a = r.analyses.at(0);
  const double u = std::ldexp(1.0, -20);
  const double td = 1.25 * u, tr = 0.75 * u, tf = 0.5 * u, pw = 2.5 * u, per = 10 * u;
  const double corners[] = {td, td + tr, td + tr + pw, td + tr + pw + tf, td + per, td + per + tr};
  const Signal& in = signal(r, 0, "v(in)");
  for (double c : corners) {
    INFO("corner t = " << c);
    double nearest = INFINITY;
    size_t k = 0;
    for (size_t j = 0; j < a.sweep.size(); ++j)
      if (std::fabs(a.sweep[j] - c) < std::fabs(nearest - c)) nearest = a.sweep[j], k = j;
    char buf[96];
    std::snprintf(buf, sizeof buf, "nearest timepoint %.17g, corner %.17g", nearest, c);
    INFO(std::string(buf));
    CHECK(nearest == c);  // bit-exact
    const double expect = (c == td || c == td + tr + pw + tf || c == td + per) ? 0.0 : 1.0;
    CHECK(in.re[k] == doctest::Approx(expect).scale(1.0).epsilon(1e-12));
  }
  // Timepoints increase strictly.
  for (size_t j = 1; j < a.sweep.size(); ++j) CHECK(a.sweep[j] > a.sweep[j - 1]);
}

TEST_CASE(".ac RC low-pass: |H| = 1/sqrt(2) and -45 degrees at 1/(2 pi RC)") {
  const double fc = 1.0 / (2 * M_PI * 1e3 * 1e-6);
  char card[128];
  std::snprintf(card, sizeof card, ".ac lin 1 %.17g %.17g", fc, fc);
  RunResults r = run_deck(std::string("rc lowpass\nV1 in 0 DC 0 AC 1\nR1 in out 1k\nC1 out 0 1u\n") + card +
                          "\n.ac dec 7 1 100k\n.end\n");
  const Signal& out = signal(r, 0, "v(out)");
  REQUIRE(out.re.size() == 1u);
  const std::complex<double> h(out.re[0], out.im[0]);
  CHECK(std::abs(h) == doctest::Approx(1 / std::sqrt(2.0)).epsilon(1e-3));
  CHECK(std::arg(h) * 180 / M_PI == doctest::Approx(-45.0).epsilon(1e-3));
  // Over a whole decade sweep H = 1 / (1 + j f/fc) at every point.
  const AnalysisResult& a = r.analyses.at(1);
  const Signal& o2 = signal(r, 1, "v(out)");
  for (int k = 0; k < a.rows(); ++k) {
    const std::complex<double> exact = 1.0 / std::complex<double>(1.0, a.sweep[k] / fc);
    CHECK(std::abs(std::complex<double>(o2.re[k], o2.im[k]) - exact) < 1e-9);
  }
}

TEST_CASE(".ac dec/oct/lin point counts follow SPICE") {
  RunResults r = run_deck(R"(ac grids
V1 in 0 DC 0 AC 1
R1 in 0 1k
.ac dec 10 1 1k
.ac oct 4 1 16
.ac lin 5 1 5
.ac dec 5 10 5k
.ac lin 1 50 50
.end
)");
  REQUIRE(r.analyses.size() == 5u);
  // dec: `points` per decade, start and stop included when stop is on the grid.
  const auto& d = r.analyses[0].sweep;
  REQUIRE(d.size() == 31u);
  for (size_t k = 0; k < d.size(); ++k) CHECK(d[k] == doctest::Approx(std::pow(10.0, k / 10.0)).epsilon(1e-12));
  // oct: points per octave.
  const auto& o = r.analyses[1].sweep;
  REQUIRE(o.size() == 17u);
  for (size_t k = 0; k < o.size(); ++k) CHECK(o[k] == doctest::Approx(std::pow(2.0, k / 4.0)).epsilon(1e-12));
  // lin: `points` in total, evenly spaced, both ends included.
  const auto& l = r.analyses[2].sweep;
  REQUIRE(l.size() == 5u);
  for (size_t k = 0; k < l.size(); ++k) CHECK(l[k] == doctest::Approx(1.0 + k).epsilon(1e-12));
  // dec with stop off the grid: the grid runs up to the last point not above stop (10 .. 3981, 14 points).
  const auto& d2 = r.analyses[3].sweep;
  CHECK(d2.size() == 14u);
  CHECK(d2.back() <= 5e3);
  CHECK(d2.back() * std::pow(10.0, 0.2) > 5e3);
  CHECK(r.analyses[4].sweep.size() == 1u);
  CHECK(r.analyses[4].stats.timepoints == 1);
}

TEST_CASE(".op continuation: a diode chain plain Newton cannot solve within itl1 converges by stepping") {
  // Plain Newton needs 5 iterations here (from vcrit, pnjlim climbs ~10 Vt per step); with itl1 = 4 it gives
  // up, and gmin / source stepping must find the operating point.
  RunResults r = run_deck(R"(diode chain
.options itl1=4
V1 a 0 DC 100
R1 a b 1m
D1 b c dm
D2 c d dm
D3 d 0 dm
.model dm d is=1e-14
.op
.end
)");
  const SolverStats& s = r.analyses.at(0).stats;
  CHECK(s.newton_iterations > 4);  // the fallback ran
  // Analytic: 100 = R I + 3 vd, I = IS (exp(vd/Vt) - 1) + gmin vd.
  auto current = [](double vd) { return 1e-14 * std::expm1(vd / kVt) + 1e-12 * vd; };
  const double vd = bisect([&](double x) { return 1e-3 * current(x) + 3 * x - 100; }, 0.0, 100.0 / 3);
  CHECK(-op_value(r, 0, "i(v1)") == doctest::Approx(current(vd)).epsilon(1e-6));
  CHECK(op_value(r, 0, "v(d)") == doctest::Approx(vd).epsilon(1e-6));
  CHECK(op_value(r, 0, "v(b)") == doctest::Approx(3 * vd).epsilon(1e-6));
}

TEST_CASE("singular circuits are located input errors or numerical errors naming nodes") {
  SUBCASE("current source into a capacitor-only node") {
    RunResults r;
    Status st = run_deck_status("cap only\nI1 0 n DC 1m\nC1 n 0 1u\n.op\n.end\n", r);
    REQUIRE(!st.ok());
    const Diag& e = st.errors.at(0);
    INFO(st.to_string());
    CHECK(e.kind == ErrorKind::Input);
    CHECK(contains(e.message, "'n'"));
    CHECK(e.loc.valid());
    CHECK(e.loc.line >= 2);
    CHECK(e.loc.line <= 3);
  }
  SUBCASE("two voltage sources in parallel") {
    RunResults r;
    Status st = run_deck_status("parallel v\nV1 a 0 DC 1\nV2 a 0 DC 2\nR1 a 0 1k\n.op\n.end\n", r);
    REQUIRE(!st.ok());
    const Diag& e = st.errors.at(0);
    INFO(st.to_string());
    CHECK(e.kind == ErrorKind::Input);
    CHECK(contains(e.message, "'v2'"));
    CHECK(contains(e.message, "'a'"));
    CHECK(e.loc.line == 3);
  }
  SUBCASE("a numerically singular matrix names a node or branch, not an index") {
    // Two VCVS copying each other's node voltage: v(a) = v(b) and v(b) = v(a) leave both undetermined.
    RunResults r;
    Status st = run_deck_status("mutual vcvs\nE1 a 0 b 0 1\nE2 b 0 a 0 1\nR1 a 0 1k\nR2 b 0 1k\n.op\n.end\n", r);
    REQUIRE(!st.ok());
    const Diag& e = st.errors.at(0);
    INFO(st.to_string());
    CHECK(e.kind == ErrorKind::Numerical);
    CHECK(contains(e.message, "singular"));
    CHECK(!names_an_index(e.message));
    CHECK((contains(e.message, "node 'a'") || contains(e.message, "node 'b'") ||
           contains(e.message, "'e1'") || contains(e.message, "'e2'")));
  }
}

TEST_CASE("non-convergence names the nodes furthest from convergence") {
  RunResults r;
  Status st = run_deck_status(R"(hopeless
.options itl1=2
V1 a 0 DC 100
R1 a mid 1m
D1 mid k dm
D2 k 0 dm
.model dm d is=1e-14
.op
.end
)", r);
  REQUIRE(!st.ok());
  const Diag& e = st.errors.at(0);
  INFO(st.to_string());
  CHECK(e.kind == ErrorKind::Numerical);
  CHECK(contains(e.message, "converge"));
  CHECK((contains(e.message, "node 'mid'") || contains(e.message, "node 'k'")));
  CHECK(!names_an_index(e.message));
}
