// Sparse LU with SuiteSparse KLU: symbolic analysis once per pattern, klu_factor once, then klu_refactor
// while the pattern holds (falling back to a full pivoting factor when refactor becomes ill-conditioned); on a small
// matrix the refactorizations of a pivot order used often run compiled (engine/compiled_lu.hpp).
// One template serves the real (DC, transient) and complex (AC) systems.
//
// Large real systems (at least kSplitMinUnknowns unknowns, two or more OpenMP threads available and not
// already inside a parallel region) are split once into two halves and a small vertex separator S
// (one level of nested dissection, from a breadth-first level structure of A + A^T):
//
//     [ A11       A1S ]   Each half A_kk is its own KLU factorization, ordered by CAMD with the unknowns
//     [      A22  A2S ]   that touch S last, and both are factored side by side on two threads. The separator
//     [ AS1  AS2  ASS ]   system S = ASS - sum_k ASk A_kk^-1 AkS (dense, |S| x |S|) comes from the trailing
//                         corners of each half's L and U and is factored with partial pivoting (Eigen).
//
// A split is only an evaluation order: if a half or S is singular or ill-conditioned, or pivoting moved the
// coupling rows away from the trailing corner, the object falls back for good to one KLU factorization of
// the whole matrix, whose result (and singular unknown) is then reported. Measured on the crossbar decks of
// bench/gen_crossbar.py (2 threads): 256x64 (33,472 unknowns, separator 131) analysis + factorization
// 0.11 s -> 0.06 s; 128x64 op 0.051 -> 0.030 s; 128x32 0.014 -> 0.010 s; but 64x64 (8,448 unknowns, a
// diagonal separator) 0.019 -> 0.022 s, hence the threshold.
// Orderings measured on that deck: METIS nested dissection halves the flops (5.8e7 vs 1.5e8) but costs
// 0.12-0.14 s itself; COLAMD gives twice the flops of AMD.
//
// Solver choice (LinearSolver, .options solver): before any of the factorizations below, Auto (from
// kIterativeMinUnknowns unknowns) and Pcg try conjugate gradients on the system's nodal core (NodalPcg,
// engine/nodal_pcg.hpp): where grounded sources eliminated leave a symmetric, diagonally dominant system (a
// resistive crossbar), a few dozen O(n) steps replace a factorization that fills in (784x128 crossbar deck's op:
// 0.15 s against the split's 1.0 s). The direct analysis waits until they turn out not to apply: values not
// symmetric or not dominant at factor(), or too slow a convergence in solve().
// KLU is a left-looking LU without dense kernels, right for
// circuit matrices whose factors stay sparse. On a large grid-like matrix (a crossbar of 10^5..10^6 unknowns)
// the factors fill in to long columns, and UMFPACK's multifrontal LU on a nested-dissection ordering (dense
// fronts through BLAS, O(n^1.5) work on a 2-D grid) is the right tool. Auto measures the fill of the ordering
// KLU would use (AMD) on matrices of at least kMultifrontalMinUnknowns unknowns and takes UMFPACK when the LU
// work exceeds kMultifrontalMinFlops multiply-subtract pairs: the METIS ordering costs about what KLU's
// whole factorization of the 256x64 crossbar deck does (0.12 s against 0.11 s, 1.5e8 pairs), so UMFPACK
// only pays where the factorization is several times that.
//
// UMFPACK's ordering: METIS costs ~18,000 instructions per unknown (0.77 s of CPU on the 784x128 crossbar deck,
// more than UMFPACK's numeric factorization, 0.32 s); AMD's order, computed anyway for auto's choice, costs
// nothing more. UMFPACK on AMD's order is faster as long as AMD's LU work stays below kAmdMaxPairsPerUnknown
// pairs per unknown (measured with one thread, CPU seconds of symbolic + numeric + solve: 784x128 deck
// 7,000 pairs per unknown, AMD 0.84 s against METIS 1.29 s; 512x512 crossbar 37,000, AMD 3.66 s against
// METIS 4.0 s; 1024x1024 90,000, AMD runs out of memory). A caller that knows a fill-reducing order for most
// of the unknowns (set_ordering_hint: a crossbar's nested dissection by its rows and columns) saves both
// orderings: 512x512 crossbar 1.7 s (5.0e9 flops against METIS's 6.8e9), 1024x1024 18.6 s against 32.5 s.
#pragma once
#include <complex>
#include <functional>
#include <memory>
#include <vector>
#include <klu.h>
#include "engine/compiled_lu.hpp"
#include "engine/linear_solver.hpp"
#include "engine/multifrontal_lu.hpp"
#include "engine/nodal_pcg.hpp"

