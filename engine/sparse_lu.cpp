// KLU wrapper and the two-half split (see sparse_lu.hpp). KluLU's real and complex variants differ only in
// which klu_ / klu_z_ calls they make.
#include "engine/sparse_lu.hpp"
#include <algorithm>
#include <amd.h>
#include <camd.h>
#include <climits>
#include <limits>
#include <mutex>
#include <cmath>
#include <omp.h>
#include <type_traits>
#include <vector>
#include <Eigen/Dense>
#include <fmt/format.h>
#include "engine/module.hpp"
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
  return true;
}

template <class T>
bool KluLU<T>::factor(const T* Ax) {
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
    const double u = std::abs(udiag[k]) * (scaled_ ? 1.0 : inv_rs_[k]);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  return hi > 0 && std::isfinite(lo) ? lo / hi : 0.0;
}

template <class T>
void KluLU<T>::solve(T* b) {
  if constexpr (std::is_same_v<T, double>) klu_solve(symbolic_, numeric_, n_, 1, b, &common_);
  else klu_z_solve(symbolic_, numeric_, n_, 1, reinterpret_cast<double*>(b), &common_);
}

template class KluLU<double>;
template class KluLU<std::complex<double>>;

// ---- the two-half split ----------------------------------------------------------------------------------

namespace {
// Separator limits: the separator system is dense (|S|^3 / 3 flops to factor, |S| x |S| doubles).
constexpr int kMaxSeparator = 400;
// Largest trailing corner of a half's factors that the separator coupling may occupy (pivoting can move a
// coupling row out of the CAMD-constrained tail; a larger corner means the split no longer pays).
constexpr int kMaxTrailing = 2000;
// Smallest pivot of the row-scaled separator system, relative to the largest, that is trusted.
constexpr double kSeparatorRcondLimit = 1e-13;

// Runs f(0) and f(1) on two threads.
template <class F>
void on_both_halves(F&& f) {
#pragma omp parallel for num_threads(2) schedule(static, 1)
  for (int k = 0; k < 2; ++k) f(k);
}

// Vertex bisection of the graph of A + A^T: part[u] = 0 or 1 (the halves) or 2 (separator), from a breadth-
// first level structure rooted at a pseudo-peripheral unknown (George & Liu): one level near the middle
// separates the levels before it from those after it. Unknowns with a zero diagonal (zero_diag; branch currents
// of voltage sources and controlled sources) that touch the separator join it, so that no half is left with a
// branch equation whose coupling lies entirely in the separator. A matrix of several connected components none
// of which holds half the unknowns is split between components, with no separator; otherwise the largest
// component is cut and the others join the second half. Returns false if no small, balanced split exists.
bool bisect(int n, const int* Ap, const int* Ai, const std::vector<char>& zero_diag,
            std::vector<signed char>& part) {
  // adjacency of A + A^T without the diagonal (duplicates are harmless for a BFS)
  std::vector<int> xadj(n + 1, 0);
  for (int c = 0; c < n; ++c)
    for (int p = Ap[c]; p < Ap[c + 1]; ++p)
      if (Ai[p] != c) {
        ++xadj[Ai[p] + 1];
        ++xadj[c + 1];
      }
  for (int u = 0; u < n; ++u) xadj[u + 1] += xadj[u];
  std::vector<int> adj(xadj[n]);
  {
    std::vector<int> pos(xadj.begin(), xadj.end() - 1);
    for (int c = 0; c < n; ++c)
      for (int p = Ap[c]; p < Ap[c + 1]; ++p)
        if (Ai[p] != c) {
          adj[pos[Ai[p]]++] = c;
          adj[pos[c]++] = Ai[p];
        }
  }
  std::vector<int> level(n), order;
  order.reserve(n);
  std::vector<int> level_start;  // order[level_start[l] .. level_start[l+1]) is level l
  auto bfs = [&](int root) {
    std::fill(level.begin(), level.end(), -1);
    order.clear();
    level_start.assign(1, 0);
    level[root] = 0;
    order.push_back(root);
    for (size_t head = 0; head < order.size(); ++head) {
      const int v = order[head];
      if (level[v] == static_cast<int>(level_start.size())) level_start.push_back(static_cast<int>(head));
      for (int k = xadj[v]; k < xadj[v + 1]; ++k)
        if (level[adj[k]] < 0) {
          level[adj[k]] = level[v] + 1;
          order.push_back(adj[k]);
        }
    }
    level_start.push_back(static_cast<int>(order.size()));
  };
  auto degree = [&](int u) { return xadj[u + 1] - xadj[u]; };
  // Connected components (circuits that meet only at ground share no matrix entry).
  std::vector<int> comp(n, -1), comp_size;
  for (int s = 0; s < n; ++s) {
    if (comp[s] >= 0) continue;
    const int c = static_cast<int>(comp_size.size());
    comp[s] = c;
    order.assign(1, s);
    for (size_t head = 0; head < order.size(); ++head)
      for (int k = xadj[order[head]]; k < xadj[order[head] + 1]; ++k)
        if (comp[adj[k]] < 0) {
          comp[adj[k]] = c;
          order.push_back(adj[k]);
        }
    comp_size.push_back(static_cast<int>(order.size()));
  }
  const int biggest = static_cast<int>(std::max_element(comp_size.begin(), comp_size.end()) - comp_size.begin());
  if (comp_size[biggest] <= n / 2) {
    // No component has half the unknowns: whole components go to the emptier half, largest first, and there
    // is no separator.
    std::vector<int> by_size(comp_size.size());
    for (size_t c = 0; c < by_size.size(); ++c) by_size[c] = static_cast<int>(c);
    std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) { return comp_size[a] > comp_size[b]; });
    std::vector<signed char> side(comp_size.size());
    int filled[2] = {0, 0};
    for (int c : by_size) {
      side[c] = filled[0] <= filled[1] ? 0 : 1;
      filled[side[c]] += comp_size[c];
    }
    part.resize(n);
    for (int u = 0; u < n; ++u) part[u] = side[comp[u]];
    return std::min(filled[0], filled[1]) >= n / 4;
  }
  // pseudo-peripheral root in the largest component: restart from a least-connected unknown of the last level
  // while the depth grows
  int root = static_cast<int>(std::find(comp.begin(), comp.end(), biggest) - comp.begin()), depth = -1;
  for (int it = 0; it < 8; ++it) {
    bfs(root);
    const int levels = static_cast<int>(level_start.size()) - 1;
    if (levels <= depth) break;
    depth = levels;
    int best = order[level_start[levels - 1]];
    for (int k = level_start[levels - 1]; k < level_start[levels]; ++k)
      if (degree(order[k]) < degree(best)) best = order[k];
    root = best;
  }
  bfs(root);
  const int levels = static_cast<int>(level_start.size()) - 1;
  if (levels < 5) return false;
  // The larger half sets the time on two threads: among the levels leaving at least a quarter of the
  // unknowns on each side, the one minimizing size * (1 + 4 * imbalance), imbalance = |before - after| / n.
  int sep_level = -1;
  double best = 0;
  for (int l = 1; l + 1 < levels; ++l) {
    const int before = level_start[l], size = level_start[l + 1] - level_start[l];
    const int after = n - before - size;
    if (before < n / 4 || after < n / 4) continue;
    const double score = size * (1.0 + 4.0 * std::abs(before - after) / n);
    if (sep_level < 0 || score < best) {
      sep_level = l;
      best = score;
    }
  }
  if (sep_level < 0) return false;
  part.assign(n, 1);  // the other connected components go with the second half
  for (int u = 0; u < n; ++u)
    if (level[u] >= 0) part[u] = level[u] < sep_level ? 0 : level[u] == sep_level ? 2 : 1;
  for (bool moved = true; moved;) {
    moved = false;
    for (int u = 0; u < n; ++u) {
      if (part[u] == 2 || !zero_diag[u]) continue;
      for (int k = xadj[u]; k < xadj[u + 1]; ++k)
        if (part[adj[k]] == 2) {
          part[u] = 2;
          moved = true;
          break;
        }
    }
  }
  const int n_sep = static_cast<int>(std::count(part.begin(), part.end(), 2));
  return n_sep <= kMaxSeparator && n_sep <= n / 16;
}

