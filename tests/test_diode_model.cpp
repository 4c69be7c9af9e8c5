// Tests for devices/diode_model.hpp, the diode equations shared by the MNA device and the NN fast evaluator: branch
// continuity, breakdown calibration, gmin, the inverse used for initial guesses, the charge's derivative, limiting.
#include <doctest/doctest.h>
#include <cmath>
#include "devices/diode_model.hpp"

using namespace anasim;
namespace dm = anasim::diode_model;

TEST_CASE("diode model: thermal voltage at 27 C and the coefficients of a part") {
  CHECK(dm::kVt == doctest::Approx(0.025864917).epsilon(1e-9));  // k T / q, ngspice 39 constants
  dm::Params p;
  p.area = 2;
  p.is = 1e-14;
  p.n = 1.5;
  p.rs = 10;
  const dm::Coeffs c = dm::coeffs(p);
  CHECK(c.is == 2e-14);
  CHECK(c.rs == 5);
  CHECK(c.grs == 0.2);
  CHECK(c.vte == 1.5 * dm::kVt);
  CHECK(c.vcrit == doctest::Approx(c.vte * std::log(c.vte / (std::sqrt(2.0) * c.is))));
}

TEST_CASE("diode model: current is continuous with its conductance across the branches; gmin in parallel") {
  dm::Params p;
  p.bv_given = true;
  p.bv = 5;
  p.ibv = 1e-3;
  const dm::Coeffs c = dm::coeffs(p);
  // Forward: Shockley.
  const dm::Current f = dm::current(c, 0.6, 1e-12);
  CHECK(f.cdj == doctest::Approx(c.is * (std::exp(0.6 / c.vte) - 1)).epsilon(1e-14));
  CHECK(f.cd == f.cdj + 1e-12 * 0.6);
  CHECK(f.gd == f.gdj + 1e-12);
  // The conductance is the derivative of the current on every branch (central differences).
  for (double vd : {0.7, 0.1, -0.05, -0.2, -1.0, -4.0, -c.bvt - 0.01}) {
    const double h = 1e-7;
    const double num = (dm::current(c, vd + h, 0).cdj - dm::current(c, vd - h, 0).cdj) / (2 * h);
    CHECK(dm::current(c, vd, 0).gdj == doctest::Approx(num).epsilon(1e-5));
  }
  // Continuity at the forward/reverse junction -3 vte.
  const double v3 = -3 * c.vte;
  CHECK(dm::current(c, v3, 0).cdj == doctest::Approx(dm::current(c, std::nextafter(v3, -1.0), 0).cdj).epsilon(1e-12));
  // Breakdown: the adjusted voltage puts ibv at -bv (within the calibration tolerance of 1e-3).
  CHECK(c.bvt < 5);
  CHECK(-dm::current(c, -5, 0).cdj == doctest::Approx(1e-3).epsilon(2e-3));
}

TEST_CASE("diode model: forward_voltage inverts the forward current including rs") {
  dm::Params p;
  p.rs = 20;
  const dm::Coeffs c = dm::coeffs(p);
  for (double i : {1e-9, 1e-6, 1e-3}) {
    const double v = dm::forward_voltage(c, i);
    const double vj = v - i * c.rs;
    CHECK(dm::current(c, vj, 0).cdj == doctest::Approx(i).epsilon(1e-12));
  }
  CHECK(dm::forward_voltage(c, 0.0) == 0.0);
  CHECK(dm::forward_voltage(c, -1e-3) == 0.0);
}

TEST_CASE("diode model: capacitance is the derivative of the charge, across fc * vj") {
  dm::Params p;
  p.cjo = 2e-12;
  p.vj = 0.8;
  p.m = 0.4;
  p.tt = 5e-9;
  p.fc = 0.5;
  const dm::Coeffs c = dm::coeffs(p);
  auto q_at = [&](double vd) {
    double q, cap;
    dm::charge(c, vd, dm::current(c, vd, 0), q, cap);
    return q;
  };
  for (double vd : {-2.0, -0.3, 0.2, 0.39, 0.41, 0.6}) {
    const double h = 1e-6;
    double q, cap;
    dm::charge(c, vd, dm::current(c, vd, 0), q, cap);
    CHECK(cap == doctest::Approx((q_at(vd + h) - q_at(vd - h)) / (2 * h)).epsilon(1e-5));
  }
  // Continuous at the depletion threshold.
  CHECK(q_at(std::nextafter(c.depl_thr, 0.0)) == doctest::Approx(q_at(c.depl_thr)).epsilon(1e-12));
}

TEST_CASE("diode model: limiting is pnjlim, mirrored about -bvt in breakdown") {
  dm::Params p;
  const dm::Coeffs c = dm::coeffs(p);
  bool limited = true;
  CHECK(dm::limit(c, 0.3, 0.29, limited) == 0.3);
  CHECK_FALSE(limited);
  const double v = dm::limit(c, 2.0, 0.6, limited);
  CHECK(limited);
  CHECK(v == doctest::Approx(0.6 + c.vte * std::log(1 + 1.4 / c.vte)));
  bool l2 = false;
  CHECK(v == pnjlim(2.0, 0.6, c.vte, c.vcrit, l2));
  dm::Params pb;
  pb.bv_given = true;
  pb.bv = 5;
  const dm::Coeffs cb = dm::coeffs(pb);
  const double vb = dm::limit(cb, -8.0, -4.0, limited);  // a step deep into breakdown is limited like a forward one
  CHECK(limited);
  CHECK(vb > -8.0);
  CHECK(vb < -cb.bvt);
}
