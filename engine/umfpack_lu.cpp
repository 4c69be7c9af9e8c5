// UMFPACK wrapper (see umfpack_lu.hpp). The real and complex variants differ only in which umfpack_di_ /
// umfpack_zi_ calls they make (umfpack_dl_ / umfpack_zl_ with 64-bit indices); complex values are passed packed
// (Az = nullptr).
#include "engine/umfpack_lu.hpp"
#include "engine/module.hpp"
#include "engine/two_threads.hpp"
#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <omp.h>
#include <umfpack.h>

namespace anasim {

namespace {
template <class T>
constexpr bool kReal = std::is_same_v<T, double>;

// OpenMP threads the BLAS (OpenBLAS, OpenMP build) may use inside UMFPACK. One: with another process on the
// second core, OpenBLAS's spinning threads made the numeric factorization of the 784x128 crossbar 11 times
// slower than on one thread (11.8 s against 1.08 s, load average 14); its fronts are too small to gain much
// (the 1024x1024 crossbar on a quiet machine: 19.6 s of CPU on one thread, 30.5 s on two for the same wall time).
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

using Long = SuiteSparse_long;
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
}

template <class T>
void UmfpackLU<T>::free_numeric() {
  plain_.reset();
  solves_ = 0;
  if (!numeric_) return;
  if constexpr (kReal<T>) long_indices() ? umfpack_dl_free_numeric(&numeric_) : umfpack_di_free_numeric(&numeric_);
  else long_indices() ? umfpack_zl_free_numeric(&numeric_) : umfpack_zi_free_numeric(&numeric_);
  numeric_ = nullptr;
}

template <class T>
bool UmfpackLU<T>::analyze(int n, const int* Ap, const int* Ai, const int* order) {
  free_numeric();
  symbolic_.reset();
  long_pattern_.reset();
  n_ = n;
  Ap_ = Ap;
  Ai_ = Ai;
  const bool lng = force_long_ || n >= kLongIndexMinUnknowns;
  control_[UMFPACK_ORDERING] = order ? UMFPACK_ORDERING_GIVEN : UMFPACK_ORDERING_METIS;
  int status;
  void* sym = nullptr;
  if (lng) {
    // The pattern (and order) as 64-bit indices, kept for the factorizations and solves (and shared by siblings).
    auto lp = std::make_shared<LongPattern>();
    lp->Ap.assign(Ap, Ap + n + 1);
    lp->Ai.assign(Ai, Ai + Ap[n]);
    std::vector<Long> lorder;
    if (order) lorder.assign(order, order + n);
    const Long* q = order ? lorder.data() : nullptr;
    if constexpr (kReal<T>)
      status = umfpack_dl_qsymbolic(n, n, lp->Ap.data(), lp->Ai.data(), nullptr, q, &sym, control_.data(),
                                    info_.data());
    else
      status = umfpack_zl_qsymbolic(n, n, lp->Ap.data(), lp->Ai.data(), nullptr, nullptr, q, &sym, control_.data(),
                                    info_.data());
    long_pattern_ = std::move(lp);
  } else {
    if constexpr (kReal<T>)
      status = umfpack_di_qsymbolic(n, n, Ap, Ai, nullptr, order, &sym, control_.data(), info_.data());
    else
      status = umfpack_zi_qsymbolic(n, n, Ap, Ai, nullptr, nullptr, order, &sym, control_.data(), info_.data());
  }
  if (status != UMFPACK_OK) {
    long_pattern_.reset();
    return false;
  }
  symbolic_.reset(sym, [lng](void* p) {
    if constexpr (kReal<T>) lng ? umfpack_dl_free_symbolic(&p) : umfpack_di_free_symbolic(&p);
    else lng ? umfpack_zl_free_symbolic(&p) : umfpack_zi_free_symbolic(&p);
  });
  workspace();
  return true;
}

template <class T>
void UmfpackLU<T>::workspace() {
  if (long_indices()) wl_.resize(n_);
  else wi_.resize(n_);
  w_.resize((kReal<T> ? 5 : 10) * static_cast<size_t>(n_));
  x_.resize(n_);
}

template <class T>
void UmfpackLU<T>::share_analysis(const UmfpackLU& o) {
  free_numeric();
  n_ = o.n_;
  Ap_ = o.Ap_;
  Ai_ = o.Ai_;
  long_pattern_ = o.long_pattern_;
  control_ = o.control_;
  symbolic_ = o.symbolic_;
  workspace();
}

template <class T>
bool UmfpackLU<T>::factor(const T* Ax) {
  if (!symbolic_) return false;
  free_numeric();
  ax_.assign(Ax, Ax + Ap_[n_]);
  BlasThreads blas(kBlasThreads);
  void* sym = symbolic_.get();
  int status;
  if (long_indices()) {
    const Long *lp = long_pattern_->Ap.data(), *li = long_pattern_->Ai.data();
    if constexpr (kReal<T>)
      status = umfpack_dl_numeric(lp, li, ax_.data(), sym, &numeric_, control_.data(), info_.data());
    else
      status = umfpack_zl_numeric(lp, li, raw(ax_.data()), nullptr, sym, &numeric_, control_.data(), info_.data());
  } else {
    if constexpr (kReal<T>)
      status = umfpack_di_numeric(Ap_, Ai_, ax_.data(), sym, &numeric_, control_.data(), info_.data());
    else
      status = umfpack_zi_numeric(Ap_, Ai_, raw(ax_.data()), nullptr, sym, &numeric_, control_.data(), info_.data());
  }
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
  // Refinement is UMFPACK's: a factorization held only in plain arrays is factored again (from its values).
  if (on && plain_ && !numeric_) {
    const std::vector<T> a = ax_;
    factor(a.data());
  }
}

namespace {

// Substitutions with at least this many entries in L and U are split over two threads where their structure
// allows (below, fewer entries do not repay the threads' start: about 10 us against ~1.5 ns an entry).
constexpr double kSplitMinEntries = 2e5;
// ... and only where the split's critical path is at most this fraction of the serial substitution.
constexpr double kSplitMaxCost = 0.8;

int uf_find(std::vector<int>& parent, int a) {
  while (parent[a] != a) a = parent[a] = parent[parent[a]];
  return a;
}

// The two-thread schedule of one triangular substitution whose row r (r < n, taken in ascending order as rows are
// added) references the rows refs(r, f) calls f with, all of them already added. Union-find over the rows added so
// far gives the sets of rows joined by references; at the prefix m where the critical path, max(largest set, half
// the prefix's work) + the rest's work, is shortest, the sets are packed greedily into two threads. work[r]: the
// row's entries + 1. False when no prefix gets below kSplitMaxCost of the serial work.
template <class Refs>
bool split_rows(int n, const std::vector<double>& work, Refs refs, int& top, std::vector<int> (&rows)[2]) {
  std::vector<int> parent(n);
  std::vector<double> weight(n);
  double total = 0;
  for (double w : work) total += w;
  // Row m joins the sets of the rows it references; returns its set's root.
  auto add_row = [&](int m) {
    parent[m] = m;
    weight[m] = work[m];
    refs(m, [&](int j) {
      const int a = uf_find(parent, m), b = uf_find(parent, j);
      if (a != b) {
        parent[b] = a;
        weight[a] += weight[b];
      }
    });
    return uf_find(parent, m);
  };
  double done = 0, largest = 0, best = total;
  int best_m = 0;
  for (int m = 0; m < n; ++m) {
    const int root = add_row(m);
    largest = std::max(largest, weight[root]);
    done += work[m];
    const double cost = std::max(largest, 0.5 * done) + (total - done);
    if (cost < best) {
      best = cost;
      best_m = m + 1;
    }
  }
  if (best > kSplitMaxCost * total) return false;
  // The sets of rows below best_m: union-find again over that prefix alone, then packed heaviest first.
  for (int m = 0; m < best_m; ++m) add_row(m);
  std::vector<int> roots;
  for (int m = 0; m < best_m; ++m)
    if (uf_find(parent, m) == m) roots.push_back(m);
  std::sort(roots.begin(), roots.end(), [&](int a, int b) { return weight[a] > weight[b]; });
  std::vector<int> bin(n, 0);
  double load[2] = {0, 0};
  for (int r : roots) {
    const int t = load[0] <= load[1] ? 0 : 1;
    bin[r] = t;
    load[t] += weight[r];
  }
  if (load[1] == 0) return false;
  for (int m = 0; m < best_m; ++m) rows[bin[uf_find(parent, m)]].push_back(m);
  top = best_m;
  return true;
}

}  // namespace

template <class T>
bool UmfpackLU<T>::make_plain() {
  if constexpr (!kReal<T>) {
    return false;
  } else {
    int lnz = 0, unz = 0, nr = 0, nc = 0, nzud = 0;
    if (umfpack_di_get_lunz(&lnz, &unz, &nr, &nc, &nzud, numeric_) != UMFPACK_OK || nr != n_ || nc != n_ ||
        nzud != n_)
      return false;
    // UMFPACK's forms: L by rows and U by columns, each with its diagonal, indices ascending.
    auto p = std::make_unique<Plain>();
    std::vector<int> Up(n_ + 1), Ui(unz);
    std::vector<double> Ux(unz);
    p->Lp.resize(n_ + 1);
    p->Lj.resize(lnz);
    p->Lx.resize(lnz);
    p->P.resize(n_);
    p->Q.resize(n_);
    p->Rs.resize(n_);
    int recip = 0;
    if (umfpack_di_get_numeric(p->Lp.data(), p->Lj.data(), p->Lx.data(), Up.data(), Ui.data(), Ux.data(),
                               p->P.data(), p->Q.data(), nullptr, &recip, p->Rs.data(), numeric_) != UMFPACK_OK)
      return false;
    for (int i = 0; i < n_; ++i)  // each row of L ends in its unit diagonal, each column of U in its diagonal
      if (p->Lp[i + 1] == p->Lp[i] || p->Lj[p->Lp[i + 1] - 1] != i || Up[i + 1] == Up[i] || Ui[Up[i + 1] - 1] != i)
        return false;
    umfpack_di_free_numeric(&numeric_);  // from here on the plain arrays are the factorization
    numeric_ = nullptr;
    p->recip = recip != 0;
    // L without its diagonal, compacted in place.
    int at = 0;
    for (int i = 0; i < n_; ++i) {
      const int b = p->Lp[i], e = p->Lp[i + 1] - 1;
      p->Lp[i] = at;
      for (int q = b; q < e; ++q, ++at) {
        p->Lj[at] = p->Lj[q];
        p->Lx[at] = p->Lx[q];
      }
    }
    p->Lp[n_] = at;
    p->Lj.resize(at);
    p->Lx.resize(at);
    p->Lj.shrink_to_fit();
    p->Lx.shrink_to_fit();
    // U transposed into row form (columns in order: each row's entries come out ascending), its diagonal apart.
    p->Udiag.resize(n_);
    p->Up.assign(n_ + 1, 0);
    for (int k = 0; k < n_; ++k) {
      p->Udiag[k] = Ux[Up[k + 1] - 1];
      for (int q = Up[k]; q < Up[k + 1] - 1; ++q) ++p->Up[Ui[q] + 1];
    }
    for (int i = 0; i < n_; ++i) p->Up[i + 1] += p->Up[i];
    p->Uj.resize(p->Up[n_]);
    p->Ux.resize(p->Up[n_]);
    std::vector<int> next(p->Up.begin(), p->Up.end() - 1);
    for (int k = 0; k < n_; ++k)
      for (int q = Up[k]; q < Up[k + 1] - 1; ++q) {
        const int to = next[Ui[q]]++;
        p->Uj[to] = k;
        p->Ux[to] = Ux[q];
      }
    p->y.resize(n_);
    // The two-thread schedules. L's row i references the rows of its entries (columns before i). U's rows below
    // u_top are solved last, so a row of that part references the rows it has entries in and the rows with entries
    // in its column (Up, Ui: U by columns, each column ending in its diagonal), those after it being added later.
    // (Only where plain_solve could use them: two OpenMP threads and no parallel region running.)
    if (p->Lp[n_] + p->Up[n_] >= kSplitMinEntries && second_thread_allowed()) {
      const int n = n_;
      std::vector<double> work(n);
      for (int i = 0; i < n; ++i) work[i] = 1 + p->Lp[i + 1] - p->Lp[i];
      const int *Lp = p->Lp.data(), *Lj = p->Lj.data();
      const bool l_split = split_rows(n, work, [&](int i, auto&& f) {
        for (int q = Lp[i]; q < Lp[i + 1]; ++q) f(Lj[q]);
      }, p->l_top, p->lrows);
      for (int i = 0; i < n; ++i) work[i] = 1 + p->Up[i + 1] - p->Up[i];
      const bool u_split = split_rows(n, work, [&](int k, auto&& f) {
        for (int q = Up[k]; q < Up[k + 1] - 1; ++q) f(Ui[q]);
      }, p->u_top, p->urows);
      for (auto& r : p->urows) std::reverse(r.begin(), r.end());  // descending
      if (!(l_split && u_split)) {
        for (int t = 0; t < 2; ++t) {
          p->lrows[t].clear();
          p->urows[t].clear();
        }
      }
    }
    plain_ = std::move(p);
    return true;
  }
}

namespace {

// sum of val[q] * y[idx[q]] for q in [b, e): one row of a sparse triangular factor (two partial sums, for the
// loads' latency), in double whatever the values' type V (double, or float for precondition()).
template <class V>
inline double row_dot(const int* idx, const V* val, int b, int e, const double* y) {
  double s0 = 0, s1 = 0;
  int q = b;
  for (; q + 1 < e; q += 2) {
    s0 += static_cast<double>(val[q]) * y[idx[q]];
    s1 += static_cast<double>(val[q + 1]) * y[idx[q + 1]];
  }
  if (q < e) s0 += static_cast<double>(val[q]) * y[idx[q]];
  return s0 + s1;
}

}  // namespace

namespace {

// Runs two tasks side by side, the second on a helper thread that sleeps on a condition variable between calls.
// OpenMP's idle threads spin instead: between the substitutions of a linear transient they held the second core
// that the CSV writer needs (256x256 crossbar transient with its CSV: 31.8-33.2 s with an OpenMP region, against
// 28.2 s with OMP_WAIT_POLICY=passive for the whole process). One helper for the process, started on first use and
// never stopped (a detached thread); a call while it is busy (another thread's solve) runs both tasks itself.
class PairRunner {
 public:
  static PairRunner& instance() {
    static PairRunner* r = new PairRunner;  // never destroyed: the detached helper may outlive static destructors
    return *r;
  }
  void run(const std::function<void()>& first, const std::function<void()>& second) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy) {
      first();
      second();
      return;
    }
    {
      std::lock_guard<std::mutex> lk(m_);
      task_ = &second;
      done_ = false;
    }
    cv_.notify_all();
    first();
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait(lk, [&] { return done_; });
  }