// Copies rows and columns p0..n-1 of a real KLU factorization's L (with its unit diagonal) and U into dense
// Lt and Ut (zeroed, (n - p0) square). Reads KLU's packed factors directly, as klu_extract does, for the
// trailing columns only (klu_extract copies all of L and U, 5-10 ms on the crossbar's halves): with the BTF
// pre-ordering off there is one block; column k of L (and likewise U) is Llen[k] int row indices in pivot
// order at LUbx[0] + Lip[k], padded to whole doubles, followed by Llen[k] values; U's diagonal is Udiag.
// tests/test_sparse_lu.cpp checks split solutions against the whole matrix's.
void trailing_corner(const klu_numeric* num, int p0, int n, Eigen::MatrixXd& Lt, Eigen::MatrixXd& Ut) {
  const double* lu = static_cast<const double*>(num->LUbx[0]);
  const double* udiag = static_cast<const double*>(num->Udiag);
  auto column = [&](const int* ip, const int* len, int k, auto&& visit) {
    const double* xp = lu + ip[k];
    const int* idx = reinterpret_cast<const int*>(xp);
    const double* val = xp + (static_cast<size_t>(len[k]) * sizeof(int) + sizeof(double) - 1) / sizeof(double);
    for (int p = 0; p < len[k]; ++p) visit(idx[p], val[p]);
  };
  for (int j = p0; j < n; ++j) {
    Lt(j - p0, j - p0) = 1.0;
    column(num->Lip, num->Llen, j, [&](int i, double v) { Lt(i - p0, j - p0) = v; });
    column(num->Uip, num->Ulen, j, [&](int i, double v) {
      if (i >= p0) Ut(i - p0, j - p0) = v;
    });
    Ut(j - p0, j - p0) = udiag[j];
  }
}
}  // namespace

