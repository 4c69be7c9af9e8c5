// The two-half split of SparseLU (see sparse_lu.hpp): bisection, the halves' KLU factorizations on two threads,
// the separator system from their trailing corners.
#include "engine/split_lu.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <omp.h>
#include <vector>

namespace anasim {

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

}  // namespace anasim
