// LU refactorization of a small sparse matrix with a fixed pivot order, compiled into flat index lists.
//
// klu_refactor recomputes L and U with the pivot order of the last klu_factor. On a small circuit matrix (tens to
// hundreds of unknowns) each call costs far more in its bookkeeping (block structure, packed column storage,
// scatter and gather through a dense work vector) than in arithmetic: on the 8-stage Cockcroft-Walton multiplier
// (35 unknowns, 102,585 refactorizations) KLU's refactor and solves were 44% of the transient's time. CompiledLU
// takes the pivot order (P, Q) once and derives the pattern of the factors of M = A(P, Q) with no pivoting, as
// compressed rows (L strictly left of the diagonal, then the pivot, then U); refactor() is then a gather of A's
// values into that storage and, row by row, the eliminations with every destination index precomputed.
//
// Numerics: the same elimination as klu_refactor (no pivoting, no scaling), with each entry's updates summed in
// pivot order, where KLU sums them in the order of its depth-first search; results agree to rounding.
//
// Contract: compile() once per pattern and pivot order (cheap to recheck with same_order()); refactor() with
// values in A's CSC order; solve() only after a refactor() that returned true.
#pragma once
#include <complex>
#include <vector>

namespace anasim {

template <class T>
class CompiledLU {
 public:
  // Compiles the elimination of M = A(P, Q) for the n x n CSC pattern (Ap, Ai): row k of M is row P[k] of A,
  // column k of M is column Q[k] of A. Returns false, holding nothing, if the elimination takes more than
  // max_pairs multiply-subtract pairs (then KLU is at least as fast).
  bool compile(int n, const int* Ap, const int* Ai, const int* P, const int* Q, long max_pairs);
  bool compiled() const { return n_ > 0; }
  // Whether compile() was for this pivot order.
  bool same_order(int n, const int* P, const int* Q) const;
  void clear();
  // Factors A (values Ax, size nnz, in the pattern's order). Returns false if a pivot is zero or not finite.
  bool refactor(const T* Ax);
  // |U_kk| of pivot k of the last refactor.
  double pivot_magnitude(int k) const { return std::abs(v_[diag_[k]]); }
  // Solves A x = b in place (b: size n).
  void solve(T* b) const;
  // Bytes held (index lists, values and workspace).
  double bytes() const;
  long pairs() const { return static_cast<long>(dst_.size()); }

 private:
  int n_ = 0;
  std::vector<int> P_, Q_;
  std::vector<int> row_start_;  // n + 1: row i's slots are [row_start_[i], row_start_[i + 1])
  std::vector<int> col_;        // per slot: its column of M (ascending within a row)
  std::vector<int> diag_;       // n: the pivot's slot of each row
  std::vector<int> a_slot_;     // per entry of A: its slot
  std::vector<int> zero_;       // slots zeroed before the gather: fill, or all of them when add_
  bool add_ = false;            // A's pattern has duplicate entries, which are summed
  // The eliminations, row by row: for each entry (i, k) left of row i's pivot, l = M_ik / U_kk, then the
  // entries of U's row k right of its pivot (contiguous slots diag_[k] + 1 .. row_start_[k + 1]) are multiplied
  // by l and subtracted from row i at the slots listed in dst_ (consecutively, in the order of the entries).
  std::vector<int> dst_;
  std::vector<T> v_;        // per slot: the values of L (unit diagonal implied) and U
  std::vector<T> inv_;      // n: 1 / U_kk
  mutable std::vector<T> w_;  // solve workspace, size n
};

extern template class CompiledLU<double>;
extern template class CompiledLU<std::complex<double>>;

}  // namespace anasim
