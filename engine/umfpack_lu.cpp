// UMFPACK wrapper (see umfpack_lu.hpp). The real and complex variants differ only in which umfpack_di_ /
// umfpack_zi_ calls they make; complex values are passed packed (Az = nullptr).
#include "engine/umfpack_lu.hpp"
#include <algorithm>
#include <amd.h>
#include <type_traits>
#include <omp.h>
#include <umfpack.h>

namespace anasim {

namespace {
template <class T>
constexpr bool kReal = std::is_same_v<T, double>;

// OpenMP threads the BLAS (OpenBLAS, OpenMP build) may use inside UMFPACK. One: with another process on the
// second core, OpenBLAS's spinning threads made the numeric factorization of the 784x128 crossbar 11 times
// slower than on one thread (11.8 s against 1.08 s, load average 14); its fronts are too small to gain much.
constexpr int kBlasThreads = 1;

// Sets the OpenMP thread count (which OpenBLAS reads at each call) for its lifetime.
class BlasThreads {
 public:
  explicit BlasThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~BlasThreads() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

template <class T>
double* raw(T* p) {
  return reinterpret_cast<double*>(p);
}
}  // namespace

template <class T>
UmfpackLU<T>::UmfpackLU() : control_(UMFPACK_CONTROL), info_(UMFPACK_INFO) {
  if constexpr (kReal<T>) umfpack_di_defaults(control_.data());
  else umfpack_zi_defaults(control_.data());
  // MNA matrices are (nearly) pattern-symmetric with mostly nonzero diagonals: the symmetric strategy keeps
  // diagonal pivots where they are large enough and orders A + A^T, here by METIS nested dissection.
  control_[UMFPACK_ORDERING] = UMFPACK_ORDERING_METIS;
  control_[UMFPACK_STRATEGY] = UMFPACK_STRATEGY_SYMMETRIC;
}

template <class T>
UmfpackLU<T>::~UmfpackLU() {
  free_numeric();
  if (symbolic_) {
    if constexpr (kReal<T>) umfpack_di_free_symbolic(&symbolic_);
    else umfpack_zi_free_symbolic(&symbolic_);
  }
}

template <class T>
void UmfpackLU<T>::free_numeric() {
  if (!numeric_) return;
  if constexpr (kReal<T>) umfpack_di_free_numeric(&numeric_);
  else umfpack_zi_free_numeric(&numeric_);
  numeric_ = nullptr;
}

template <class T>
bool UmfpackLU<T>::analyze(int n, const int* Ap, const int* Ai, const int* order) {
  free_numeric();
  if (symbolic_) {
    if constexpr (kReal<T>) umfpack_di_free_symbolic(&symbolic_);
    else umfpack_zi_free_symbolic(&symbolic_);
  }
  n_ = n;
  Ap_ = Ap;
  Ai_ = Ai;
  control_[UMFPACK_ORDERING] = order ? UMFPACK_ORDERING_GIVEN : UMFPACK_ORDERING_METIS;
  int status;
  if constexpr (kReal<T>)
    status = umfpack_di_qsymbolic(n, n, Ap, Ai, nullptr, order, &symbolic_, control_.data(), info_.data());
  else
    status = umfpack_zi_qsymbolic(n, n, Ap, Ai, nullptr, nullptr, order, &symbolic_, control_.data(), info_.data());
  if (status != UMFPACK_OK) {
    symbolic_ = nullptr;
    return false;
  }
  wi_.resize(n);
  w_.resize((kReal<T> ? 5 : 10) * static_cast<size_t>(n));
  x_.resize(n);
  return true;
}

template <class T>
bool UmfpackLU<T>::factor(const T* Ax) {
  if (!symbolic_) return false;
  free_numeric();
  ax_.assign(Ax, Ax + Ap_[n_]);
  BlasThreads blas(kBlasThreads);
  int status;
  if constexpr (kReal<T>)
    status = umfpack_di_numeric(Ap_, Ai_, ax_.data(), symbolic_, &numeric_, control_.data(), info_.data());
  else
    status = umfpack_zi_numeric(Ap_, Ai_, raw(ax_.data()), nullptr, symbolic_, &numeric_, control_.data(),
                                info_.data());
  ++n_factor_;
  if (status != UMFPACK_OK) {  // UMFPACK_WARNING_singular_matrix keeps a Numeric object; it is of no use here
    free_numeric();
    return false;
  }
  lu_entries_ = info_[UMFPACK_LNZ] + info_[UMFPACK_UNZ];
  return true;
}

template <class T>
void UmfpackLU<T>::set_refinement(bool on) {
  control_[UMFPACK_IRSTEP] = on ? 2 : 0;
}

template <class T>
void UmfpackLU<T>::solve(T* b) {
  BlasThreads blas(kBlasThreads);
  if constexpr (kReal<T>)
    umfpack_di_wsolve(UMFPACK_A, Ap_, Ai_, ax_.data(), x_.data(), b, numeric_, control_.data(), info_.data(),
                      wi_.data(), w_.data());
  else
    umfpack_zi_wsolve(UMFPACK_A, Ap_, Ai_, raw(ax_.data()), nullptr, raw(x_.data()), nullptr, raw(b), nullptr,
                      numeric_, control_.data(), info_.data(), wi_.data(), w_.data());
  std::copy(x_.begin(), x_.end(), b);
}

template class UmfpackLU<double>;
template class UmfpackLU<std::complex<double>>;

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

}  // namespace anasim
