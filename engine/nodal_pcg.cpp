#include "engine/nodal_pcg.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <omp.h>

namespace anasim {

bool NodalPcg::analyze(int n, const int* Ap, const int* Ai) {
  *this = NodalPcg();
  n_ = n;
  Ap_ = Ap;
  Ai_ = Ai;
  return n > 0;
}

bool NodalPcg::build(const double* Ax) {
  const int n = n_;
  const int* Ap = Ap_;
  const int* Ai = Ai_;
  const int nnz = Ap[n];
  // Row-wise view of the pattern: row i's (column, CSC position) pairs, columns ascending.
  std::vector<int> rp(n + 1, 0), rj(nnz), rq(nnz);
  for (int p = 0; p < nnz; ++p) ++rp[Ai[p] + 1];
  for (int i = 0; i < n; ++i) rp[i + 1] += rp[i];
  {
    std::vector<int> next(rp.begin(), rp.end() - 1);
    for (int j = 0; j < n; ++j)
      for (int p = Ap[j]; p < Ap[j + 1]; ++p) {
        const int at = next[Ai[p]]++;
        rj[at] = j;
        rq[at] = p;
      }
  }

  // Candidate eliminations: row k holds x_a (and x_c); column k holds row a only (a grounded source), or rows a and
  // c (a floating one). Roles: 1 = k, 2 = a. Grounded sources first; then each floating one eliminates whichever
  // of its nodes no elimination so far depends on (is_c), keeping the other.
  std::vector<char> role(n, 0), is_c(n, 0);
  std::vector<Elimination> cand;
  for (int pass = 1; pass <= 2; ++pass)
    for (int k = 0; k < n; ++k) {
      // Column k: rows other than k (the diagonal, if the pattern holds it, must be zero).
      int rows[2] = {-1, -1}, prow[2] = {-1, -1}, p_kk = -1, others = 0;
      for (int p = Ap[k]; p < Ap[k + 1]; ++p) {
        if (Ai[p] == k) p_kk = p;
        else if (others++ < 2) {
          rows[others - 1] = Ai[p];
          prow[others - 1] = p;
        }
      }
      if (others != pass || role[k] || rp[k + 1] - rp[k] > 2 + (p_kk >= 0) || (p_kk >= 0 && Ax[p_kk] != 0.0))
        continue;
      for (int side = 0; side < pass; ++side) {  // which node is a
        const int a = rows[side];
        if (role[a] || (pass == 2 && is_c[a])) continue;
        Elimination e{k, a, -1, -1, -1, prow[side], p_kk, -1, 0, 0, 0, 0};
        for (int t = rp[k]; t < rp[k + 1]; ++t) {
          if (rj[t] == a) e.p_ka = rq[t];
          else if (rj[t] != k) {
            e.c = rj[t];
            e.p_kc = rq[t];
          }
        }
        if (e.p_ka < 0 || (pass == 2 && (e.c != rows[1 - side] || role[e.c]))) continue;
        for (int p = Ap[a]; p < Ap[a + 1]; ++p)
          if (Ai[p] == a) e.p_aa = p;
        role[k] = 1;
        role[a] = 2;
        if (e.c >= 0) is_c[e.c] = 1;
        cand.push_back(e);
        break;
      }
    }
  // An elimination whose x_c is itself eliminated is dropped (roles only clear here, so the kept ones stay valid).
  for (const Elimination& e : cand) {
    if (e.c >= 0 && role[e.c]) {
      role[e.k] = role[e.a] = 0;
      continue;
    }
    elim_.push_back(e);
  }
  red_.assign(n, -1);
  for (int u = 0; u < n; ++u)
    if (!role[u]) {
      red_[u] = static_cast<int>(keep_.size());
      keep_.push_back(u);
    }
  const int m = static_cast<int>(keep_.size());
  if (m == 0) return false;

  // The other rows that hold x_a or x_k (in the reduced system), row a's entries, and the fill: row r's update
  // -(alpha_r A_kj + beta_r A_aj) reaches column c (from row k) and, where beta_r != 0 (row c of a floating
  // source), row a's columns.
  struct FillAt {
    int r, j;  // reduced row and column
    int f;     // index in fill_
  };
  std::vector<FillAt> at;
  std::vector<int> ref_of(m, -1);
  for (Elimination& e : elim_) {
    e.rows0 = static_cast<int>(refs_.size());
    for (int p = Ap_[e.a]; p < Ap_[e.a + 1]; ++p) {
      const int r = red_[Ai[p]];
      if (r < 0) continue;
      ref_of[r] = static_cast<int>(refs_.size());
      refs_.push_back({r, p, -1});
    }
    for (int p = Ap_[e.k]; p < Ap_[e.k + 1]; ++p) {
      const int r = red_[Ai[p]];
      if (r < 0) continue;
      if (ref_of[r] < e.rows0) {
        ref_of[r] = static_cast<int>(refs_.size());
        refs_.push_back({r, -1, p});
      } else {
        refs_[ref_of[r]].p_rk = p;
      }
    }
    e.rows1 = static_cast<int>(refs_.size());
    e.arow0 = static_cast<int>(arow_.size());
    for (int t = rp[e.a]; t < rp[e.a + 1]; ++t)
      if (rj[t] != e.k) arow_.push_back({rq[t], rj[t]});
    e.arow1 = static_cast<int>(arow_.size());
    for (int t = e.rows0; t < e.rows1; ++t) {
      const RowRef& ref = refs_[t];
      if (e.c >= 0) {
        at.push_back({ref.r, red_[e.c], static_cast<int>(fill_.size())});
        fill_.push_back({-1, t, e.p_kc, false});
      }
      if (ref.p_rk >= 0)
        for (int x = e.arow0; x < e.arow1; ++x)
          if (red_[arow_[x].second] >= 0) {
            at.push_back({ref.r, red_[arow_[x].second], static_cast<int>(fill_.size())});
            fill_.push_back({-1, t, arow_[x].first, true});
          }
    }
  }
  // Fill entries by row.
  std::vector<int> fill_cnt(m + 1, 0);
  for (const FillAt& x : at) ++fill_cnt[x.r + 1];
  for (int i = 0; i < m; ++i) fill_cnt[i + 1] += fill_cnt[i];
  std::vector<FillAt> fill(at.size());
  {
    std::vector<int> next(fill_cnt.begin(), fill_cnt.end() - 1);
    for (const FillAt& x : at) fill[next[x.r]++] = x;
  }

  // M's pattern, row by row with columns ascending; the value recipe. (Sized for the most they can hold, A's entries
  // and the fill: not grown by doubling, each growth a copy into fresh pages.)
  Mj_.reserve(static_cast<size_t>(nnz) + at.size());
  gather_.reserve(static_cast<size_t>(nnz));
  Mp_.assign(m + 1, 0);
  Mdiag_.assign(m, -1);
  std::vector<int> col_q(m, -1), cols;
  for (int i = 0; i < m; ++i) {
    const int u = keep_[i];
    cols.clear();
    for (int t = rp[u]; t < rp[u + 1]; ++t)
      if (red_[rj[t]] >= 0) cols.push_back(red_[rj[t]]);
    for (int f = fill_cnt[i]; f < fill_cnt[i + 1]; ++f) cols.push_back(fill[f].j);
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int j : cols) {
      col_q[j] = static_cast<int>(Mj_.size());
      if (j == i) Mdiag_[i] = col_q[j];
      Mj_.push_back(j);
    }
    Mp_[i + 1] = static_cast<int>(Mj_.size());
    for (int t = rp[u]; t < rp[u + 1]; ++t)
      if (red_[rj[t]] >= 0) gather_.push_back({rq[t], col_q[red_[rj[t]]]});
    for (int f = fill_cnt[i]; f < fill_cnt[i + 1]; ++f) fill_[fill[f].f].q = col_q[fill[f].j];
    if (Mdiag_[i] < 0) return false;  // no diagonal: never dominant
  }
  // Each entry's transpose (rows ascending meet each row's columns ascending), or not structurally symmetric.
  Mt_.assign(Mj_.size(), -1);
  {
    std::vector<int> cursor(Mp_.begin(), Mp_.end() - 1);
    for (int i = 0; i < m; ++i)
      for (int q = Mp_[i]; q < Mp_[i + 1]; ++q) {
        const int j = Mj_[q];
        const int t = cursor[j]++;
        if (t >= Mp_[j + 1] || Mj_[t] != i) return false;
        Mt_[q] = t;
      }
  }
  return true;
}