namespace anasim {

// One KLU factorization of one n x n CSC pattern.
template <class T>
class KluLU {
 public:
  KluLU();
  ~KluLU();
  KluLU(const KluLU&) = delete;
  KluLU& operator=(const KluLU&) = delete;

  // Symbolic analysis; arrays must outlive this object. constraint (size n, optional, copied) orders the
  // unknowns by CAMD constraint set (set 0 first) instead of KLU's BTF + AMD. Returns false if KLU rejects it.
  bool analyze(int n, const int* Ap, const int* Ai, const int* constraint = nullptr);
  // Numeric factorization of values Ax (size nnz): klu_refactor with the last pivot order when it stays
  // well-conditioned, otherwise klu_factor. Returns false if singular (singular_unknown() names the column).
  bool factor(const T* Ax);
  void solve(T* b);
  int singular_unknown() const { return singular_col_; }
  // Lets refactorizations of a small matrix run as a CompiledLU (engine/compiled_lu.hpp) on KLU's pivot order
  // (off by default: numeric() then no longer holds the factors after a refactorization).
  void allow_compiled(bool on) { allow_compiled_ = on; }
  // Refactorizations with one pivot order before it is compiled: compiling costs tens of KLU refactorizations,
  // which the few of a linear circuit (one per step size) would not repay.
  static constexpr int kCompileAfterRefactors = 16;
  // Whether the last factor() kept the pivot order (klu_refactor) rather than pivoting anew (klu_factor).
  bool last_was_refactor() const { return last_refactor_; }
  // klu_factor and klu_refactor calls so far (a refactor that falls back to a full factor counts as both).
  long factorizations() const { return n_factor_; }
  long refactorizations() const { return n_refactor_; }
  klu_symbolic* symbolic() { return symbolic_; }
  // KLU's numeric object: the factors of the last full factorization, and of the last refactorization unless
  // allow_compiled() is on.
  klu_numeric* numeric() { return numeric_; }
  // Bytes the last factorization holds (0 before the first): L and U (an int index and a value per entry), U's
  // diagonal, the row scaling, the six n-sized index arrays, the solve workspace and the off-diagonal blocks of
  // KLU's numeric object, plus a CompiledLU's.
  double factor_bytes() const {
    return numeric_ ? klu_bytes() + compiled_.bytes() : 0.0;
  }

 private:
  double klu_bytes() const {
    const double n = numeric_->n;
    return 12.0 * (static_cast<double>(numeric_->lnz) + numeric_->unz) + n * (sizeof(T) + sizeof(double)) +
           6 * 4 * n + static_cast<double>(numeric_->worksize) + (sizeof(T) + 4.0) * numeric_->nzoff + 4 * (n + 1);
  }
  // Estimated reciprocal condition number of the last factorization (cheap: min / max of U's diagonal, rows
  // scaled by their largest entry at the last full factorization).
  double rcond();
  bool full_factor(const T* Ax);
  void free_numeric();
  int n_ = 0;
  const int* Ap_ = nullptr;
  const int* Ai_ = nullptr;
  std::vector<int> constraint_;
  klu_common common_;
  klu_symbolic* symbolic_ = nullptr;
  klu_numeric* numeric_ = nullptr;
  int singular_col_ = -1;
  std::vector<double> inv_rs_;  // size n: 1 / row scale factor of the k-th pivot row, from the last full factor
  bool scaled_ = false;         // the current LU is of the row-scaled matrix (full factor), not a refactor
  bool last_refactor_ = false;
  long n_factor_ = 0, n_refactor_ = 0;
  bool allow_compiled_ = false;
  CompiledLU<T> compiled_;  // a pivot order of KLU's, compiled (small matrices with allow_compiled_ only)
  bool compiled_current_ = false;  // compiled_ is of the last full factorization's pivot order
  bool compiled_live_ = false;     // the current factors are compiled_'s (a refactorization), not KLU's
  int refactors_on_order_ = 0;     // refactorizations since the last full factorization
};

struct SplitLU;  // the two-half evaluation (real systems only), split_lu.hpp

// Solver of A x = b for one sparsity pattern: one KluLU, or two halves and a separator (see above).
template <class T>
class SparseLU {
 public:
  // Unknowns from which a real system is split in two halves when two threads are available.
  static constexpr int kSplitMinUnknowns = 12000;
  // Auto takes UMFPACK from this many unknowns, if AMD's LU work is at least kMultifrontalMinFlops
  // multiply-subtract pairs (see the file comment).
  static constexpr int kMultifrontalMinUnknowns = 20000;
  static constexpr double kMultifrontalMinFlops = 1e9;
  // UMFPACK runs on AMD's order (rather than METIS's) up to this LU work per unknown (see the file comment).
  static constexpr double kAmdMaxPairsPerUnknown = 2e4;
  // Auto tries conjugate gradients on the nodal core (NodalPcg) of real systems from this many unknowns, and from
  // kIterativeMinUnknownsOnce where the values are factored once (set_single_factorization). Measured on the
  // crossbar decks' operating points (KLU against CG, op phase): 64x16 (2,200 unknowns) 1.9 -> 0.8 ms, 128x32
  // 13 -> 3.6 ms, 256x64 61 -> 17 ms. In a transient, KLU's cached factorizations solve a small system's steps
  // for less than CG's iterations (crossbar 64x16 with line capacitance: 0.11 s against 0.18 s); from 20,000
  // unknowns CG's steps cost about what the factorizations do (256x256, 131,000 unknowns: 23.8 s against
  // UMFPACK's 24.6 s) in less memory (1.1 against 1.4 GB).
  static constexpr int kIterativeMinUnknowns = 20000;
  static constexpr int kIterativeMinUnknownsOnce = 1000;
  // Share of the unknowns an ordering hint must cover to be used.
  static constexpr double kHintMinShare = 0.9;

