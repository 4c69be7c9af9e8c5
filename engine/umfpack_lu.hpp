// Sparse LU with SuiteSparse UMFPACK (multifrontal, dense frontal matrices through BLAS) on a METIS
// nested-dissection ordering or a given one: symbolic analysis once per pattern, a numeric factorization per
// value set.
// SparseLU (sparse_lu.hpp) chooses it over KLU for large matrices whose factors fill in (grid-like arrays), through
// the MultifrontalLU interface: this file is built into the module libanasim_umfpack.so (engine/module.hpp), which
// exports one factory per value type (anasim_umfpack_new_real, anasim_umfpack_new_complex). The tests build it in.
#pragma once
#include <complex>
#include <memory>
#include <vector>
#include <SuiteSparse_config.h>
#include "engine/multifrontal_lu.hpp"

namespace anasim {

// One UMFPACK factorization of one n x n CSC pattern; T = double or std::complex<double>.
template <class T>
class UmfpackLU final : public MultifrontalLU<T> {
 public:
  UmfpackLU();
  ~UmfpackLU() override;
  UmfpackLU(const UmfpackLU&) = delete;
  UmfpackLU& operator=(const UmfpackLU&) = delete;

  // From this many unknowns UMFPACK runs with 64-bit indices (umfpack_dl_, umfpack_zl_). With 32-bit ones its
  // numeric factorization resets a counter that grows by n + 1 per frontal matrix before it overflows, every
  // ~2^31 / n fronts, by a pass over all elements created so far: work growing as (fronts)^2 n / 2^31. On the
  // 1024x1024 crossbar (2.1 million unknowns) that pass (in umf_create_element) was 53% of the run: the operating
  // point took 21.5 s, with 64-bit indices 11.7 s (peak memory 2.46 -> 3.14 GB). Below, 32-bit indices measured as
  // fast or faster and smaller: the 512x512 crossbar op (526,848 unknowns) 2.3-2.4 s either way, 592 MB against
  // 762 MB; the 256x256 crossbar transient (132,352 unknowns, 1,197 solves) 38.3 s against 40.7 s.
  static constexpr int kLongIndexMinUnknowns = 1 << 20;

  // Symbolic analysis (symmetric strategy) of pattern (Ap size n+1, Ai size nnz) on the fill-reducing order
  // `order` (size n, a permutation: order[k] = the unknown eliminated k-th) or, without one, on METIS nested
  // dissection of A + A^T; the arrays must outlive this object (order need not). Returns false if UMFPACK
  // rejects the pattern (or the order) or runs out of memory.
  bool analyze(int n, const int* Ap, const int* Ai, const int* order = nullptr) override;
  // The analysis of `o` (analyzed) shared instead of repeated: its Symbolic object (read-only in every numeric
  // factorization) and pattern, this object's factorizations its own. For several factorizations of one pattern
  // held at once (NewtonSolver's cache): a symbolic analysis with METIS costs about a numeric factorization.
  void share_analysis(const UmfpackLU& o);
  std::unique_ptr<MultifrontalLU<T>> sibling() const override;  // a new object with share_analysis(*this)
  bool analyzed() const override { return symbolic_ != nullptr; }
  // 64-bit indices from the next analyze() whatever the size (for tests of that path); default off.
  void force_long_indices(bool on) { force_long_ = on; }
  bool long_indices() const { return long_pattern_ != nullptr; }
  // Numeric factorization of values Ax (size nnz), kept (copied) for the iterative refinement of solve().
  // Returns false if the matrix is singular (or memory runs out).
  bool factor(const T* Ax) override;
  // Solves A x = b in place (b size n), with up to two steps of iterative refinement against the factored A.
  // Without refinement, a real factorization with 32-bit indices that is used for kPlainAfterSolves solves is
  // copied out of UMFPACK into plain row-form L and U (umfpack_di_get_numeric) and UMFPACK's copy freed: its
  // later solves are two passes of sparse dot products (UMFPACK's own solve walks its frontal element lists and
  // scatters U's columns). The 256x256 crossbar transient (1,196 solves of 34 factorizations of 132,352 unknowns,
  // 5.7 M entries of L and U; the copy takes ~40 ms) measured 31.6 -> 28.4 s, with 12 bytes per entry held
  // instead of UMFPACK's ~9 (peak 1.11 -> 1.40 GB). The same solution up to rounding (the sums' order differs).
  void solve(T* b) override;
  // A real factorization in its plain form: L and U's values rounded to float (made on the first call after a
  // factorization), each row's sum in double; else solve().
  void precondition(T* b) override;
  static constexpr long kPlainAfterSolves = 3;  // (2: an operating point with power probes, one extra solve, would copy)
  bool plain() const { return plain_ != nullptr; }  // the factorization is held in the plain arrays
  // The plain arrays' substitutions run on two threads (where OpenMP has two outside a parallel region).
  bool split_substitution() const { return plain_ && !plain_->lrows[0].empty(); }
  long factorizations() const override { return n_factor_; }
  // Iterative refinement in solve() (default on, UMFPACK's default of up to 2 steps) or none.
  void set_refinement(bool on) override;
  // Nonzeros of L and U (including the diagonal) of the last factorization.
  double factor_entries() const override { return lu_entries_; }