 private:
  PairRunner() { std::thread([this] { loop(); }).detach(); }
  void loop() {
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      cv_.wait(lk, [&] { return task_ != nullptr; });
      const std::function<void()>* t = task_;
      lk.unlock();
      (*t)();
      lk.lock();
      task_ = nullptr;
      done_ = true;
      cv_.notify_all();
    }
  }
  std::mutex busy_, m_;
  std::condition_variable cv_;
  const std::function<void()>* task_ = nullptr;
  bool done_ = true;
};

}  // namespace

template <class T>
void UmfpackLU<T>::plain_solve(double* b) {
  plain_solve_values(b, plain_->Lx.data(), plain_->Ux.data());
}

template <class T>
void UmfpackLU<T>::precondition(T* b) {
  if constexpr (kReal<T>) {
    if (plain_) {
      Plain& p = *plain_;
      if (p.Lxf.size() != p.Lx.size() || p.Uxf.size() != p.Ux.size()) {
        p.Lxf.assign(p.Lx.begin(), p.Lx.end());
        p.Uxf.assign(p.Ux.begin(), p.Ux.end());
      }
      return plain_solve_values(b, p.Lxf.data(), p.Uxf.data());
    }
  }
  solve(b);
}

template <class T>
template <class V>
void UmfpackLU<T>::plain_solve_values(double* b, const V* Lx, const V* Ux) {
  Plain& p = *plain_;
  const int n = n_;
  double* y = p.y.data();
  const int* P = p.P.data();
  const double* Rs = p.Rs.data();
  if (p.recip) {
    for (int k = 0; k < n; ++k) y[k] = b[P[k]] * Rs[P[k]];
  } else {
    for (int k = 0; k < n; ++k) y[k] = b[P[k]] / Rs[P[k]];
  }
  // L z = y, then U w = z from the last row up: each row a dot product with the entries solved before it.
  const int *Lp = p.Lp.data(), *Lj = p.Lj.data(), *Up = p.Up.data(), *Uj = p.Uj.data();
  const double* D = p.Udiag.data();
  // Two threads where the schedule has them and second_thread_allowed(): the rows of each set in the same order and
  // with the same arithmetic, so the same numbers.
  if (!p.lrows[0].empty() && second_thread_allowed()) {
    auto lower = [&](int t) {
      for (int i : p.lrows[t]) y[i] -= row_dot(Lj, Lx, Lp[i], Lp[i + 1], y);
    };
    auto upper = [&](int t) {
      for (int i : p.urows[t]) y[i] = (y[i] - row_dot(Uj, Ux, Up[i], Up[i + 1], y)) / D[i];
    };
    PairRunner& pr = PairRunner::instance();
    pr.run([&] { lower(0); }, [&] { lower(1); });
    for (int i = p.l_top; i < n; ++i) y[i] -= row_dot(Lj, Lx, Lp[i], Lp[i + 1], y);
    for (int i = n - 1; i >= p.u_top; --i) y[i] = (y[i] - row_dot(Uj, Ux, Up[i], Up[i + 1], y)) / D[i];
    pr.run([&] { upper(0); }, [&] { upper(1); });
  } else {
    for (int i = 0; i < n; ++i) y[i] -= row_dot(Lj, Lx, Lp[i], Lp[i + 1], y);
    for (int i = n - 1; i >= 0; --i) y[i] = (y[i] - row_dot(Uj, Ux, Up[i], Up[i + 1], y)) / D[i];
  }
  const int* Q = p.Q.data();
  for (int k = 0; k < n; ++k) b[Q[k]] = y[k];
}