struct SplitLU {
  struct Coupling {
    int row, col, nz;  // row and column (local to a half, or a separator index) and the global nonzero
  };
  struct Half {
    std::vector<int> glob;            // local unknown -> global unknown
    std::vector<int> Ap, Ai, nz_of;   // CSC pattern of A_kk; nz_of[p] = global nonzero index
    std::vector<Coupling> to_sep;     // A_kS: row local to the half, col = separator index
    std::vector<Coupling> from_sep;   // A_Sk: row = separator index, col local to the half
    std::vector<double> ax, to_val, from_val;
    KluLU<double> lu;
    std::vector<int> constraint;      // CAMD sets: 1 = coupled to the separator (ordered last)
    std::vector<int> pinv, qinv;      // inverse row and column permutations of the last factorization
    Eigen::MatrixXd contrib;          // A_Sk A_kk^-1 A_kS, |S| x |S|
    std::vector<double> y, v;         // solve work, size of the half
  };
  int n = 0;
  std::vector<int> sep;               // separator index -> global unknown
  std::vector<Coupling> ss;           // A_SS: row and column separator indices
  std::vector<double> ss_val, row_scale, rhs;
  Half half[2];
  Eigen::PartialPivLU<Eigen::MatrixXd> slu;

  // Builds the split of pattern (Ap, Ai) with values Ax, or returns nullptr if none pays.
  static std::unique_ptr<SplitLU> build(int n, const int* Ap, const int* Ai, const double* Ax);
  bool factor(const double* Ax);
  bool factor_half(Half& h, const double* Ax);
  void solve(double* b);
  bool both_refactored() const { return half[0].lu.last_was_refactor() && half[1].lu.last_was_refactor(); }
};

