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
    ag0_ = 1.0 / h;
    for (int s = 0; s < n_; ++s) hist_[s] = -ag0_ * q1[s];
  } else if (method == Integration::Trapezoidal) {
    ag0_ = 2.0 / h;
    const double* i1 = i_[1].data();
    for (int s = 0; s < n_; ++s) hist_[s] = -ag0_ * q1[s] - i1[s];
  } else {  // variable-step BDF2: i = a0 q0 + a1 q1 + a2 q2
    const double h1 = h, h2 = h_[1];
    ag0_ = (2 * h1 + h2) / (h1 * (h1 + h2));
    const double a1 = -(h1 + h2) / (h1 * h2);
    const double a2 = h1 / (h2 * (h1 + h2));
    const double* q2 = q_[2].data();
    for (int s = 0; s < n_; ++s) hist_[s] = a1 * q1[s] + a2 * q2[s];
  }
  ctx.ag0 = ag0_;
  ctx.hist = hist_.data();
  ctx.q = q_[0].data();
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
  double best = INFINITY;
  double diff[4], dt[4];
  for (int s = 0; s < n_; ++s) {
    const double volttol = opt.abstol + opt.reltol * std::max(std::fabs(i_[0][s]), std::fabs(i_[1][s]));
    double chargetol = std::max(std::fabs(q_[0][s]), std::fabs(q_[1][s]));
    chargetol = opt.reltol * std::max(chargetol, opt.chgtol) / h_[0];
    const double tol = std::max(volttol, chargetol);
    // Divided differences of q over the last order+2 points.
    for (int k = 0; k <= order + 1; ++k) diff[k] = q_[k][s];
    for (int k = 0; k <= order; ++k) dt[k] = h_[k];
    int j = order;
    for (;;) {
      for (int k = 0; k <= j; ++k) diff[k] = (diff[k] - diff[k + 1]) / dt[k];
      if (--j < 0) break;
      for (int k = 0; k <= j; ++k) dt[k] = dt[k + 1] + h_[k];
    }
    double del = opt.trtol * tol / std::max(opt.abstol, factor * std::fabs(diff[0]));
    if (order == 2) del = std::sqrt(del);
    best = std::min(best, del);
  }
  return best;
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

}  // namespace anasim
