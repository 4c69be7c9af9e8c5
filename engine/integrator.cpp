// State integration and truncation-error control (see integrator.hpp).
#include "engine/integrator.hpp"
#include <algorithm>
#include <cassert>
#include <cmath>

namespace anasim {

Integrator::Integrator(int n, int max_order) : n_(n), np_(std::clamp(max_order, 2, kMaxOrder) + 2) {
  for (int k = 0; k < np_; ++k) q_[k].assign(n, 0.0);
  for (auto& v : i_) v.assign(n, 0.0);
  hist_.assign(n, 0.0);
}

void Integrator::start_from_dc(const LoadContext& ctx) {
  if (ctx.q != q_[0].data()) std::copy(ctx.q, ctx.q + n_, q_[0].begin());
  for (int k = 1; k < np_; ++k) q_[k] = q_[0];
  std::fill(i_[0].begin(), i_[0].end(), 0.0);
  std::fill(i_[1].begin(), i_[1].end(), 0.0);
  // As in SPICE, the DC state is taken as the whole history (a flat start), so the first step is checked too.
  valid_ = np_ - 1;
  std::fill(h_, h_ + kPoints, 0.0);
}

void Integrator::prepare(LoadContext& ctx, Integration method, int order, double h) {
  h_[0] = h;
  if (h_[1] == 0.0) std::fill(h_ + 1, h_ + kPoints, h);  // flat start
  const double* q1 = q_[1].data();
  if (order >= 3 && method == Integration::Gear) {
    assert(order + 2 <= np_);
    // BDF of order k = order: dq/dt at t0 is the derivative of the polynomial through (t_j, q_j), j = 0..k, at
    // t0, i = sum_j a_j q_j with a_j = L_j'(t0) of the Lagrange basis (times t_j - t0 = -(h_0 + ... + h_{j-1})).
    const int k = std::min(order, kMaxOrder);
    double tau[kMaxOrder + 1];
    tau[0] = 0;
    for (int j = 1; j <= k; ++j) tau[j] = tau[j - 1] - h_[j - 1];
    double a[kMaxOrder + 1];
    a[0] = 0;
    for (int m = 1; m <= k; ++m) a[0] += 1 / (tau[0] - tau[m]);
    for (int j = 1; j <= k; ++j) {
      double p = 1 / (tau[j] - tau[0]);
      for (int m = 1; m <= k; ++m)
        if (m != j) p *= (tau[0] - tau[m]) / (tau[j] - tau[m]);
      a[j] = p;
    }
    rule_ = 4;
    ag0_ = a[0];
    std::fill(hist_.begin(), hist_.end(), 0.0);
    for (int j = 1; j <= k; ++j) {
      const double* qj = q_[j].data();
      for (int s = 0; s < n_; ++s) hist_[s] += a[j] * qj[s];
    }
  } else if (order == 1 || method == Integration::BackwardEuler) {
    rule_ = 1;
    ag0_ = 1.0 / h;
    for (int s = 0; s < n_; ++s) hist_[s] = -ag0_ * q1[s];
  } else if (method == Integration::Trapezoidal) {
    rule_ = 2;
    ag0_ = 2.0 / h;
    const double* i1 = i_[1].data();
    for (int s = 0; s < n_; ++s) hist_[s] = -ag0_ * q1[s] - i1[s];
  } else {  // variable-step BDF2: i = a0 q0 + a1 q1 + a2 q2
    const double h1 = h, h2 = h_[1];
    ag0_ = (2 * h1 + h2) / (h1 * (h1 + h2));
    const double a1 = -(h1 + h2) / (h1 * h2);
    const double a2 = h1 / (h2 * (h1 + h2));
    rule_ = 3;
    gear_a1_ = a1;
    gear_a2_ = a2;
    const double* q2 = q_[2].data();
    for (int s = 0; s < n_; ++s) hist_[s] = a1 * q1[s] + a2 * q2[s];
  }
  ctx.ag0 = ag0_;
  ctx.hist = hist_.data();
  ctx.q = q_[0].data();
}

double Integrator::integrate(double y1, double y2, double f0, double f1) const {
  assert(rule_ <= 3);
  if (rule_ == 1) return y1 + h_[0] * f0;
  if (rule_ == 2) return y1 + 0.5 * h_[0] * (f0 + f1);
  return (f0 - gear_a1_ * y1 - gear_a2_ * y2) / ag0_;
}

void Integrator::finish(const LoadContext&) {
  for (int s = 0; s < n_; ++s) i_[0][s] = ag0_ * q_[0][s] + hist_[s];
}

double Integrator::lte_step(const Options& opt, Integration method, int order) const {
  if (n_ == 0 || valid_ < order + 1 || order + 2 > np_) return INFINITY;
  // Error constants of the local truncation error, as in SPICE (Gear: beta_k / (k + 1) of BDF-k).
  const double trap_c[2] = {0.5, 1.0 / 12.0};
  const double gear_c[kMaxOrder] = {0.5, 2.0 / 9.0, 3.0 / 22.0, 12.0 / 125.0, 10.0 / 137.0};
  order = std::min(order, method == Integration::Gear ? kMaxOrder : 2);
  const double factor = (method == Integration::Gear ? gear_c : trap_c)[order - 1];
  // The divided difference of q over the last order + 2 points, q[t0, ..., t_{order+1}], is a linear
  // combination sum_k c[k] q_k whose weights depend only on the step sizes: run SPICE's divided-difference
  // recursion once on unit vectors (c[j][k] = weight of q_k in the j-th difference) instead of per state.
  const int m = order + 2;  // points
  double c[kPoints][kPoints] = {};
  double dt[kPoints];
  for (int k = 0; k < m; ++k) c[k][k] = 1.0;
  for (int k = 0; k <= order; ++k) dt[k] = h_[k];
  for (int j = order;;) {
    for (int k = 0; k <= j; ++k) {
      const double inv = 1 / dt[k];
      for (int i = k; i < m; ++i) c[k][i] = (c[k][i] - c[k + 1][i]) * inv;  // c[k][i] = 0 for i < k
    }
    if (--j < 0) break;
    for (int k = 0; k <= j; ++k) dt[k] = dt[k + 1] + h_[k];
  }
  // Fold in the error constant: err_s = |sum_k w[k] q_k[s]| is factor * |divided difference|.
  double w[kPoints] = {};
  for (int k = 0; k < m; ++k) w[k] = factor * c[0][k];
  const double* qh[kPoints];
  for (int k = 0; k < m; ++k) qh[k] = q_[k].data();
  const double *q0 = qh[0], *q1 = qh[1];
  const double* i0 = i_[0].data();
  const double* i1 = i_[1].data();
  const double rel_h = opt.reltol / h_[0];
  // Largest ratio err / (trtol * tol) over the states; the step is then its inverse (its root at order 2).
  double worst = 0.0;
  const double* qfloor = qfloor_.empty() ? nullptr : qfloor_.data();
  for (int s = 0; s < n_; ++s) {
    const double volttol = opt.abstol + opt.reltol * std::max(std::fabs(i0[s]), std::fabs(i1[s]));
    const double floor = qfloor ? std::max(opt.chgtol, qfloor[s]) : opt.chgtol;
    const double chargetol = rel_h * std::max(std::max(std::fabs(q0[s]), std::fabs(q1[s])), floor);
    const double tol = std::max(volttol, chargetol);
    double d = w[0] * q0[s];
    for (int k = 1; k < m; ++k) d += w[k] * qh[k][s];
    worst = std::max(worst, std::max(opt.abstol, std::fabs(d)) / tol);
  }
  const double del = opt.trtol / worst;
  return order == 1 ? del : order == 2 ? std::sqrt(del) : std::pow(del, 1.0 / order);
}

void Integrator::accept() {
  std::rotate(q_, q_ + np_ - 1, q_ + np_);  // q_[k + 1] <- q_[k]
  q_[0] = q_[1];  // initial guess for the next step's states
  std::swap(i_[1], i_[0]);
  std::copy_backward(h_, h_ + kPoints - 1, h_ + kPoints);
  valid_ = std::min(valid_ + 1, np_ - 1);
}

double bdf_rate_error(int k, double z) {
  // Constant steps: sum_j a_j y_{n-j} = h y'_n with a_0 = sum_{m=1..k} 1 / m, a_j = (-1)^j binomial(k, j) / j; for
  // y' = -y / tau the root R = y_n / y_{n-1} of (a_0 + z) R^k + sum_{j>=1} a_j R^(k-j), by Newton from exp(-z).
  k = std::clamp(k, 1, Integrator::kMaxOrder);
  double a[Integrator::kMaxOrder + 1];
  a[0] = z;
  double binom = 1;
  for (int j = 1; j <= k; ++j) {
    a[0] += 1.0 / j;
    binom = binom * (k - j + 1) / j;
    a[j] = (j % 2 ? -binom : binom) / j;
  }
  double R = std::exp(-z);
  for (int it = 0; it < 50; ++it) {
    double p = a[0], dp = 0;  // Horner, with the derivative
    for (int j = 1; j <= k; ++j) {
      dp = dp * R + p;
      p = p * R + a[j];
    }
    const double step = p / dp;
    R -= step;
    if (std::fabs(step) <= 1e-15 * R) break;
  }
  return std::fabs(std::log(R) / -z - 1);
}

double bdf_step_growth(int k) { return k <= 2 ? 2.0 : k == 3 ? 1.5 : k == 4 ? 1.25 : 1.1; }

double bdf_step_for_rate_error(int k, double eps) {
  double lo = 0, hi = 1;  // the error increases with z over (0, 1]
  if (bdf_rate_error(k, hi) <= eps) return hi;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    (bdf_rate_error(k, mid) <= eps ? lo : hi) = mid;
  }
  return lo;
}