  SparseLU();
  ~SparseLU();
  SparseLU(const SparseLU&) = delete;
  SparseLU& operator=(const SparseLU&) = delete;

  // Which solver analyze() uses (default Auto); takes effect at the next analyze().
  void set_solver(LinearSolver s) { solver_ = s; }
  // A fill-reducing elimination order known to the caller for some of the unknowns (each at most once, in
  // elimination order; e.g. a crossbar's nested dissection by its geometry); the other unknowns go first, in
  // AMD's order of the matrix they form. Used at the next analyze() if it covers at least kHintMinShare of the
  // unknowns and UMFPACK runs (Umfpack, or Auto from kMultifrontalMinUnknowns unknowns).
  void set_ordering_hint(std::vector<int> order) {
    hint_ = std::move(order);
    hint_source_ = nullptr;
  }
  // The same, computed by `source` only when a factorization first needs it (never where conjugate gradients
  // solve the system: the 784x128 crossbar deck's hint is a walk over its 302,000 devices). `source` must stay
  // callable for this object's life (and its siblings').
  void set_ordering_hint(std::function<std::vector<int>()> source) {
    hint_.clear();
    hint_source_ = std::move(source);
  }
  // Whether the caller factors this pattern's values only once (a linear circuit without states: its operating
  // point). Only then does UMFPACK take AMD's order where its fill is moderate (kAmdMaxPairsPerUnknown): with many
  // numeric factorizations (Newton on a nonlinear circuit, a transient's step changes) METIS's ordering is paid
  // once and its smaller fill every time (the shipped 784-128-10 network's transient netlist, 411,534 unknowns:
  // 0.9 s of CPU per factorization on METIS's order against 2.9-3.3 s on AMD's). Default false.
  void set_single_factorization(bool once) { single_ = once; }
  // A new solver for this one's pattern and settings, analyzed: with UMFPACK its analysis is shared (one symbolic
  // analysis for every factorization NewtonSolver's cache holds), otherwise it is repeated. Unfactored.
  std::unique_ptr<SparseLU> sibling() const;
  // Auto's choice for pattern (n, Ap, Ai): whether UMFPACK's factorization is worth it (see the file comment).
  static bool prefers_multifrontal(int n, const int* Ap, const int* Ai);
  // The solver in use: Pcg (conjugate gradients, until they fail to apply), Umfpack or Klu.
  LinearSolver solver() const {
    return pcg_ ? LinearSolver::Pcg : umfpack_ ? LinearSolver::Umfpack : LinearSolver::Klu;
  }
  // Conjugate-gradient steps of all solves so far.
  long cg_iterations() const { return cg_its_ + (pcg_ ? pcg_->iterations() : 0); }
  // Symbolic analysis of an n x n CSC pattern (Ap size n+1, Ai size nnz). Arrays must outlive this object.
  // Returns false if KLU (or UMFPACK) rejects the pattern.
  bool analyze(int n, const int* Ap, const int* Ai);
  // Numeric factorization of values Ax (size nnz). Reuses the pivot order (klu_refactor) when possible
  // (UMFPACK: the symbolic analysis). Returns false if the matrix is singular; singular_unknown() then names
  // the column (unknown), from a KLU factorization of the matrix when UMFPACK found it singular. With conjugate
  // gradients, the preconditioner's factorization (and a copy of Ax, for the fallback below); where they do not
  // apply to these values, the direct solver from here on.
  bool factor(const T* Ax);
  // Solves A x = b in place (b size n). Conjugate gradients that give up hand the system to the direct solver for
  // good (factored from the copy of the values); should that find it singular, b is set to NaN. `start` (optional,
  // size n): where conjugate gradients start (NodalPcg::solve); the direct solvers ignore it.
  void solve(T* b, const T* start = nullptr);
  // As solve(), to a preconditioner's accuracy: UMFPACK's factors may be applied in single precision
  // (MultifrontalLU::precondition); the other solvers solve.
  void precondition(T* b);
  int singular_unknown() const { return whole_.singular_unknown(); }
  // Factorizations so far: KLU calls on the whole matrix plus two-half factorizations (one each), plus
  // UMFPACK numeric factorizations, plus the conjugate gradients' preconditioner factorizations.
  long factorizations() const {
    return n_factor_ + pcg_factor_ + whole_.factorizations() + (umfpack_ ? umfpack_->factorizations() : 0);
  }
  long refactorizations() const { return n_refactor_ + whole_.refactorizations(); }
  long solves() const { return n_solve_; }
  bool factored() const { return factored_; }
  // Whether the last factorization was the two-half one, and the separator size (0 if not split, or if the
  // halves are disconnected circuits).
  bool split() const { return split_ != nullptr; }
  int separator_size() const;
  // Whether UMFPACK's solves refine iteratively (default on; KLU's never do).
  void set_refinement(bool on) {
    if (umfpack_) umfpack_->set_refinement(on);
  }
  // Bytes held by the current factorization (L and U of the whole matrix or of the two halves with KLU's
  // workspaces, the separator's dense blocks; UMFPACK: 12 bytes per entry of L and U); 0 before the first
  // factor(). For the caller's memory budget (NewtonSolver's cache).
  double factor_bytes() const;
  // Allows (default) or forbids the two-half evaluation; takes effect at the next analyze().
  void allow_split(bool on) { allow_split_ = on; }

