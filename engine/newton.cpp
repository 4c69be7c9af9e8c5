// Newton-Raphson and operating-point strategy (see newton.hpp).
#include "engine/newton.hpp"
#include "engine/krylov.hpp"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include "engine/power.hpp"

namespace anasim {

NewtonSolver::NewtonSolver(Circuit& c, const Options& opt) : c_(c), opt_(opt) {
  const int n = c.n();
  A_.assign(c.nnz() + 1, 0.0);
  b_.assign(n + 1, 0.0);
  x_.assign(n + 1, 0.0);
  xnew_.assign(n + 1, 0.0);
  facts_.resize(1);
  facts_[0].lu = new_lu();
  split_ = !c.nonlinear();
  std::vector<Device::LinearCharge> lc;
  std::vector<const Device*> tabled;
  for (const auto& d : c.devices()) {  // (one pass: 302,000 devices on the 784x128 crossbar deck)
    const bool in_table = d->linear_charges(lc);
    if (in_table) tabled.push_back(d.get());
    const Device::RhsSplit s = d->rhs_split();
    split_ = split_ && s != Device::RhsSplit::No;
    if (s == Device::RhsSplit::Rhs && !in_table) rhs_devices_.push_back(d.get());
  }
  if (!split_) rhs_devices_.clear();
  std::vector<const Device*> by_address = tabled;
  std::sort(by_address.begin(), by_address.end());
  auto in_table = [&](const Device* d) { return std::binary_search(by_address.begin(), by_address.end(), d); };
  for (Device* d : c.state_devices())
    if (!in_table(d)) state_devices_.push_back(d);
  auto index = [n](int i) { return i < 0 ? n : i; };
  charges_.devices = tabled;
  charges_.epoch = c.temperature_epoch();
  for (const Device::LinearCharge& e : lc) {
    charges_.state.push_back(e.state);
    charges_.c.push_back(e.c);
    charges_.u.push_back(index(e.u.v));
    charges_.w.push_back(index(e.w.v));
    charges_.ra.push_back(index(e.ra));
    charges_.rb.push_back(index(e.rb));
  }
  ctx_.A = A_.data();
  ctx_.b = b_.data();
  ctx_.x = x_.data();
  q_dc_.assign(c.n_states(), 0.0);
  ctx_.q = q_dc_.data();
  ctx_.gmin = opt.gmin;
}

std::unique_ptr<SparseLU<double>> NewtonSolver::new_lu() const {
  const int n = c_.n();
  auto lu = std::make_unique<SparseLU<double>>();
  lu->set_solver(opt_.solver);
  lu->set_single_factorization(!c_.nonlinear() && c_.n_states() == 0);
  if (opt_.solver == LinearSolver::Umfpack ||
      (opt_.solver == LinearSolver::Auto && n >= SparseLU<double>::kMultifrontalMinUnknowns))
    lu->set_ordering_hint([&c = c_] { return c.elimination_hint(); });  // used where it covers most unknowns
  lu->analyze(n, c_.Ap().data(), c_.Ai().data());
  return lu;
}

void NewtonSolver::load() {
  a_stale_ = false;
  std::fill(A_.begin(), A_.end(), 0.0);
  std::fill(b_.begin(), b_.end(), 0.0);
  ctx_.x = x_.data();
  ctx_.A = A_.data();
  ctx_.b = b_.data();
  if (meter_) meter_->load(ctx_);
  else for (const auto& d : c_.devices()) d->load(ctx_);
  if (gdiag_ > 0) {
    const auto& diag = c_.diag();
    for (int u = 0; u < c_.n(); ++u)
      if (c_.unknowns()[u].is_node) A_[diag[u]] += gdiag_;
  }
  if (ctx_.mode == LoadContext::Mode::Dc) {
    for (const auto& [u, v] : forced_) {
      A_[c_.diag()[u.v]] += 1e10;
      b_[u.v] += 1e10 * v * ctx_.srcfact;
    }
  }
}

bool NewtonSolver::solve_last(double* r) {
  if (!lu().factored() || facts_[cur_].A.empty() || gdiag_ > 0 ||
      (ctx_.mode == LoadContext::Mode::Dc && !forced_.empty()))
    return false;
  if (last_reused_) {  // the last matrix is A_, not the factors' own
    if (!reuse_solve(r)) return false;
  } else {
    lu().solve(r);
  }
  r[c_.n()] = 0.0;
  return true;
}

bool NewtonSolver::reuse_solve(double* b, const double* guess) {
  lu().set_refinement(false);  // (a preconditioner)
  const double tol = ctx_.mode == LoadContext::Mode::Tran ? std::min(kReuseTolerance, 1e-3 * opt_.reltol)
                                                          : kReuseToleranceDc;
  const KrylovResult k = gmres_with_factors(c_.n(), c_.Ap().data(), c_.Ai().data(), A_.data(), lu(), b,
                                            kReuseIterations, tol, guess);
  reuse_iterations_ += k.iterations;
  return k.converged;
}

bool NewtonSolver::try_reuse() {
  const Factorization& f = facts_[cur_];
  if (opt_.lureuse <= 0 || c_.n() < opt_.lureuse || !f.lu->factored() || f.A.empty() ||
      f.lu->solver() == LinearSolver::Pcg)
    return false;
  std::copy(b_.begin(), b_.begin() + c_.n(), xnew_.begin());
  if (!reuse_solve(xnew_.data(), x_.data())) return false;
  xnew_[c_.n()] = 0.0;
  facts_[cur_].used = ++use_clock_;
  ++reuses_;
  return true;
}

bool NewtonSolver::factor_and_solve(std::string& err) {
  const size_t nnz = static_cast<size_t>(c_.nnz());
  auto holds = [&](const Factorization& f) {
    return f.lu->factored() && f.A.size() == nnz && std::memcmp(f.A.data(), A_.data(), sizeof(double) * nnz) == 0;
  };
  // A system whose values did not change keeps its LU (e.g. fixed-step transient of a linear circuit); a linear
  // circuit also finds the other matrices it factored before.
  // Only a transient revisits matrices (a .dc or .step sweep of a linear circuit's parameter does not; there every
  // new slot would cost a symbolic analysis and memory for nothing).
  const bool cache = !c_.nonlinear() && ctx_.mode == LoadContext::Mode::Tran;
  bool same = holds(facts_[cur_]);
  for (int k = 0; cache && !same && k < static_cast<int>(facts_.size()); ++k)
    if (k != cur_ && holds(facts_[k])) {
      cur_ = k;
      same = true;
    }
  last_reused_ = false;
  // A nonlinear circuit's large matrix: first the previous factors, as GMRES's preconditioner (see krylov.hpp).
  if (!same && !cache && try_reuse()) {
    last_reused_ = true;
    return true;
  }
  if (!same) {
    if (cache && facts_[cur_].lu->factored()) {  // keep the current one: a new slot, or the least recently used
      // Bytes per slot: its factorization and its copy of the matrix.
      auto bytes = [&](const Factorization& f) { return f.lu->factor_bytes() + sizeof(double) * f.A.capacity(); };
      double held = 0;
      for (const Factorization& f : facts_) held += bytes(f);
      const double one = bytes(facts_[cur_]);
      const int slots = static_cast<int>(facts_.size());
      // (every solver within kCacheBytes; KLU within kKluCacheBytes too, beyond its first slots)
      const bool klu = facts_[cur_].lu->solver() == LinearSolver::Klu;
      const bool room = held + one <= kCacheBytes &&
                        (!klu || slots < kMinKluFactorizations || held + one <= kKluCacheBytes);
      if (slots < kMaxFactorizations && room) {
        facts_.push_back({facts_[cur_].lu->sibling(), {}, 0});
        cur_ = static_cast<int>(facts_.size()) - 1;
      } else if (facts_.size() > 1) {
        int lru = 0;
        for (int k = 1; k < static_cast<int>(facts_.size()); ++k)
          if (facts_[k].used < facts_[lru].used) lru = k;
        cur_ = lru;
      }
    }
    Factorization& f = facts_[cur_];
    if (!f.lu->factor(A_.data())) {
      int col = f.lu->singular_unknown();
      err = fmt::format("singular matrix at {}", c_.describe(col));
      // Name the devices connected to that unknown.
      f.A.clear();
      return false;
    }
    f.A.assign(A_.begin(), A_.begin() + static_cast<long>(nnz));
  } else {
    ++reused_;
  }
  facts_[cur_].keyed = rhs_split_applies();
  facts_[cur_].ag0 = ctx_.ag0;
  solve_current();
  return true;
}

void NewtonSolver::solve_current() {
  facts_[cur_].used = ++use_clock_;
  // UMFPACK refines its solutions iteratively (about one extra solve and residual each) except in a transient step,
  // whose tolerance is the Newton's (reltol |x| + vntol): on the 256x256 crossbar transient the unrefined
  // waveforms were within 7.7e-12 of range of the refined ones, 22% faster.
  lu().set_refinement(ctx_.mode != LoadContext::Mode::Tran);
  std::copy(b_.begin(), b_.begin() + c_.n(), xnew_.begin());
  lu().solve(xnew_.data(), x_.data());  // (conjugate gradients start from the last iterate)
  xnew_[c_.n()] = 0.0;
}

bool NewtonSolver::rhs_split_applies() const {
  return split_ && !meter_ && ctx_.mode == LoadContext::Mode::Tran && gdiag_ == 0 && forced_.empty();
}

bool NewtonSolver::rhs_only_step() {
  if (!rhs_split_applies()) return false;
  int k = -1;
  for (int i = 0; i < static_cast<int>(facts_.size()) && k < 0; ++i)
    if (facts_[i].keyed && facts_[i].ag0 == ctx_.ag0 && !facts_[i].A.empty() && facts_[i].lu->factored()) k = i;
  if (k < 0) return false;
  std::fill(b_.begin(), b_.end(), 0.0);
  ctx_.x = x_.data();
  ctx_.A = A_.data();  // (not written: load_rhs stamps no matrix)
  ctx_.b = b_.data();
  for (Device* d : rhs_devices_) d->load_rhs(ctx_);
  rhs_charges();
  a_stale_ = true;
  cur_ = k;
  ++reused_;
  solve_current();
  return true;
}

void NewtonSolver::refresh_charges() {
  if (charges_.epoch == c_.temperature_epoch()) return;
  std::vector<Device::LinearCharge> lc;
  for (const Device* d : charges_.devices) d->linear_charges(lc);
  for (size_t k = 0; k < lc.size(); ++k) charges_.c[k] = lc[k].c;
  charges_.epoch = c_.temperature_epoch();
}

void NewtonSolver::update_charges() {
  refresh_charges();
  const ChargeTable& t = charges_;
  const double* x = ctx_.x;
  double* q = ctx_.q;
  const size_t m = t.c.size();
  for (size_t k = 0; k < m; ++k) q[t.state[k]] = t.c[k] * (x[t.u[k]] - x[t.w[k]]);
}

// The devices' own load_rhs (LoadContext::linear_charge), so that a right-hand-side-only step stamps what a full
// load would.
void NewtonSolver::rhs_charges() {
  refresh_charges();
  const ChargeTable& t = charges_;
  const double* x = ctx_.x;
  double* b = ctx_.b;
  const size_t m = t.c.size();
  for (size_t k = 0; k < m; ++k) {
    const double r = ctx_.linear_charge(t.state[k], t.c[k], x[t.u[k]] - x[t.w[k]]);
    b[t.ra[k]] -= r;
    b[t.rb[k]] += r;
  }
}

Status NewtonSolver::nonconvergence_error(const char* what) const {
  // Rank unknowns by how far their last update was from the tolerance.
  std::vector<std::pair<double, int>> worst;
  for (int u = 0; u < c_.n(); ++u) {
    double tol = opt_.reltol * std::fabs(x_[u]) + (c_.unknowns()[u].is_node ? opt_.vntol : opt_.abstol);
    double r = last_dx_.empty() ? 0.0 : std::fabs(last_dx_[u]) / tol;
    if (!std::isfinite(x_[u])) r = std::numeric_limits<double>::infinity();
    worst.emplace_back(r, u);
  }
  std::sort(worst.rbegin(), worst.rend());
  std::string names;
  for (size_t k = 0; k < worst.size() && k < 3; ++k) {
    if (!names.empty()) names += ", ";
    names += c_.describe(worst[k].second);
  }
  return numerical_error(fmt::format("{}; unknowns furthest from convergence: {}", what, names));
}

Status NewtonSolver::numerical_error(const std::string& what) const {
  if (domain_error_.empty()) return Status::numerical(what);
  const std::string when = ctx_.mode == LoadContext::Mode::Tran ? fmt::format("t = {:.6g} s", ctx_.time) : "DC";
  return Status::numerical(fmt::format("{} at {} ({})", domain_error_, when, what));
}

Status NewtonSolver::newton(int max_iter, bool init_junctions) {
  const int n = c_.n();
  last_dx_.assign(n, 0.0);
  double prev_norm = std::numeric_limits<double>::infinity();
  for (int iter = 1; iter <= max_iter; ++iter) {
    ++iterations_;
    ctx_.noncon = false;
    ctx_.init_junctions = init_junctions && iter == 1;
    ctx_.domain_error.clear();
    std::string err;
    const bool rhs_only = rhs_only_step();
    if (!rhs_only) load();
    domain_error_ = ctx_.domain_error;
    if (!rhs_only && !factor_and_solve(err)) return numerical_error(err);
    double norm = 0.0;
    for (int u = 0; u < n; ++u) {
      if (!std::isfinite(xnew_[u]))
        return numerical_error(fmt::format("solution is not finite at {} (overflow)", c_.describe(u)));
    }
    if (!c_.nonlinear()) {
      std::swap(x_, xnew_);
      ctx_.x = x_.data();
      // The load above recorded device states (charges, fluxes) at the starting iterate; re-evaluate them
      // at the solution, or the integrator's history is one step stale (trapezoidal then diverges). Only the
      // devices with states, and without stamping: no second load of the whole circuit per timestep.
      for (Device* d : state_devices_) d->update_states(ctx_);
      update_charges();
      return {};
    }
    bool converged = !ctx_.noncon && iter > 1;
    for (int u = 0; u < n; ++u) {
      double dx = xnew_[u] - x_[u];
      last_dx_[u] = dx;
      double tol = opt_.reltol * std::max(std::fabs(xnew_[u]), std::fabs(x_[u])) +
                   (c_.unknowns()[u].is_node ? opt_.vntol : opt_.abstol);
      if (std::fabs(dx) > tol) converged = false;
      norm = std::max(norm, std::fabs(dx) / tol);
    }
    // Damping: once plain Newton has had a fair number of tries, halve steps that grow.
    if (!converged && iter > max_iter / 4 && norm > prev_norm) {
      for (int u = 0; u < n; ++u) xnew_[u] = x_[u] + 0.5 * (xnew_[u] - x_[u]);
    }
    prev_norm = norm;
    std::swap(x_, xnew_);
    ctx_.x = x_.data();
    if (converged) return {};
  }
  return nonconvergence_error(fmt::format("Newton iteration did not converge in {} iterations", max_iter).c_str());
}

Status NewtonSolver::operating_point(bool from_previous) {
  ctx_.mode = LoadContext::Mode::Dc;
  ctx_.srcfact = 1.0;
  gdiag_ = 0.0;
  const std::vector<double> x0 = x_;
  Status st = dc_strategy(x0, from_previous);
  if (st || !c_.nonlinear()) return st;
  // Again without tanh limiting, as ngspice's B sources evaluate tanh: a high-gain tanh inside positive feedback
  // (a Schmitt trigger past its switching point) traps the limited iteration, whose every step lands the linear
  // model back on the unstable balance point while the solution lies on the opposite tail. Only circuits the
  // limited strategy could not solve get here, so every solution it finds stays as it was.
  ctx_.limit_tanh = false;
  x_ = x0;
  Status plain = dc_strategy(x0, from_previous);
  ctx_.limit_tanh = true;
  if (plain) return plain;
  return st;
}

Status NewtonSolver::dc_strategy(const std::vector<double>& x0, bool from_previous) {
  x_ = x0;
  Status st = newton(opt_.itl1, !from_previous);
  if (!st && from_previous && c_.nonlinear()) {  // continuation failed: a cold start before stepping
    x_ = x0;
    st = newton(opt_.itl1, true);
  }
  if (st || !c_.nonlinear()) return st;

  // gmin stepping (ngspice's dynamic gmin): a conductance from every node to ground, from 1e-2 S down to gmin.
  // The reduction factor per step grows after easy steps (at most a decade) and shrinks after hard ones; a
  // failed step restarts from the last converged solution with the fourth root of the factor, until the factor
  // is indistinguishable from 1.
  x_ = x0;
  bool ok = false, started = false;
  {
    constexpr double kMaxFactor = 10.0;
    const double gtarget = std::max(opt_.gmin, 1e-15);  // [S]
    double factor = kMaxFactor, g_good = 1e-2 * kMaxFactor;
    std::vector<double> good = x0;
    gdiag_ = 1e-2;
    for (;;) {
      const long before = iterations_;
      const bool conv = static_cast<bool>(newton(opt_.itl1, !started));
      const long its = iterations_ - before;
      if (conv) {
        started = true;
        if (gdiag_ <= gtarget) { ok = true; break; }
        good = x_;
        g_good = gdiag_;
        if (its <= opt_.itl1 / 4) factor = std::min(factor * std::sqrt(factor), kMaxFactor);
        if (its > 3 * opt_.itl1 / 4) factor = std::max(std::sqrt(factor), 1.00005);
        if (gdiag_ < factor * gtarget) {
          factor = gdiag_ / gtarget;
          gdiag_ = gtarget;
        } else {
          gdiag_ /= factor;
        }
      } else {
        if (factor < 1.00005) break;
        factor = std::sqrt(std::sqrt(factor));
        gdiag_ = g_good / factor;
        x_ = good;
      }
    }
  }
  gdiag_ = 0.0;
  if (ok && newton(opt_.itl1, false)) return {};

  // Source stepping: ramp all independent sources from 0 to their values, adapting the step.
  x_ = x0;
  std::fill(x_.begin(), x_.end(), 0.0);
  double f = 0.0, step = 0.1;
  ctx_.srcfact = 0.0;
  Status s0 = newton(opt_.itl1, true);
  if (!s0) { ctx_.srcfact = 1.0; return st; }
  std::vector<double> good = x_;
  while (f < 1.0) {
    double next = std::min(1.0, f + step);
    ctx_.srcfact = next;
    if (newton(opt_.itl1, false)) {
      f = next;
      good = x_;
      step = std::min(step * 2, 0.25);
    } else {
      x_ = good;
      step /= 4;
      if (step < 1e-6) break;
    }
  }
  ctx_.srcfact = 1.0;
  ctx_.x = x_.data();
  if (f >= 1.0) return {};
  Status fail = nonconvergence_error(
      "operating point not found: Newton, gmin stepping and source stepping all failed");
  return fail;
}

double NewtonSolver::kcl_residual() const {
  const int n = c_.n();
  const auto& Ap = c_.Ap();
  const auto& Ai = c_.Ai();
  std::vector<double> r(b_.begin(), b_.begin() + n);
  const double* A = a_stale_ ? facts_[cur_].A.data() : A_.data();
  for (int j = 0; j < n; ++j)
    for (int p = Ap[j]; p < Ap[j + 1]; ++p) r[Ai[p]] -= A[p] * x_[j];
  double worst = 0.0;
  for (int i = 0; i < n; ++i)
    if (c_.unknowns()[i].is_node) worst = std::max(worst, std::fabs(r[i]));
  return worst;
}

SolverStats NewtonSolver::stats() const {
  SolverStats s;
  s.newton_iterations = iterations_;
  for (const Factorization& f : facts_) {
    s.factorizations += f.lu->factorizations();
    s.refactorizations += f.lu->refactorizations();
    s.solves += f.lu->solves();
    s.cg_iterations += f.lu->cg_iterations();
  }
  s.multifrontal = lu().solver() == LinearSolver::Umfpack;
  s.lu_reuses = reuses_;
  s.gmres_iterations = reuse_iterations_;
  return s;
}

}  // namespace anasim