std::unique_ptr<SplitLU> SplitLU::build(int n, const int* Ap, const int* Ai, const double* Ax) {
  std::vector<char> zero_diag(n, 1);  // no diagonal entry, or a zero one, in Ax
  for (int c = 0; c < n; ++c)
    for (int p = Ap[c]; p < Ap[c + 1]; ++p)
      if (Ai[p] == c && Ax[p] != 0.0) zero_diag[c] = 0;
  std::vector<signed char> part;
  if (!bisect(n, Ap, Ai, zero_diag, part)) return nullptr;
  auto s = std::make_unique<SplitLU>();
  s->n = n;
  std::vector<int> loc(n);
  for (int u = 0; u < n; ++u) {
    auto& list = part[u] == 2 ? s->sep : s->half[part[u]].glob;
    loc[u] = static_cast<int>(list.size());
    list.push_back(u);
  }
  std::vector<int> constraint[2];
  for (int k = 0; k < 2; ++k) {
    Half& h = s->half[k];
    h.Ap.assign(1, 0);
    constraint[k].assign(h.glob.size(), 0);
  }
  // columns in global order keep each half's columns (and rows) in increasing local order
  for (int c = 0; c < n; ++c) {
    const int pc = part[c];
    for (int p = Ap[c]; p < Ap[c + 1]; ++p) {
      const int r = Ai[p], pr = part[r];
      if (pc == 2 && pr == 2) {
        s->ss.push_back({loc[r], loc[c], p});
      } else if (pc == 2) {
        s->half[pr].to_sep.push_back({loc[r], loc[c], p});
        constraint[pr][loc[r]] = 1;
      } else if (pr == 2) {
        s->half[pc].from_sep.push_back({loc[r], loc[c], p});
        constraint[pc][loc[c]] = 1;
      } else if (pr == pc) {
        s->half[pc].Ai.push_back(loc[r]);
        s->half[pc].nz_of.push_back(p);
      } else {
        return nullptr;  // not a separator (cannot happen for a BFS level)
      }
    }
    if (pc != 2) s->half[pc].Ap.push_back(static_cast<int>(s->half[pc].Ai.size()));
  }
  // A zero-diagonal unknown (a branch current) coupled to a constrained unknown is constrained too: its
  // column pivots on that unknown's row, which must stay in the trailing corner.
  for (int k = 0; k < 2; ++k) {
    Half& h = s->half[k];
    const int nk = static_cast<int>(h.glob.size());
    auto& con = constraint[k];
    for (bool grew = true; grew;) {
      grew = false;
      for (int c = 0; c < nk; ++c)
        for (int p = h.Ap[c]; p < h.Ap[c + 1]; ++p) {
          const int r = h.Ai[p];
          if (con[r] && !con[c] && zero_diag[h.glob[c]]) con[c] = grew = true;
          if (con[c] && !con[r] && zero_diag[h.glob[r]]) con[r] = grew = true;
        }
    }
  }
  for (int k = 0; k < 2; ++k) {
    Half& h = s->half[k];
    const int nk = static_cast<int>(h.glob.size());
    h.constraint = std::move(constraint[k]);
    h.ax.resize(h.nz_of.size());
    h.y.resize(nk);
    h.pinv.resize(nk);
    h.qinv.resize(nk);
    h.v.resize(nk);
  }
  return s;
}

bool SplitLU::factor_half(Half& h, const double* Ax) {
  const int nk = static_cast<int>(h.glob.size());
  const int m = static_cast<int>(sep.size());
  for (size_t p = 0; p < h.nz_of.size(); ++p) h.ax[p] = Ax[h.nz_of[p]];
  h.to_val.resize(h.to_sep.size());
  for (size_t e = 0; e < h.to_sep.size(); ++e) h.to_val[e] = Ax[h.to_sep[e].nz];
  h.from_val.resize(h.from_sep.size());
  for (size_t e = 0; e < h.from_sep.size(); ++e) h.from_val[e] = Ax[h.from_sep[e].nz];
  if (!h.lu.symbolic() && !h.lu.analyze(nk, h.Ap.data(), h.Ai.data(), h.constraint.data())) return false;
  if (!h.lu.factor(h.ax.data())) return false;
  if (m == 0) return true;  // halves without a separator (disconnected components)
  // P R^-1 A_kk Q = L U with P = Numeric->Pnum, Q = Symbolic->Q, R = diag(Numeric->Rs) in pivot order (none
  // after a refactorization), L unit lower triangular.
  klu_numeric* num = h.lu.numeric();
  const int* Pnum = num->Pnum;
  const int* Q = h.lu.symbolic()->Q;
  for (int i = 0; i < nk; ++i) {
    h.pinv[Pnum[i]] = i;
    h.qinv[Q[i]] = i;
  }
  // A_Sk A_kk^-1 A_kS = (A_Sk Q U^-1) (L^-1 P R^-1 A_kS). Both factors are zero before position p0, the first
  // pivot row of a coupling row or column of a coupling column, so only the trailing corners of L and U count.
  int p0 = nk;
  for (const auto& e : h.to_sep) p0 = std::min(p0, h.pinv[e.row]);
  for (const auto& e : h.from_sep) p0 = std::min(p0, h.qinv[e.col]);
  const int t = nk - p0;
  if (t > kMaxTrailing) return false;
  Eigen::MatrixXd Lt = Eigen::MatrixXd::Zero(t, t), Ut = Eigen::MatrixXd::Zero(t, t);
  trailing_corner(num, p0, nk, Lt, Ut);
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(t, m), Z = Eigen::MatrixXd::Zero(m, t);
  for (size_t e = 0; e < h.to_sep.size(); ++e) {
    const int i = h.pinv[h.to_sep[e].row];
    W(i - p0, h.to_sep[e].col) += num->Rs ? h.to_val[e] / num->Rs[i] : h.to_val[e];
  }
  for (size_t e = 0; e < h.from_sep.size(); ++e)
    Z(h.from_sep[e].row, h.qinv[h.from_sep[e].col] - p0) += h.from_val[e];
  Lt.triangularView<Eigen::UnitLower>().solveInPlace(W);
  Ut.triangularView<Eigen::Upper>().solveInPlace<Eigen::OnTheRight>(Z);
  h.contrib.noalias() = Z * W;
  return std::isfinite(h.contrib.sum());
}

