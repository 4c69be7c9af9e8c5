// The multifrontal sparse LU that SparseLU (sparse_lu.hpp) chooses over KLU for large matrices whose factors fill in
// (grid-like arrays), as an interface: its implementation, UMFPACK (engine/umfpack_lu.hpp), is the module "umfpack"
// (engine/module.hpp), loaded the first time such a matrix is factored, so that the many runs which never factor
// one do not load UMFPACK and the OpenBLAS under it.
#pragma once
#include <complex>
#include <memory>
#include <string>
#include <vector>

namespace anasim {

// One factorization of one n x n CSC pattern; T = double or std::complex<double>. The contracts are UmfpackLU's.
template <class T>
class MultifrontalLU {
 public:
  virtual ~MultifrontalLU() = default;
  // Symbolic analysis of pattern (Ap, Ai), on the fill-reducing order `order` (size n; nullptr: the back-end's
  // nested dissection). The arrays must outlive this object (order need not). false if rejected.
  virtual bool analyze(int n, const int* Ap, const int* Ai, const int* order) = 0;
  virtual bool analyzed() const = 0;
  // A new object of the same pattern that shares this one's analysis (analyzed), with factorizations of its own.
  virtual std::unique_ptr<MultifrontalLU> sibling() const = 0;
  // Numeric factorization of values Ax (size nnz, copied); false if singular (or out of memory).
  virtual bool factor(const T* Ax) = 0;
  // Solves A x = b in place (b size n).
  virtual void solve(T* b) = 0;
  // As solve(), to the accuracy a preconditioner needs (GMRES's, engine/krylov.hpp): the factors may be applied
  // rounded to single precision (relative error ~1e-7; half the memory traffic of their values).
  virtual void precondition(T* b) { solve(b); }
  // Iterative refinement in solve() (default on) or none.
  virtual void set_refinement(bool on) = 0;
  virtual long factorizations() const = 0;
  // Nonzeros of L and U (including the diagonal) of the last factorization.
  virtual double factor_entries() const = 0;
};

// A new, unanalyzed UMFPACK factorization, the module loaded on first use; nullptr if it cannot be loaded (error,
// if given, says why).
template <class T>
std::unique_ptr<MultifrontalLU<T>> make_umfpack_lu(std::string* error = nullptr);

// Estimated LU work of the fill-reducing minimum-degree ordering KLU uses (AMD on A + A^T): entries of L
// (below the diagonal) and multiply-subtract pairs of an LU factorization; perm (optional) receives the
// ordering (size n). Returns false if AMD fails.
bool amd_fill_estimate(int n, const int* Ap, const int* Ai, double& lnz, double& flops,
                       std::vector<int>* perm = nullptr);

}  // namespace anasim