bool NodalPcg::factor(const double* Ax) {
  if (!built_) {
    if (!build(Ax)) return false;
    built_ = true;
  }
  const int m = static_cast<int>(keep_.size());
  const size_t ne = elim_.size();
  Mx_.assign(Mj_.size(), 0.0);
  for (auto [p, q] : gather_) Mx_[q] += Ax[p];
  ka_.resize(ne);
  kc_.resize(ne);
  ak_.resize(ne);
  alpha_.resize(refs_.size());
  beta_.resize(refs_.size());
  for (size_t s = 0; s < ne; ++s) {
    const Elimination& e = elim_[s];
    ka_[s] = Ax[e.p_ka];
    ak_[s] = Ax[e.p_ak];
    kc_[s] = e.c >= 0 ? Ax[e.p_kc] : 0.0;
    if (ka_[s] == 0.0 || ak_[s] == 0.0 || !std::isfinite(ka_[s]) || !std::isfinite(ak_[s]) ||
        (e.p_kk >= 0 && Ax[e.p_kk] != 0.0))
      return false;
    // [A_ra, A_rk] times the inverse of the pivot block [[A_ka, 0], [A_aa, A_ak]] (rows k, a; columns a, k)
    const double aa = e.p_aa >= 0 ? Ax[e.p_aa] : 0.0;
    for (int t = e.rows0; t < e.rows1; ++t) {
      const double ra = refs_[t].p_ra >= 0 ? Ax[refs_[t].p_ra] : 0.0, rk = refs_[t].p_rk >= 0 ? Ax[refs_[t].p_rk] : 0.0;
      alpha_[t] = ra / ka_[s] - rk * aa / (ka_[s] * ak_[s]);
      beta_[t] = rk / ak_[s];
    }
  }
  for (const Fill& f : fill_) Mx_[f.q] -= (f.from_a ? beta_[f.t] : alpha_[f.t]) * Ax[f.p];
  arow_x_.resize(arow_.size());
  for (size_t t = 0; t < arow_.size(); ++t) arow_x_[t] = Ax[arow_[t].first];

  // Symmetric, positive dominant diagonal; rows that dominate strictly (the circuit's ties to ground).
  std::vector<char> strict(m, 0);
  for (int i = 0; i < m; ++i) {
    const double d = Mx_[Mdiag_[i]];
    if (!(d > 0.0) || !std::isfinite(d)) return false;
    double off = 0.0;
    for (int q = Mp_[i]; q < Mp_[i + 1]; ++q) {
      if (q == Mdiag_[i]) continue;
      const double v = Mx_[q], w = Mx_[Mt_[q]];
      if (!std::isfinite(v) || std::abs(v - w) > 1e-12 * std::max(std::abs(v), std::abs(w))) return false;
      off += std::abs(v);
    }
    if (off > d * (1.0 + 1e-12)) return false;
    strict[i] = d - off > 1e-12 * d;
  }

  // Maximum spanning forest of |M_ij| (Kruskal; edges bucketed by binary exponent, largest first).
  struct Edge {
    int i, q;  // row, and upper-triangle position of a nonzero value
  };
  std::vector<Edge> edges;
  std::vector<int> bucket_of;
  {  // (sized for every off-diagonal pair: not grown by doubling, each growth a copy into fresh pages)
    const size_t pairs = static_cast<size_t>(Mp_[m] - m) / 2 + 1;
    edges.reserve(pairs);
    bucket_of.reserve(pairs);
  }
  constexpr int kExp = 2100, kBias = 1075;
  std::vector<int> count(kExp + 1, 0);
  for (int i = 0; i < m; ++i)
    for (int q = Mp_[i]; q < Mp_[i + 1]; ++q)
      if (Mj_[q] > i && Mx_[q] != 0.0) {
        int ex;
        std::frexp(Mx_[q], &ex);
        const int b = kExp - 1 - (ex + kBias);  // larger exponent, smaller bucket index
        edges.push_back({i, q});
        bucket_of.push_back(b);
        ++count[b + 1];
      }
  for (int b = 0; b < kExp; ++b) count[b + 1] += count[b];
  std::vector<Edge> sorted(edges.size());
  for (size_t t = 0; t < edges.size(); ++t) sorted[count[bucket_of[t]]++] = edges[t];
  std::vector<int> uf(m), size(m, 1);
  std::iota(uf.begin(), uf.end(), 0);
  auto find = [&](int x) {
    while (uf[x] != x) x = uf[x] = uf[uf[x]];
    return x;
  };
  std::vector<int> fp(m + 1, 0);
  std::vector<Edge> tree;
  tree.reserve(m);
  for (const Edge& e : sorted) {
    int a = find(e.i), b = find(Mj_[e.q]);
    if (a == b) continue;
    if (size[a] < size[b]) std::swap(a, b);
    uf[b] = a;
    size[a] += size[b];
    tree.push_back(e);
    ++fp[e.i + 1];
    ++fp[Mj_[e.q] + 1];
  }
  // Every component needs a strictly dominant row, or M is singular there (or may be): the caller factors it.
  std::vector<char> grounded(m, 0);
  for (int i = 0; i < m; ++i)
    if (strict[i]) grounded[find(i)] = 1;
  for (int i = 0; i < m; ++i)
    if (!grounded[find(i)]) return false;
  // Forest adjacency, then breadth-first order from each root (parents before children).
  for (int i = 0; i < m; ++i) fp[i + 1] += fp[i];
  std::vector<std::pair<int, double>> adj(fp[m]);
  {
    std::vector<int> next(fp.begin(), fp.end() - 1);
    for (const Edge& e : tree) {
      adj[next[e.i]++] = {Mj_[e.q], Mx_[e.q]};
      adj[next[Mj_[e.q]]++] = {e.i, Mx_[e.q]};
    }
  }
  ord_.clear();
  ord_.reserve(m);
  par_.assign(m, -1);
  l_.assign(m, 0.0);
  dinv_.assign(m, 0.0);
  std::vector<int> parent(m, -2);
  std::vector<double> pm(m, 0.0);  // M_{v,parent}
  for (int root = 0; root < m; ++root) {
    if (parent[root] != -2) continue;
    parent[root] = -1;
    size_t h = ord_.size();
    ord_.push_back(root);
    for (; h < ord_.size(); ++h) {
      const int v = ord_[h];
      for (int t = fp[v]; t < fp[v + 1]; ++t)
        if (parent[adj[t].first] == -2) {
          parent[adj[t].first] = v;
          pm[adj[t].first] = adj[t].second;
          ord_.push_back(adj[t].first);
        }
    }
  }
  // P = L D L^T, leaves first.
  std::vector<double> d(m);
  for (int i = 0; i < m; ++i) d[i] = Mx_[Mdiag_[i]];
  for (int h = m - 1; h >= 0; --h) {
    const int v = ord_[h];
    if (!(d[v] > 1e-14 * Mx_[Mdiag_[v]])) return false;
    par_[h] = parent[v];
    dinv_[h] = 1.0 / d[v];
    if (parent[v] >= 0) {
      l_[h] = pm[v] / d[v];
      d[parent[v]] -= pm[v] * l_[h];
    }
  }
  have_start_ = have_start_ && y_.size() == static_cast<size_t>(m);
  return true;
}