 private:
  void free_numeric();
  int n_ = 0;
  const int* Ap_ = nullptr;
  const int* Ai_ = nullptr;
  struct LongPattern {        // the pattern with 64-bit indices (kLongIndexMinUnknowns)
    std::vector<SuiteSparse_long> Ap, Ai;
  };
  void workspace();            // sizes the solve workspace for n_
  bool force_long_ = false;
  std::shared_ptr<const LongPattern> long_pattern_;  // set exactly when the analysis uses 64-bit indices
  std::vector<T> ax_;          // size nnz: the factored values (refinement reads them)
  std::vector<double> control_, info_;
  std::shared_ptr<void> symbolic_;  // UMFPACK's Symbolic object, shared by share_analysis
  void* numeric_ = nullptr;
  std::vector<int> wi_;        // size n: solve workspace (32-bit indices)
  std::vector<SuiteSparse_long> wl_;  // size n: solve workspace (64-bit indices)
  std::vector<double> w_;      // size 5n (real) or 10n (complex): solve workspace
  std::vector<T> x_;           // size n: solution before it is copied back into b
  long n_factor_ = 0;
  double lu_entries_ = 0;
  // The factorization in plain arrays (real, 32-bit, no refinement): P R A Q = L U with R = diag(Rs) (recip: R b
  // is Rs .* b, else b ./ Rs); L unit lower triangular without its diagonal, U strictly upper triangular, both in
  // row form (CSR), U's diagonal apart.
  struct Plain {
    std::vector<int> Lp, Lj, Up, Uj, P, Q;
    std::vector<double> Lx, Ux, Udiag, Rs, y;
    std::vector<float> Lxf, Uxf;  // precondition(): Lx and Ux rounded (empty until then)
    bool recip = false;
    // Two-thread substitution (split_rows): L's rows below l_top fall into two sets lrows[0], lrows[1] (ascending)
    // that reference no row of the other set; so do U's rows below u_top (urows, descending). The forward solve
    // runs the two sets side by side, then the rows from l_top on; the back solve the rows from u_top down first,
    // then the two sets side by side. Empty sets: one thread.
    int l_top = 0, u_top = 0;
    std::vector<int> lrows[2], urows[2];
  };
  std::unique_ptr<Plain> plain_;
  long solves_ = 0;  // solves since the factorization
  bool make_plain();  // from numeric_ (then freed); false (numeric_ kept) if UMFPACK's arrays are not as expected
  void plain_solve(double* b);
  template <class V>
  void plain_solve_values(double* b, const V* Lx, const V* Ux);  // plain_solve with these values of L and U
};

extern template class UmfpackLU<double>;
extern template class UmfpackLU<std::complex<double>>;

}  // namespace anasim