bool SplitLU::factor(const double* Ax) {
  bool ok[2];
  on_both_halves([&](int k) { ok[k] = factor_half(half[k], Ax); });
  if (!ok[0] || !ok[1]) return false;
  const int m = static_cast<int>(sep.size());
  if (m == 0) return true;
  Eigen::MatrixXd S = -half[0].contrib - half[1].contrib;
  for (const auto& e : ss) S(e.row, e.col) += Ax[e.nz];
  // rows scaled by their largest entry (the scale is applied to the right-hand side in solve)
  row_scale.assign(m, 1.0);
  for (int i = 0; i < m; ++i) {
    const double big = S.row(i).cwiseAbs().maxCoeff();
    if (!(big > 0) || !std::isfinite(big)) return false;
    row_scale[i] = 1.0 / big;
    S.row(i) *= row_scale[i];
  }
  slu.compute(S);
  const auto d = slu.matrixLU().diagonal().cwiseAbs();
  const double lo = d.minCoeff(), hi = d.maxCoeff();
  return hi > 0 && std::isfinite(lo) && lo / hi >= kSeparatorRcondLimit;
}

void SplitLU::solve(double* b) {
  const int m = static_cast<int>(sep.size());
  on_both_halves([&](int k) {
    Half& h = half[k];
    for (size_t i = 0; i < h.glob.size(); ++i) h.y[i] = b[h.glob[i]];
    h.lu.solve(h.y.data());
    if (m == 0)
      for (size_t i = 0; i < h.glob.size(); ++i) b[h.glob[i]] = h.y[i];
  });
  if (m == 0) return;
  Eigen::VectorXd r(m);
  for (int s = 0; s < m; ++s) r[s] = b[sep[s]];
  for (const Half& h : half)
    for (size_t e = 0; e < h.from_sep.size(); ++e) r[h.from_sep[e].row] -= h.from_val[e] * h.y[h.from_sep[e].col];
  for (int s = 0; s < m; ++s) r[s] *= row_scale[s];
  const Eigen::VectorXd xs = slu.solve(r);
  on_both_halves([&](int k) {
    Half& h = half[k];
    std::fill(h.v.begin(), h.v.end(), 0.0);
    for (size_t e = 0; e < h.to_sep.size(); ++e) h.v[h.to_sep[e].row] += h.to_val[e] * xs[h.to_sep[e].col];
    h.lu.solve(h.v.data());
    for (size_t i = 0; i < h.glob.size(); ++i) b[h.glob[i]] = h.y[i] - h.v[i];
  });
  for (int s = 0; s < m; ++s) b[sep[s]] = xs[s];
}

// ---- SparseLU --------------------------------------------------------------------------------------------

template <class T>
SparseLU<T>::SparseLU() = default;

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
