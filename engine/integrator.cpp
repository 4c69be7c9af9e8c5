// State integration and truncation-error control (see integrator.hpp).
#include "engine/integrator.hpp"
#include <algorithm>
#include <cmath>

namespace anasim {

Integrator::Integrator(int n) : n_(n) {
  for (auto& v : q_) v.assign(n, 0.0);
  for (auto& v : i_) v.assign(n, 0.0);
  hist_.assign(n, 0.0);
}

void Integrator::start_from_dc(const LoadContext& ctx) {
  if (ctx.q != q_[0].data()) std::copy(ctx.q, ctx.q + n_, q_[0].begin());
  for (int k = 1; k < 4; ++k) q_[k] = q_[0];
  std::fill(i_[0].begin(), i_[0].end(), 0.0);
  std::fill(i_[1].begin(), i_[1].end(), 0.0);
  // As in SPICE, the DC state is taken as the whole history (a flat start), so the first step is checked too.
  valid_ = 3;
  h_[0] = h_[1] = h_[2] = h_[3] = 0.0;
}

void Integrator::prepare(LoadContext& ctx, Integration method, int order, double h) {
  h_[0] = h;
  if (h_[1] == 0.0) h_[1] = h_[2] = h_[3] = h;  // flat start
  const double* q1 = q_[1].data();
  if (order == 1 || method == Integration::BackwardEuler) {
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
  if (rule_ == 1) return y1 + h_[0] * f0;
  if (rule_ == 2) return y1 + 0.5 * h_[0] * (f0 + f1);
  return (f0 - gear_a1_ * y1 - gear_a2_ * y2) / ag0_;
}

void Integrator::finish(const LoadContext&) {
  for (int s = 0; s < n_; ++s) i_[0][s] = ag0_ * q_[0][s] + hist_[s];
}

double Integrator::lte_step(const Options& opt, Integration method, int order) const {
  if (n_ == 0 || valid_ < order + 1) return INFINITY;
  // Error constants of the local truncation error, as in SPICE.
  const double trap_c[2] = {0.5, 1.0 / 12.0};
  const double gear_c[2] = {0.5, 2.0 / 9.0};
  const double factor = (method == Integration::Gear2 ? gear_c : trap_c)[order - 1];
  // The divided difference of q over the last order + 2 points, q[t0, ..., t_{order+1}], is a linear
  // combination sum_k c[k] q_k whose weights depend only on the step sizes: run SPICE's divided-difference
  // recursion once on unit vectors (c[j][k] = weight of q_k in the j-th difference) instead of per state.
  const int m = order + 2;  // points
  double c[4][4] = {};
  double dt[4];
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
  double w[4] = {};
  for (int k = 0; k < m; ++k) w[k] = factor * c[0][k];
  const double* q0 = q_[0].data();
  const double* q1 = q_[1].data();
  const double* q2 = q_[2].data();
  const double* q3 = q_[3].data();
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
    double d = w[0] * q0[s] + w[1] * q1[s] + w[2] * q2[s];
    if (order == 2) d += w[3] * q3[s];
    worst = std::max(worst, std::max(opt.abstol, std::fabs(d)) / tol);
  }
  const double del = opt.trtol / worst;
  return order == 2 ? std::sqrt(del) : del;
}

void Integrator::accept() {
  std::swap(q_[3], q_[2]);
  std::swap(q_[2], q_[1]);
  std::swap(q_[1], q_[0]);
  q_[0] = q_[1];  // initial guess for the next step's states
  std::swap(i_[1], i_[0]);
  h_[3] = h_[2];
  h_[2] = h_[1];
  h_[1] = h_[0];
  valid_ = std::min(valid_ + 1, 3);
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

bool StepControl::judge(const Integrator& integ, const Options& opt, Integration method, double& newdelta) {
  newdelta = std::min(2 * delta, integ.lte_step(opt, method, order));
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
