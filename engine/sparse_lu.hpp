// Sparse LU with SuiteSparse KLU: symbolic analysis once per pattern, klu_factor once, then klu_refactor
// while the pattern holds (falling back to a full pivoting factor when refactor becomes ill-conditioned).
// One template serves the real (DC, transient) and complex (AC) systems.
// KLU's defaults apply: BTF (block triangular form, a no-op for a matrix that is one block) and AMD ordering of
// A + A^T. Measured on the 256x64 crossbar (33,472 unknowns): METIS nested dissection halves the factorization
// (5.8e7 vs 1.5e8 flops) but the ordering itself costs more CPU than it saves (0.11-0.15 s vs AMD's 0.01 s), with
// any METIS options tried; COLAMD gives 50% more fill. A METIS ordering would pay off only where one pattern
// is refactored many times (long transients of large grids).
#pragma once
#include <complex>
#include <vector>
#include <klu.h>

namespace anasim {

template <class T>
class SparseLU {
 public:
  SparseLU();
  ~SparseLU();
  SparseLU(const SparseLU&) = delete;
  SparseLU& operator=(const SparseLU&) = delete;

  // Symbolic analysis of an n x n CSC pattern (Ap size n+1, Ai size nnz). Arrays must outlive this object.
  // Returns false if KLU rejects the pattern.
  bool analyze(int n, const int* Ap, const int* Ai);
  // Numeric factorization of values Ax (size nnz). Reuses the pivot order (klu_refactor) when possible.
  // Returns false if the matrix is singular; singular_unknown() then names the column (unknown).
  bool factor(const T* Ax);
  // Solves A x = b in place (b size n).
  void solve(T* b);
  int singular_unknown() const { return singular_col_; }
  long factorizations() const { return n_factor_; }
  long refactorizations() const { return n_refactor_; }
  long solves() const { return n_solve_; }
  bool factored() const { return numeric_ != nullptr; }
  // Estimated reciprocal condition number of the last factorization (cheap: min / max of U's diagonal, rows
  // scaled by their largest entry at the last full factorization).
  double rcond();

 private:
  bool full_factor(const T* Ax);
  int n_ = 0;
  const int* Ap_ = nullptr;
  const int* Ai_ = nullptr;
  klu_common common_;
  klu_symbolic* symbolic_ = nullptr;
  klu_numeric* numeric_ = nullptr;
  int singular_col_ = -1;
  std::vector<double> inv_rs_;  // size n: 1 / row scale factor of the k-th pivot row, from the last full factor
  bool scaled_ = false;         // the current LU is of the row-scaled matrix (full factor), not a refactor
  long n_factor_ = 0, n_refactor_ = 0, n_solve_ = 0;
};

extern template class SparseLU<double>;
extern template class SparseLU<std::complex<double>>;

}  // namespace anasim
