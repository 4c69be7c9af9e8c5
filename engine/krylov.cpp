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
    Eigen::VectorXd x = b;
    lu_->solve(x.data());
    return x;
  }
  Eigen::ComputationInfo info() const { return Eigen::Success; }
  void set(SparseLU<double>* lu) { lu_ = lu; }

 private:
  SparseLU<double>* lu_ = nullptr;
};

}  // namespace

KrylovResult gmres_with_factors(int n, const int* Ap, const int* Ai, const double* Ax, SparseLU<double>& lu, double* b,
                                int max_its, double tol) {
  using Mat = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;
  const Eigen::Map<const Mat> A(n, n, Ap[n], Ap, Ai, Ax);
  Eigen::GMRES<Mat, FactorsPreconditioner> g;
  g.preconditioner().set(&lu);
  g.compute(A);
  const Eigen::Map<Eigen::VectorXd> rhs(b, n);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  KrylovResult r;
  // First kProbeIterations; then, unless the error is still above kGiveUp (factors too far from A to pay), the rest
  // as a restart from there, to the remaining factor of the tolerance.
  const int first = std::min(max_its, kProbeIterations);
  double reached = 1.0;
  for (int its : {first, max_its - first}) {
    if (its <= 0) break;
    g.set_restart(its);
    g.setMaxIterations(its);
    g.setTolerance(tol / reached);
    x = g.solveWithGuess(rhs, x);
    r.iterations += static_cast<int>(g.iterations());
    reached *= g.error();
    const bool failed = g.info() != Eigen::NoConvergence && g.info() != Eigen::Success;
    if (failed || reached <= tol || !(reached <= kGiveUp)) break;  // (NaN: given up)
  }
  r.error = reached;
  r.converged = reached <= tol && x.allFinite();
  if (r.converged) Eigen::Map<Eigen::VectorXd>(b, n) = x;
  return r;
}

}  // namespace anasim
