// KLU wrapper and SparseLU (see sparse_lu.hpp; the two-half split is split_lu.cpp). KluLU's real and complex
// variants differ only in which klu_ / klu_z_ calls they make.
#include "engine/sparse_lu.hpp"
#include <algorithm>
#include <amd.h>
#include <camd.h>
#include <climits>
#include <limits>
#include <mutex>
#include <cmath>
#include <type_traits>
#include <vector>
#include <fmt/format.h>
#include "engine/module.hpp"
#include "engine/split_lu.hpp"
#include "engine/two_threads.hpp"

namespace anasim {

bool amd_fill_estimate(int n, const int* Ap, const int* Ai, double& lnz, double& flops, std::vector<int>* perm) {
  std::vector<int> own;
  std::vector<int>& p = perm ? *perm : own;
  p.resize(n);
  double control[AMD_CONTROL], info[AMD_INFO];
  amd_defaults(control);
  const int status = amd_order(n, Ap, Ai, p.data(), control, info);
  if (status != AMD_OK && status != AMD_OK_BUT_JUMBLED) return false;
  lnz = info[AMD_LNZ];
  flops = info[AMD_NMULTSUBS_LU];
  return true;
}

template <class T>
std::unique_ptr<MultifrontalLU<T>> make_umfpack_lu(std::string* error) {
  using New = MultifrontalLU<T>*();
  New* make = module::function<New>("umfpack", std::is_same_v<T, double> ? "anasim_umfpack_new_real"
                                                                        : "anasim_umfpack_new_complex", error);
  return std::unique_ptr<MultifrontalLU<T>>(make ? make() : nullptr);
}
template std::unique_ptr<MultifrontalLU<double>> make_umfpack_lu(std::string*);
template std::unique_ptr<MultifrontalLU<std::complex<double>>> make_umfpack_lu(std::string*);

namespace {
// Below this reciprocal pivot growth estimate a refactor (no pivoting) is not trusted.
constexpr double kRefactorRcondLimit = 1e-13;
// KLU row scaling (Common.scale): 2 = by the largest entry of each row, for a full factorization's pivoting;
// -1 = none and no input checks, for refactorizations (row scaling does not change an elimination with fixed
// pivots, so recomputing the scale factors and dividing every entry by them on each Newton iteration only
// costs time).
constexpr int kScaleFactor = 2;
constexpr int kScaleRefactor = -1;
// CompiledLU for refactorizations (allow_compiled): matrices of at most kCompiledMaxUnknowns unknowns whose
// elimination takes at most kCompiledMaxPairs multiply-subtract pairs (4 bytes of index each).
constexpr int kCompiledMaxUnknowns = 4096;
constexpr long kCompiledMaxPairs = 1L << 20;

// KLU user ordering (Common.ordering = 3): CAMD with the constraint sets in Common.user_data. Returns KLU's
// expected estimate of nnz(L) including the diagonal, or 0 on failure.
int camd_user_order(int n, int* Ap, int* Ai, int* Perm, klu_common* common) {
  double control[CAMD_CONTROL], info[CAMD_INFO];
  camd_defaults(control);
  const int status = camd_order(n, Ap, Ai, Perm, control, info, static_cast<const int*>(common->user_data));
  if (status != CAMD_OK && status != CAMD_OK_BUT_JUMBLED) return 0;
  return static_cast<int>(std::min<double>(info[CAMD_LNZ] + n, INT_MAX));
}
}  // namespace

// ---- KluLU ---------------------------------------------------------------------------------------------

template <class T>
KluLU<T>::KluLU() {
  klu_defaults(&common_);
}

template <class T>
KluLU<T>::~KluLU() {
  free_numeric();
  if (symbolic_) klu_free_symbolic(&symbolic_, &common_);
}

template <class T>
void KluLU<T>::free_numeric() {
  if (!numeric_) return;
  if constexpr (std::is_same_v<T, double>) klu_free_numeric(&numeric_, &common_);
  else klu_z_free_numeric(&numeric_, &common_);
  numeric_ = nullptr;
}

template <class T>
bool KluLU<T>::analyze(int n, const int* Ap, const int* Ai, const int* constraint) {
  free_numeric();
  if (symbolic_) klu_free_symbolic(&symbolic_, &common_);
  n_ = n;
  Ap_ = Ap;
  Ai_ = Ai;
  if (constraint) {
    // CAMD sees the whole matrix only without the BTF pre-ordering (which would order blocks by itself).
    constraint_.assign(constraint, constraint + n);
    common_.btf = 0;
    common_.ordering = 3;
    common_.user_order = camd_user_order;
    common_.user_data = constraint_.data();
  }
  compiled_.clear();
  compiled_live_ = compiled_current_ = false;
  symbolic_ = klu_analyze(n, const_cast<int*>(Ap), const_cast<int*>(Ai), &common_);
  return symbolic_ != nullptr;
}

template <class T>
bool KluLU<T>::full_factor(const T* Ax) {
  free_numeric();
  common_.halt_if_singular = 1;
  common_.scale = kScaleFactor;
  if constexpr (std::is_same_v<T, double>)
    numeric_ = klu_factor(const_cast<int*>(Ap_), const_cast<int*>(Ai_), const_cast<double*>(Ax), symbolic_, &common_);
  else
    numeric_ = klu_z_factor(const_cast<int*>(Ap_), const_cast<int*>(Ai_),
                            reinterpret_cast<double*>(const_cast<T*>(Ax)), symbolic_, &common_);
  ++n_factor_;
  last_refactor_ = false;
  compiled_live_ = false;
  if (!numeric_ || common_.status == KLU_SINGULAR) {
    singular_col_ = common_.singular_col;
    free_numeric();
    return false;
  }
  singular_col_ = -1;
  // Row scale factors of the pivot rows (KLU permutes Rs into pivot order), kept for rcond() after the
  // unscaled refactorizations.
  inv_rs_.assign(n_, 1.0);
  if (numeric_->Rs)
    for (int k = 0; k < n_; ++k) inv_rs_[k] = 1.0 / numeric_->Rs[k];
  scaled_ = true;
  // The refactorizations that follow run compiled if this is the pivot order last compiled.
  compiled_current_ = allow_compiled_ && compiled_.same_order(n_, numeric_->Pnum, symbolic_->Q);
  refactors_on_order_ = 0;
  return true;
}

template <class T>
bool KluLU<T>::factor(const T* Ax) {
  if (!symbolic_) return false;
  if (!numeric_) return full_factor(Ax);
  // A pivot order is compiled at its kCompileAfterRefactors-th refactorization.
  if (!compiled_current_ && allow_compiled_ && n_ <= kCompiledMaxUnknowns &&
      ++refactors_on_order_ == kCompileAfterRefactors)
    compiled_current_ = compiled_.compile(n_, Ap_, Ai_, numeric_->Pnum, symbolic_->Q, kCompiledMaxPairs);
  if (compiled_current_) {
    ++n_refactor_;
    last_refactor_ = true;
    scaled_ = false;
    compiled_live_ = true;
    if (!compiled_.refactor(Ax) || rcond() < kRefactorRcondLimit) return full_factor(Ax);
    return true;
  }
  int ok;
  common_.scale = kScaleRefactor;
  if constexpr (std::is_same_v<T, double>)
    ok = klu_refactor(const_cast<int*>(Ap_), const_cast<int*>(Ai_), const_cast<double*>(Ax), symbolic_, numeric_,
                      &common_);
  else
    ok = klu_z_refactor(const_cast<int*>(Ap_), const_cast<int*>(Ai_), reinterpret_cast<double*>(const_cast<T*>(Ax)),
                        symbolic_, numeric_, &common_);
  ++n_refactor_;
  last_refactor_ = true;
  scaled_ = false;
  if (!ok || common_.status != KLU_OK || rcond() < kRefactorRcondLimit) return full_factor(Ax);
  return true;
}

template <class T>
double KluLU<T>::rcond() {
  if (!numeric_) return 0.0;
  // klu_rcond's estimate, min |U_kk| / max |U_kk|, on the row-scaled matrix: U of a refactorization is
  // unscaled, so each pivot is divided by its row's scale factor from the last full factorization.
  const T* udiag = static_cast<const T*>(numeric_->Udiag);
  double lo = INFINITY, hi = 0.0;
  for (int k = 0; k < n_; ++k) {
    const double pivot = compiled_live_ ? compiled_.pivot_magnitude(k) : std::abs(udiag[k]);
    const double u = pivot * (scaled_ ? 1.0 : inv_rs_[k]);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  return hi > 0 && std::isfinite(lo) ? lo / hi : 0.0;
}

template <class T>
void KluLU<T>::solve(T* b) {
  if (compiled_live_) return compiled_.solve(b);
  if constexpr (std::is_same_v<T, double>) klu_solve(symbolic_, numeric_, n_, 1, b, &common_);
  else klu_z_solve(symbolic_, numeric_, n_, 1, reinterpret_cast<double*>(b), &common_);
}

template class KluLU<double>;
template class KluLU<std::complex<double>>;

// ---- SparseLU --------------------------------------------------------------------------------------------

template <class T>
SparseLU<T>::SparseLU() {
  whole_.allow_compiled(true);
}

template <class T>
SparseLU<T>::~SparseLU() = default;

template <class T>
int SparseLU<T>::separator_size() const {
  return split_ ? static_cast<int>(split_->sep.size()) : 0;
}

template <class T>
bool SparseLU<T>::prefers_multifrontal(int n, const int* Ap, const int* Ai) {
  if (n < kMultifrontalMinUnknowns) return false;
  double lnz = 0, flops = 0;
  return amd_fill_estimate(n, Ap, Ai, lnz, flops) && flops >= kMultifrontalMinFlops;
}

template <class T>
std::vector<int> SparseLU<T>::hinted_order(int n, const int* Ap, const int* Ai) const {
  const std::vector<int>& h = hint();
  if (h.empty() || h.size() < kHintMinShare * n) return {};
  std::vector<int> rest(n, -1);  // unknown -> its index among the unknowns the hint leaves out, or -2
  for (int u : h) {
    if (u < 0 || u >= n || rest[u] == -2) return {};  // not a set of this pattern's unknowns
    rest[u] = -2;
  }
  std::vector<int> glob;
  for (int u = 0; u < n; ++u)
    if (rest[u] == -1) {
      rest[u] = static_cast<int>(glob.size());
      glob.push_back(u);
    }
  std::vector<int> order;
  order.reserve(n);
  if (!glob.empty()) {  // AMD on the submatrix of the unknowns left out
    std::vector<int> sp(1, 0), si;
    for (int c : glob) {
      for (int p = Ap[c]; p < Ap[c + 1]; ++p)
        if (rest[Ai[p]] >= 0) si.push_back(rest[Ai[p]]);
      sp.push_back(static_cast<int>(si.size()));
    }
    double lnz, pairs;
    std::vector<int> perm;
    if (!amd_fill_estimate(static_cast<int>(glob.size()), sp.data(), si.data(), lnz, pairs, &perm)) return {};
    for (int k : perm) order.push_back(glob[k]);
  }
  order.insert(order.end(), h.begin(), h.end());
  return order;
}

template <class T>
bool SparseLU<T>::analyze(int n, const int* Ap, const int* Ai) {
  n_ = n;
  Ap_ = Ap;
  Ai_ = Ai;
  split_.reset();
  umfpack_.reset();
  pcg_.reset();
  pcg_A_.clear();
  factored_ = false;
  whole_analyzed_ = false;
  choose_later_ = false;
  split_pending_ = false;
  if constexpr (std::is_same_v<T, double>) {
    const int min_n = single_ ? kIterativeMinUnknownsOnce : kIterativeMinUnknowns;
    if (!no_pcg_ && ((solver_ == LinearSolver::Auto && n >= min_n) || solver_ == LinearSolver::Pcg)) {
      // The direct analysis waits until conjugate gradients turn out not to apply (factor, solve).
      pcg_ = std::make_unique<NodalPcg>();
      if (pcg_->analyze(n, Ap, Ai)) return true;
      pcg_.reset();
    }
  }
  return analyze_direct();
}

template <class T>
std::vector<double> SparseLU<T>::drop_pcg() {
  cg_its_ += pcg_->iterations();
  pcg_.reset();
  no_pcg_ = true;
  std::vector<double> A = std::move(pcg_A_);
  pcg_A_.clear();
  return A;
}

template <class T>
bool SparseLU<T>::analyze_direct() {
  const int n = n_;
  const int* Ap = Ap_;
  const int* Ai = Ai_;
  const bool can_split = std::is_same_v<T, double> && allow_split_ && n >= kSplitMinUnknowns &&
                         second_thread_allowed();
  if (solver_ == LinearSolver::Auto && single_ && can_split && hint().empty()) {
    // One factorization on two threads, no ordering hint: the two-half split is tried first, and the multifrontal
    // choice (AMD's estimate of the whole matrix, then UMFPACK) is made only if it finds no separator. Measured on
    // the 256x64 crossbar deck's operating point (split either way): 0.192-0.198 -> 0.179-0.184 s, the whole
    // matrix's AMD no longer computed; 784x128 (the split instead of UMFPACK): 1.76-1.82 -> 1.72-1.73 s, 571 -> 591 MB.
    split_pending_ = choose_later_ = true;
    return true;
  }
  if (analyze_multifrontal(n, Ap, Ai)) return true;
  split_pending_ = can_split;
  if (split_pending_) return true;  // the whole matrix is analyzed only if the split is not used
  whole_analyzed_ = whole_.analyze(n, Ap, Ai);
  return whole_analyzed_;
}

template <class T>
bool SparseLU<T>::analyze_multifrontal(int n, const int* Ap, const int* Ai) {
  // UMFPACK's order: the hint's, else AMD's where its fill is moderate and one factorization follows, else (empty)
  // METIS's
  std::vector<int> order;
  bool multifrontal = solver_ == LinearSolver::Umfpack;
  if (solver_ != LinearSolver::Klu && (multifrontal || n >= kMultifrontalMinUnknowns)) {
    order = hinted_order(n, Ap, Ai);
    if (!order.empty()) {
      multifrontal = true;
    } else {
      double lnz = 0, pairs = 0;
      if (amd_fill_estimate(n, Ap, Ai, lnz, pairs, &order)) {
        multifrontal = multifrontal || pairs >= kMultifrontalMinFlops;
        if (!single_ || pairs > kAmdMaxPairsPerUnknown * n) order.clear();
      } else {
        order.clear();
      }
    }
  }
  if (!multifrontal) return false;
  std::string why;
  umfpack_ = make_umfpack_lu<T>(&why);
  if (!umfpack_) {  // the module is missing: KLU, which gives the same solutions (slower on such matrices)
    static std::once_flag warned;
    std::call_once(warned, [&] {
      fmt::print(stderr, "warning: KLU factors the large matrices instead of UMFPACK: {}\n", why);
    });
  }
  split_pending_ = whole_analyzed_ = false;
  if (umfpack_ && umfpack_->analyze(n, Ap, Ai, order.empty() ? nullptr : order.data())) return true;
  umfpack_.reset();  // rejected (or out of memory): KLU
  return false;
}

template <class T>
std::unique_ptr<SparseLU<T>> SparseLU<T>::sibling() const {
  auto s = std::make_unique<SparseLU<T>>();
  s->hint_ = hint_;
  s->hint_source_ = hint_source_;
  s->single_ = single_;
  s->allow_split_ = allow_split_;
  s->solver_ = solver_;
  s->no_pcg_ = no_pcg_;
  if (umfpack_ && umfpack_->analyzed()) {
    s->n_ = n_;
    s->Ap_ = Ap_;
    s->Ai_ = Ai_;
    s->umfpack_ = umfpack_->sibling();
    return s;
  }
  s->analyze(n_, Ap_, Ai_);
  return s;
}

template <class T>
bool SparseLU<T>::factor_whole(const T* Ax) {
  if (!whole_analyzed_) {
    whole_analyzed_ = whole_.analyze(n_, Ap_, Ai_);
    if (!whole_analyzed_) return factored_ = false;
  }
  factored_ = whole_.factor(Ax);
  return factored_;
}

template <class T>
bool SparseLU<T>::factor(const T* Ax) {
  if constexpr (std::is_same_v<T, double>) {
    if (pcg_) {
      if (pcg_->factor(Ax)) {
        pcg_A_.assign(Ax, Ax + Ap_[n_]);
        ++pcg_factor_;
        return factored_ = true;
      }
      drop_pcg();
      if (!analyze_direct()) return factored_ = false;
    }
  }
  if (umfpack_) {
    if (umfpack_->factor(Ax)) return factored_ = true;
    umfpack_.reset();  // fall back for good: KLU decides (and names a singular unknown)
  }
  if constexpr (std::is_same_v<T, double>) {
    if (split_pending_) {
      split_pending_ = false;
      split_ = SplitLU::build(n_, Ap_, Ai_, Ax);
      if (!split_ && choose_later_) {  // no separator: the choice analyze() left to here
        choose_later_ = false;
        if (analyze_multifrontal(n_, Ap_, Ai_)) return factor(Ax);
      }
    }
    if (split_) {
      if (split_->factor(Ax)) {
        if (split_->both_refactored()) ++n_refactor_;
        else ++n_factor_;
        return factored_ = true;
      }
      split_.reset();  // fall back for good: the whole matrix decides (and names a singular unknown)
    }
  }
  return factor_whole(Ax);
}

template <class T>
void SparseLU<T>::solve(T* b, const T* start) {
  ++n_solve_;
  if constexpr (std::is_same_v<T, double>) {
    if (pcg_) {
      if (pcg_->solve(b, start)) return;
      // They gave up: the direct solver, for good.
      const std::vector<double> A = drop_pcg();
      if (!analyze_direct() || !factor(A.data())) {
        std::fill(b, b + n_, std::numeric_limits<double>::quiet_NaN());
        return;
      }
    }
  }
  if (umfpack_) {
    umfpack_->solve(b);
    return;
  }
  if constexpr (std::is_same_v<T, double>) {
    if (split_) {
      split_->solve(b);
      return;
    }
  }
  whole_.solve(b);
}

template <class T>
void SparseLU<T>::precondition(T* b) {
  if (umfpack_ && !pcg_) {
    ++n_solve_;
    umfpack_->precondition(b);
    return;
  }
  solve(b);
}

template <class T>
double SparseLU<T>::factor_bytes() const {
  if (!factored_) return 0;
  if (pcg_) return pcg_->bytes() + sizeof(double) * pcg_A_.capacity();
  if (umfpack_) return 12 * umfpack_->factor_entries();
  if constexpr (std::is_same_v<T, double>) {
    if (split_) {
      const double s = static_cast<double>(split_->sep.size());
      return split_->half[0].lu.factor_bytes() + split_->half[1].lu.factor_bytes() + 3 * s * s * sizeof(T);
    }
  }
  return whole_.factor_bytes();
}

template class SparseLU<double>;
template class SparseLU<std::complex<double>>;

}  // namespace anasim
