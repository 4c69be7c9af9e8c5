// Newton's linear solves with the factors of an earlier matrix: GMRES (Eigen's, unsupported/IterativeSolvers) on
// A x = b, preconditioned by a SparseLU factored from other values of A's pattern (the previous Newton iteration's,
// or the previous time point's). Where a large circuit's Jacobian changes little from one solve to the next (a
// crossbar's hundreds of thousands of linear unknowns around a periphery of op-amps), a few such iterations cost a
// small part of a new factorization.
#pragma once
#include "engine/sparse_lu.hpp"

namespace anasim {

struct KrylovResult {
  bool converged = false;
  int iterations = 0;  // preconditioned iterations taken
  double error = 0;    // the preconditioned residual's norm relative to x's (~ x's relative error)
};

// Solves A x = b, A n x n in CSC form (Ap, Ai, Ax), b in place (size n), with at most max_its iterations, to a
// preconditioned residual |lu^-1 (b - A x)| <= tol |x|: with factors of a nearby matrix that is x's error relative
// to x's norm, to first order. From x = 0, or from `guess` (size n; a Newton iterate): GMRES then solves for the
// correction, whose tolerance is as much looser as the correction is smaller than x (the same absolute error), and
// a guess already within it costs one preconditioner solve. It gives up after kProbeIterations if the correction's
// error relative to its start is still above kGiveUp (the factors are of a matrix too far from A), else goes on
// from there (one restart). On failure (not converged, or not finite) b is left unchanged.
// From tol = kSinglePrecisionTol up, the factors are applied in single precision (SparseLU::precondition: UMFPACK's
// values as float, half their memory traffic; GMRES in double makes up their rounding). Measured (2026-12-02, the
// shipped network's 411,534 unknowns, UMFPACK): its engine transient (tol 1e-10) 10-13% more time points in 112 s;
// `nn eval --reference` (1e-13) 1.92 -> 3.45 s per image, so not there.
constexpr int kProbeIterations = 4;
constexpr double kGiveUp = 1e-3;
constexpr double kSinglePrecisionTol = 1e-10;
KrylovResult gmres_with_factors(int n, const int* Ap, const int* Ai, const double* Ax, SparseLU<double>& lu, double* b,
                                int max_its, double tol, const double* guess = nullptr);

}  // namespace anasim
