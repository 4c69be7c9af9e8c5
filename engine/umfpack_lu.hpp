// Sparse LU with SuiteSparse UMFPACK (multifrontal, dense frontal matrices through BLAS) on a METIS
// nested-dissection ordering or a given one: symbolic analysis once per pattern, a numeric factorization per
// value set.
// SparseLU (sparse_lu.hpp) chooses it over KLU for large matrices whose factors fill in (grid-like arrays).
#pragma once
#include <complex>
#include <vector>

namespace anasim {

// One UMFPACK factorization of one n x n CSC pattern; T = double or std::complex<double>.
template <class T>
class UmfpackLU {
 public:
  UmfpackLU();
  ~UmfpackLU();
  UmfpackLU(const UmfpackLU&) = delete;
  UmfpackLU& operator=(const UmfpackLU&) = delete;

  // Symbolic analysis (symmetric strategy) of pattern (Ap size n+1, Ai size nnz) on the fill-reducing order
  // `order` (size n, a permutation: order[k] = the unknown eliminated k-th) or, without one, on METIS nested
  // dissection of A + A^T; the arrays must outlive this object (order need not). Returns false if UMFPACK
  // rejects the pattern (or the order) or runs out of memory.
  bool analyze(int n, const int* Ap, const int* Ai, const int* order = nullptr);
  // Numeric factorization of values Ax (size nnz), kept (copied) for the iterative refinement of solve().
  // Returns false if the matrix is singular (or memory runs out).
  bool factor(const T* Ax);
  // Solves A x = b in place (b size n), with up to two steps of iterative refinement against the factored A.
  void solve(T* b);
  long factorizations() const { return n_factor_; }
  // Iterative refinement in solve() (default on, UMFPACK's default of up to 2 steps) or none.
  void set_refinement(bool on);
  // Nonzeros of L and U (including the diagonal) of the last factorization.
  double factor_entries() const { return lu_entries_; }

 private:
  void free_numeric();
  int n_ = 0;
  const int* Ap_ = nullptr;
  const int* Ai_ = nullptr;
  std::vector<T> ax_;          // size nnz: the factored values (refinement reads them)
  std::vector<double> control_, info_;
  void* symbolic_ = nullptr;
  void* numeric_ = nullptr;
  std::vector<int> wi_;        // size n: solve workspace
  std::vector<double> w_;      // size 5n (real) or 10n (complex): solve workspace
  std::vector<T> x_;           // size n: solution before it is copied back into b
  long n_factor_ = 0;
  double lu_entries_ = 0;
};

extern template class UmfpackLU<double>;
extern template class UmfpackLU<std::complex<double>>;

// Estimated LU work of the fill-reducing minimum-degree ordering KLU uses (AMD on A + A^T): entries of L
// (below the diagonal) and multiply-subtract pairs of an LU factorization; perm (optional) receives the
// ordering (size n). Returns false if AMD fails.
bool amd_fill_estimate(int n, const int* Ap, const int* Ai, double& lnz, double& flops,
                       std::vector<int>* perm = nullptr);

}  // namespace anasim
