// KLU wrapper (see sparse_lu.hpp). Real and complex variants differ only in which klu_ / klu_z_ calls they make.
#include "engine/sparse_lu.hpp"
#include <type_traits>
#include <algorithm>
#include <cmath>
#include <vector>

namespace anasim {

namespace {
// Below this reciprocal pivot growth estimate a refactor (no pivoting) is not trusted.
constexpr double kRefactorRcondLimit = 1e-13;
// KLU row scaling (Common.scale): 2 = by the largest entry of each row, for a full factorization's pivoting;
// -1 = none and no input checks, for refactorizations (row scaling does not change an elimination with fixed
// pivots, so recomputing the scale factors and dividing every entry by them on each Newton iteration only
// costs time).
constexpr int kScaleFactor = 2;
constexpr int kScaleRefactor = -1;
}  // namespace

template <class T>
SparseLU<T>::SparseLU() {
  klu_defaults(&common_);
}

template <class T>
SparseLU<T>::~SparseLU() {
  if (numeric_) {
    if constexpr (std::is_same_v<T, double>) klu_free_numeric(&numeric_, &common_);
    else klu_z_free_numeric(&numeric_, &common_);
  }
  if (symbolic_) klu_free_symbolic(&symbolic_, &common_);
}

template <class T>
bool SparseLU<T>::analyze(int n, const int* Ap, const int* Ai) {
  if (numeric_) {
    if constexpr (std::is_same_v<T, double>) klu_free_numeric(&numeric_, &common_);
    else klu_z_free_numeric(&numeric_, &common_);
  }
  if (symbolic_) klu_free_symbolic(&symbolic_, &common_);
  n_ = n;
  Ap_ = Ap;
  Ai_ = Ai;
  symbolic_ = klu_analyze(n, const_cast<int*>(Ap), const_cast<int*>(Ai), &common_);
  return symbolic_ != nullptr;
}

template <class T>
bool SparseLU<T>::full_factor(const T* Ax) {
  if (numeric_) {
    if constexpr (std::is_same_v<T, double>) klu_free_numeric(&numeric_, &common_);
    else klu_z_free_numeric(&numeric_, &common_);
  }
  common_.halt_if_singular = 1;
  common_.scale = kScaleFactor;
  if constexpr (std::is_same_v<T, double>)
    numeric_ = klu_factor(const_cast<int*>(Ap_), const_cast<int*>(Ai_), const_cast<double*>(Ax), symbolic_, &common_);
  else
    numeric_ = klu_z_factor(const_cast<int*>(Ap_), const_cast<int*>(Ai_),
                            reinterpret_cast<double*>(const_cast<T*>(Ax)), symbolic_, &common_);
  ++n_factor_;
  if (!numeric_ || common_.status == KLU_SINGULAR) {
    singular_col_ = common_.singular_col;
    if (numeric_) {
      if constexpr (std::is_same_v<T, double>) klu_free_numeric(&numeric_, &common_);
      else klu_z_free_numeric(&numeric_, &common_);
    }
    numeric_ = nullptr;
    return false;
  }
  singular_col_ = -1;
  // Row scale factors of the pivot rows (KLU permutes Rs into pivot order), kept for rcond() after the
  // unscaled refactorizations.
  inv_rs_.assign(n_, 1.0);
  if (numeric_->Rs)
    for (int k = 0; k < n_; ++k) inv_rs_[k] = 1.0 / numeric_->Rs[k];
  scaled_ = true;
  return true;
}

template <class T>
bool SparseLU<T>::factor(const T* Ax) {
  if (!symbolic_) return false;
  if (!numeric_) return full_factor(Ax);
  int ok;
  common_.scale = kScaleRefactor;
  if constexpr (std::is_same_v<T, double>)
    ok = klu_refactor(const_cast<int*>(Ap_), const_cast<int*>(Ai_), const_cast<double*>(Ax), symbolic_, numeric_, &common_);
  else
    ok = klu_z_refactor(const_cast<int*>(Ap_), const_cast<int*>(Ai_), reinterpret_cast<double*>(const_cast<T*>(Ax)),
                        symbolic_, numeric_, &common_);
  ++n_refactor_;
  scaled_ = false;
  if (!ok || common_.status != KLU_OK || rcond() < kRefactorRcondLimit) return full_factor(Ax);
  return true;
}

template <class T>
double SparseLU<T>::rcond() {
  if (!numeric_) return 0.0;
  // klu_rcond's estimate, min |U_kk| / max |U_kk|, on the row-scaled matrix: U of a refactorization is
  // unscaled, so each pivot is divided by its row's scale factor from the last full factorization.
  const T* udiag = static_cast<const T*>(numeric_->Udiag);
  double lo = INFINITY, hi = 0.0;
  for (int k = 0; k < n_; ++k) {
    const double u = std::abs(udiag[k]) * (scaled_ ? 1.0 : inv_rs_[k]);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  return hi > 0 && std::isfinite(lo) ? lo / hi : 0.0;
}

template <class T>
void SparseLU<T>::solve(T* b) {
  ++n_solve_;
  if constexpr (std::is_same_v<T, double>) klu_solve(symbolic_, numeric_, n_, 1, b, &common_);
  else klu_z_solve(symbolic_, numeric_, n_, 1, reinterpret_cast<double*>(b), &common_);
}

template class SparseLU<double>;
template class SparseLU<std::complex<double>>;

}  // namespace anasim