bool StepControl::propose(double t, double bp, double tmax) {
  delta = std::min(delta, tmax);
  if (at_break) {
    order = 1;
    delta = std::min(delta, 0.1 * std::min(save_delta, bp - t));
    if (first) delta /= 10;
  }
  if (t + delta > bp) {
    save_delta = delta;
    delta = bp - t;
    return true;
  }
  return false;
}

namespace {
// A step whose truncation error allows no more than this fraction of it is rejected (SPICE's DCtran).
constexpr double kRejectBelow = 0.9;
}  // namespace

bool StepControl::judge(const Integrator& integ, const Options& opt, Integration method, double& newdelta,
                        double growth) {
  newdelta = std::min(growth * delta, integ.lte_step(opt, method, order));
  if (!(newdelta > kRejectBelow * delta)) return false;
  if (order == 1 && maxorder > 1) {
    order = 2;
    newdelta = std::min(2 * delta, integ.lte_step(opt, method, 2));
    if (newdelta <= 1.05 * delta) order = 1;
  }
  return true;
}

bool StepControl::bound(double h, double& newdelta) const {
  newdelta = std::min(newdelta, h);
  return h > kRejectBelow * delta;
}

bool StepControl::retry(double newdelta, double hmin) {
  const double olddelta = delta;
  delta = newdelta;
  if (delta <= hmin) {
    if (olddelta > hmin) {
      delta = hmin;
    } else {
      return false;
    }
  }
  return true;
}

Predictor::Predictor(size_t size) {
  x_[0].assign(size, 0.0);
  x_[1].assign(size, 0.0);
}

void Predictor::accept(const std::vector<double>& x, double h) {
  std::swap(x_[0], x_[1]);
  x_[0] = x;
  h1_ = h;
  have_old_ = h > 0.0;
}

void Predictor::predict(double h, std::vector<double>& x) const {
  if (!have_old_) {
    x = x_[0];
    return;
  }
  const double xfact = h / h1_;
  const double* x1 = x_[0].data();
  const double* x2 = x_[1].data();
  x.resize(x_[0].size());
  for (size_t u = 0; u < x.size(); ++u) x[u] = x1[u] + xfact * (x1[u] - x2[u]);
}

}  // namespace anasim