namespace {

// The vector kernels below run on the OpenMP threads from kParallelMin unknowns (when not already inside a parallel
// region). Dot products sum fixed blocks of kBlock entries and then the blocks in order, so that the iterates, and
// the number of steps, do not depend on the number of threads.
constexpr int kParallelMin = 50000;
constexpr int kBlock = 4096;

bool parallel(int m) { return m >= kParallelMin && !omp_in_parallel() && omp_get_max_threads() > 1; }

double dot(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& part) {
  const int m = static_cast<int>(a.size()), nb = (m + kBlock - 1) / kBlock;
  part.resize(nb);
#pragma omp parallel for schedule(static) if (parallel(m))
  for (int k = 0; k < nb; ++k) {
    double s = 0.0;
    const int end = std::min(m, (k + 1) * kBlock);
    for (int i = k * kBlock; i < end; ++i) s += a[i] * b[i];
    part[k] = s;
  }
  double s = 0.0;
  for (double v : part) s += v;
  return s;
}

}  // namespace

void NodalPcg::spmv(const double* y, double* out) const {
  const int m = static_cast<int>(keep_.size());
#pragma omp parallel for schedule(static) if (parallel(m))
  for (int i = 0; i < m; ++i) {
    double s = 0.0;
    for (int q = Mp_[i]; q < Mp_[i + 1]; ++q) s += Mx_[q] * y[Mj_[q]];
    out[i] = s;
  }
}

