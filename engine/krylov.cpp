// See krylov.hpp.
#include "engine/krylov.hpp"
#include <algorithm>
#include <cmath>
#include <Eigen/Sparse>
#include <unsupported/Eigen/IterativeSolvers>

namespace anasim {

namespace {

// Eigen's preconditioner concept over a SparseLU that is already factored (compute() does nothing).
class FactorsPreconditioner {
 public:
  FactorsPreconditioner() = default;
  template <class M>
  explicit FactorsPreconditioner(const M&) {}
  template <class M>
  FactorsPreconditioner& analyzePattern(const M&) { return *this; }
  template <class M>
  FactorsPreconditioner& factorize(const M&) { return *this; }
  template <class M>
  FactorsPreconditioner& compute(const M&) { return *this; }
  template <class Rhs>
  Eigen::VectorXd solve(const Rhs& b) const {
    if (primed_) {  // GMRES's first application, to the residual of its start: computed by the caller
      const Eigen::VectorXd* r = primed_;
      primed_ = nullptr;
      return *r;
    }
    Eigen::VectorXd x = b;
    apply(*lu_, single_, x.data());
    return x;
  }
  Eigen::ComputationInfo info() const { return Eigen::Success; }
  void set(SparseLU<double>* lu, bool single) {
    lu_ = lu;
    single_ = single;
  }
  // lu^-1 x in place, in single precision where `single` and the solver has it (SparseLU::precondition).
  static void apply(SparseLU<double>& lu, bool single, double* x) {
    if (single)
      lu.precondition(x);
    else
      lu.solve(x);
  }
  // The next solve() returns r (lu^-1 of the vector it is given, computed by the caller).
  void prime(const Eigen::VectorXd* r) { primed_ = r; }

 private:
  SparseLU<double>* lu_ = nullptr;
  bool single_ = false;
  mutable const Eigen::VectorXd* primed_ = nullptr;
};

}  // namespace

KrylovResult gmres_with_factors(int n, const int* Ap, const int* Ai, const double* Ax, SparseLU<double>& lu, double* b,
                                int max_its, double tol, const double* guess) {
  using Mat = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;
  using Eigen::VectorXd;
  const Eigen::Map<const Mat> A(n, n, Ap[n], Ap, Ai, Ax);
  Eigen::GMRES<Mat, FactorsPreconditioner> g;
  const bool single = tol >= kSinglePrecisionTol;
  g.preconditioner().set(&lu, single);
  g.compute(A);
  // The correction d from the start x0 (the guess, or 0): A d = p = b - A x0, r = lu^-1 p its first estimate; the
  // tolerance, tol |x| (|x| estimated by |x0 + r|), relative to |r|.
  VectorXd x0 = VectorXd::Zero(n);
  if (guess) x0 = Eigen::Map<const VectorXd>(guess, n);
  VectorXd p = Eigen::Map<const VectorXd>(b, n);
  if (guess) p.noalias() -= A * x0;
  VectorXd r = p;
  FactorsPreconditioner::apply(lu, single, r.data());
  const double rnorm = r.norm();
  const double scale = guess ? (x0 + r).norm() : rnorm;
  KrylovResult res;
  if (!(rnorm > tol * scale)) {  // the start, corrected by r, is within the tolerance already (or r is not finite)
    res.error = scale > 0 ? rnorm / scale : 0.0;
    res.converged = std::isfinite(rnorm) && r.allFinite();
    if (res.converged) Eigen::Map<VectorXd>(b, n) = x0 + r;
    return res;
  }
  const double rel = tol * scale / rnorm;  // asked of the correction, relative to its start
  VectorXd d = VectorXd::Zero(n);
  // First kProbeIterations; then, unless the error is still above kGiveUp (factors too far from A to pay), the rest
  // as a restart from there, to the remaining factor of the tolerance.
  const int first = std::min(max_its, kProbeIterations);
  double reached = 1.0;
  g.preconditioner().prime(&r);  // (GMRES starts with lu^-1 p: r)
  for (int its : {first, max_its - first}) {
    if (its <= 0) break;
    g.set_restart(its);
    g.setMaxIterations(its);
    g.setTolerance(rel / reached);
    d = g.solveWithGuess(p, d);
    g.preconditioner().prime(nullptr);
    res.iterations += static_cast<int>(g.iterations());
    reached *= g.error();
    const bool failed = g.info() != Eigen::NoConvergence && g.info() != Eigen::Success;
    if (failed || reached <= rel || !(reached <= kGiveUp)) break;  // (NaN: given up)
  }
  res.error = reached * rnorm / scale;
  res.converged = reached <= rel && d.allFinite();
  if (res.converged) Eigen::Map<VectorXd>(b, n) = x0 + d;
  return res;
}

}  // namespace anasim