 private:
  bool factor_whole(const T* Ax);
  // analyze()'s direct part (KLU, the split or UMFPACK), also run when conjugate gradients stop applying.
  bool analyze_direct();
  // Conjugate gradients stop applying, here and in siblings: counts their steps, drops them and returns the values
  // they were factored from.
  std::vector<double> drop_pcg();
  // Auto's multifrontal choice for (n, Ap, Ai) (or Umfpack's): UMFPACK analyzed into umfpack_, or false (KLU).
  bool analyze_multifrontal(int n, const int* Ap, const int* Ai);
  // The full elimination order from hint_ (the unknowns it leaves out first, by AMD), or empty if the hint
  // does not apply to pattern (n, Ap, Ai).
  std::vector<int> hinted_order(int n, const int* Ap, const int* Ai) const;
  int n_ = 0;
  // set_ordering_hint's order: hint() takes it from hint_source_ on first use.
  const std::vector<int>& hint() const {
    if (hint_source_) {
      hint_ = hint_source_();
      hint_source_ = nullptr;
    }
    return hint_;
  }
  mutable std::vector<int> hint_;
  mutable std::function<std::vector<int>()> hint_source_;
  bool single_ = false;    // set_single_factorization
  const int* Ap_ = nullptr;
  const int* Ai_ = nullptr;
  KluLU<T> whole_;
  bool whole_analyzed_ = false;
  std::unique_ptr<SplitLU> split_;
  bool split_pending_ = false;  // try to split at the first factor (needs the values for zero diagonals)
  bool choose_later_ = false;   // and if no split is found, make the multifrontal choice then
  bool allow_split_ = true;
  LinearSolver solver_ = LinearSolver::Auto;
  std::unique_ptr<MultifrontalLU<T>> umfpack_;  // set when UMFPACK was chosen (and its module loaded)
  std::unique_ptr<NodalPcg> pcg_;               // set while conjugate gradients apply (real systems)
  std::vector<double> pcg_A_;                   // the values pcg_ was factored from
  long pcg_factor_ = 0, cg_its_ = 0;            // preconditioner factorizations; steps of a dropped pcg_
  bool no_pcg_ = false;                         // they did not apply here (nor, then, to siblings)
  bool factored_ = false;
  long n_factor_ = 0, n_refactor_ = 0, n_solve_ = 0;  // n_factor_, n_refactor_: two-half factorizations
};

extern template class KluLU<double>;
extern template class KluLU<std::complex<double>>;
extern template class SparseLU<double>;
extern template class SparseLU<std::complex<double>>;

}  // namespace anasim