void NodalPcg::precondition(const double* r, double* z) const {
  const int m = static_cast<int>(keep_.size());
  std::copy(r, r + m, z);
  for (int h = m - 1; h >= 0; --h)
    if (par_[h] >= 0) z[par_[h]] -= l_[h] * z[ord_[h]];
  for (int h = 0; h < m; ++h) {
    const int v = ord_[h];
    z[v] = z[v] * dinv_[h] - (par_[h] >= 0 ? l_[h] * z[par_[h]] : 0.0);
  }
}

bool NodalPcg::solve(double* b, const double* start) {
  const int m = static_cast<int>(keep_.size());
  const size_t ne = elim_.size();
  c_.resize(m);
  r_.resize(m);
  z_.resize(m);
  p_.resize(m);
  q_.resize(m);
  std::vector<double> y(m, 0.0);
  const bool started = start || have_start_;
  if (start)
    for (int i = 0; i < m; ++i) y[i] = start[keep_[i]];
  else if (have_start_)
    y = y_;
  for (int i = 0; i < m; ++i) c_[i] = b[keep_[i]];
  for (size_t s = 0; s < ne; ++s) {
    const Elimination& e = elim_[s];
    for (int t = e.rows0; t < e.rows1; ++t) c_[refs_[t].r] -= alpha_[t] * b[e.k] + beta_[t] * b[e.a];
  }
  // True residual r = c - M y and the scale of the backward error, max_i |c_i| + (|M| |y|)_i.
  auto residual = [&](double& scale) {
    scale = 0.0;
    double rmax = 0.0;
#pragma omp parallel for schedule(static) reduction(max : scale, rmax) if (parallel(m))
    for (int i = 0; i < m; ++i) {
      double s = 0.0, a = std::abs(c_[i]);
      for (int q = Mp_[i]; q < Mp_[i + 1]; ++q) {
        const double t = Mx_[q] * y[Mj_[q]];
        s += t;
        a += std::abs(t);
      }
      r_[i] = c_[i] - s;
      scale = std::max(scale, a);
      rmax = std::max(rmax, std::abs(r_[i]));
    }
    return rmax;
  };
  double scale = 0.0;
  double rmax = residual(scale);
  if (started) {  // a start only if it beats zero (not for a refinement's correction)
    double cmax = 0.0;
    for (int i = 0; i < m; ++i) cmax = std::max(cmax, std::abs(c_[i]));
    if (!(rmax < cmax)) {
      std::fill(y.begin(), y.end(), 0.0);
      rmax = residual(scale);
    }
  }
  const double r0 = rmax;
  int its = 0;
  bool done = !(rmax > kTolerance * scale);
  while (!done) {
    // (Re)start from the true residual.
    precondition(r_.data(), z_.data());
    std::copy(z_.begin(), z_.end(), p_.begin());
    double rz = dot(r_, z_, part_);
    for (;;) {
      spmv(p_.data(), q_.data());
      const double pq = dot(p_, q_, part_);
      if (!(pq > 0.0) || !std::isfinite(rz)) {
        last_its_ = its;
        total_its_ += its;
        return false;  // breakdown: M not positive definite after all
      }
      const double alpha = rz / pq;
      rmax = 0.0;
#pragma omp parallel for schedule(static) reduction(max : rmax) if (parallel(m))
      for (int i = 0; i < m; ++i) {
        y[i] += alpha * p_[i];
        r_[i] -= alpha * q_[i];
        rmax = std::max(rmax, std::abs(r_[i]));
      }
      ++its;
      if (rmax <= kTolerance * scale) break;  // check the true residual
      bool give_up = its >= kMaxIterations || !std::isfinite(rmax);
      if (!give_up && its % 32 == 0) {  // will the rate so far get there in time?
        const double rate = std::pow(rmax / r0, 1.0 / its);
        give_up = !(rate < 1.0) || its + std::log(kTolerance * scale / rmax) / std::log(rate) > kMaxIterations;
      }
      if (give_up) {
        last_its_ = its;
        total_its_ += its;
        return false;
      }
      precondition(r_.data(), z_.data());
      const double rz1 = dot(r_, z_, part_);
      const double beta = rz1 / rz;
      rz = rz1;
#pragma omp parallel for schedule(static) if (parallel(m))
      for (int i = 0; i < m; ++i) p_[i] = z_[i] + beta * p_[i];
    }
    rmax = residual(scale);
    done = rmax <= kTolerance * scale;
    if (!done && its >= kMaxIterations) {
      last_its_ = its;
      total_its_ += its;
      return false;
    }
  }
  last_its_ = its;
  total_its_ += its;
  // The solution: reduced unknowns, then each x_a, then each branch current x_k from row a.
  std::vector<double> bk(ne), ba(ne);
  for (size_t s = 0; s < ne; ++s) {
    bk[s] = b[elim_[s].k];
    ba[s] = b[elim_[s].a];
  }
  for (int i = 0; i < m; ++i) b[keep_[i]] = y[i];
  for (size_t s = 0; s < ne; ++s) {
    const Elimination& e = elim_[s];
    b[e.a] = (bk[s] - (e.c >= 0 ? kc_[s] * b[e.c] : 0.0)) / ka_[s];
  }
  for (size_t s = 0; s < ne; ++s) {
    const Elimination& e = elim_[s];
    double sum = ba[s];
    for (int t = e.arow0; t < e.arow1; ++t) sum -= arow_x_[t] * b[arow_[t].second];
    b[e.k] = sum / ak_[s];
  }
  y_ = std::move(y);
  have_start_ = true;
  return true;
}

double NodalPcg::bytes() const {
  auto v = [](const auto& x) { return static_cast<double>(x.capacity() * sizeof(x[0])); };
  return v(elim_) + v(refs_) + v(arow_) + v(keep_) + v(red_) + v(Mp_) + v(Mj_) + v(Mt_) + v(Mdiag_) + v(gather_) +
         v(Mx_) + v(ka_) + v(kc_) + v(ak_) + v(alpha_) + v(beta_) + v(fill_) + v(arow_x_) + v(ord_) + v(par_) + v(l_) + v(dinv_) + v(y_) +
         v(c_) + v(r_) + v(z_) + v(p_) + v(q_) + v(part_);
}

}  // namespace anasim