template <class T>
void UmfpackLU<T>::solve(T* b) {
  if constexpr (kReal<T>) {
    if (plain_) return plain_solve(b);
    if (++solves_ == kPlainAfterSolves && control_[UMFPACK_IRSTEP] == 0 && !long_indices() && make_plain())
      return plain_solve(b);
  }
  BlasThreads blas(kBlasThreads);
  double *c = control_.data(), *in = info_.data();
  if (long_indices()) {
    const Long *lp = long_pattern_->Ap.data(), *li = long_pattern_->Ai.data();
    if constexpr (kReal<T>)
      umfpack_dl_wsolve(UMFPACK_A, lp, li, ax_.data(), x_.data(), b, numeric_, c, in, wl_.data(), w_.data());
    else
      umfpack_zl_wsolve(UMFPACK_A, lp, li, raw(ax_.data()), nullptr, raw(x_.data()), nullptr, raw(b), nullptr,
                        numeric_, c, in, wl_.data(), w_.data());
  } else {
    if constexpr (kReal<T>)
      umfpack_di_wsolve(UMFPACK_A, Ap_, Ai_, ax_.data(), x_.data(), b, numeric_, c, in, wi_.data(), w_.data());
    else
      umfpack_zi_wsolve(UMFPACK_A, Ap_, Ai_, raw(ax_.data()), nullptr, raw(x_.data()), nullptr, raw(b), nullptr,
                        numeric_, c, in, wi_.data(), w_.data());
  }
  std::copy(x_.begin(), x_.end(), b);
}

template <class T>
std::unique_ptr<MultifrontalLU<T>> UmfpackLU<T>::sibling() const {
  auto s = std::make_unique<UmfpackLU<T>>();
  s->share_analysis(*this);
  return s;
}

template class UmfpackLU<double>;
template class UmfpackLU<std::complex<double>>;

}  // namespace anasim

// The module's exports (engine/module.hpp): the ABI it was built with and a new factorization object per value type,
// owned by the caller (deleted through MultifrontalLU's virtual destructor).
ANASIM_MODULE_EXPORT int anasim_module_abi() { return anasim::module::kModuleAbi; }
ANASIM_MODULE_EXPORT anasim::MultifrontalLU<double>* anasim_umfpack_new_real() {
  return new anasim::UmfpackLU<double>();
}
ANASIM_MODULE_EXPORT anasim::MultifrontalLU<std::complex<double>>* anasim_umfpack_new_complex() {
  return new anasim::UmfpackLU<std::complex<double>>();
}
