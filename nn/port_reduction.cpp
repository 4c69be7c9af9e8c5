// Port reduction of crossbar blocks with CHOLMOD (see port_reduction.hpp): the tiles' conductances from the crossbar
// element enumerator, the Schur complement onto the ports from the trailing block of a supernodal factor.
#include "nn/port_reduction.hpp"
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <xmmintrin.h>

namespace anasim::nn::fast {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Flushes subnormal results and operands to zero on this thread while in scope (SSE MXCSR FTZ and DAZ bits).
class FlushSubnormals {
 public:
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
 private:
  unsigned saved_;
};

}  // namespace

void add_tile(PortNetwork& net, const CrossbarSpec& s, const std::vector<double>& g, const std::vector<int>& rowpin,
              const std::vector<int>& colpin, int& next, std::vector<double>* cap) {
  const CrossbarTopology topo(s);
  const int R = s.rows, pins = topo.pins(), first = next;
  auto node = [&](int k) { return k < R ? rowpin[k] : k < pins ? colpin[k - R] : first + (k - pins); };
  topo.for_each_element(s, g, [&](const CrossbarElement& e) {
    switch (e.kind) {
      case CrossbarElement::Kind::Cell: net.edge(node(e.a), node(e.b), e.value); break;
      case CrossbarElement::Kind::RowWire:
      case CrossbarElement::Kind::ColWire: net.edge(node(e.a), node(e.b), 1.0 / e.value); break;
      default:  // capacitors: open at DC
        if (cap) {
          const int k = node(e.a);
          if (static_cast<int>(cap->size()) <= k) cap->resize(k + 1, 0.0);
          (*cap)[k] += e.value;
        }
        break;
    }
  });
  next += topo.nodes() - pins;
}

Status SchurSolver::compute(const PortNetwork& net, Eigen::MatrixXd& Y, bool trace, int split) {
  // Fill-in entries of L decay geometrically (mS wires next to uS cells) into the subnormal range, where the
  // arithmetic is ~100x slower; they are far below rounding of any port value: flush them to zero.
  const FlushSubnormals ftz;
  const auto t_start = Clock::now();
  const int n = net.n_int + net.n_port, m = net.n_port;
  // Lower-triangular CSC of the nodal matrix, ports shifted by delta (the port block alone is singular).
  std::vector<double> diag(n, 0.0);
  std::vector<std::vector<std::pair<int, double>>> below(n);
  for (size_t e = 0; e < net.eg.size(); ++e) {
    const int a = net.ea[e], b = net.eb[e];
    const double g = net.eg[e];
    diag[a] += g;
    diag[b] += g;
    below[std::min(a, b)].push_back({std::max(a, b), -g});
  }
  for (size_t k = 0; k < net.shunt.size(); ++k) diag[k] += net.shunt[k];
  std::vector<double> delta(m);
  for (int p = 0; p < m; ++p) {
    delta[p] = 1e-3 * diag[net.n_int + p] + 1e-12;
    diag[net.n_int + p] += delta[p];
  }
  if (net.n_int == 0) {  // nothing to eliminate
    Y = Eigen::MatrixXd::Zero(m, m);
    for (int p = 0; p < m; ++p) Y(p, p) = diag[p] - delta[p];
    for (int j = 0; j < n; ++j)
      for (auto [i, v] : below[j]) Y(i, j) = Y(j, i) = Y(i, j) + v;
    if (split > 0) Y = Y.bottomLeftCorner(m - split, split).eval();
    return {};
  }
  std::vector<int> Ap(n + 1), Ai;
  std::vector<double> Ax;
  Ai.reserve(n + net.eg.size());
  Ax.reserve(n + net.eg.size());
  for (int j = 0; j < n; ++j) {
    Ap[j] = static_cast<int>(Ai.size());
    auto& col = below[j];
    std::sort(col.begin(), col.end());
    Ai.push_back(j);
    Ax.push_back(diag[j]);
    for (size_t k = 0; k < col.size(); ++k) {
      if (k > 0 && col[k].first == col[k - 1].first) {
        Ax.back() += col[k].second;  // parallel edges
        continue;
      }
      Ai.push_back(col[k].first);
      Ax.push_back(col[k].second);
    }
  }
  Ap[n] = static_cast<int>(Ai.size());
  const bool same = L_ && Ap == ap_ && Ai == ai_;
  if (!same) {
    if (L_) cholmod_free_factor(&L_, &cc_);
    ap_ = Ap;
    ai_ = Ai;
    // Interior ordering (postordered), then the ports last in their own order.
    std::vector<int> pi, ii;
    std::vector<double> xi;
    std::vector<int> pcol(net.n_int + 1);
    for (int j = 0; j < net.n_int; ++j) {
      pcol[j] = static_cast<int>(ii.size());
      for (int k = Ap[j]; k < Ap[j + 1]; ++k)
        if (Ai[k] < net.n_int) {
          ii.push_back(Ai[k]);
          xi.push_back(Ax[k]);
        }
    }
    pcol[net.n_int] = static_cast<int>(ii.size());
    cholmod_sparse Aint = wrap(net.n_int, pcol, ii, xi);
    cc_.supernodal = CHOLMOD_SUPERNODAL;
    cc_.nmethods = 1;
    cc_.method[0].ordering = net.n_int > 2000 ? CHOLMOD_METIS : CHOLMOD_AMD;
    cc_.postorder = 1;
    // METIS draws from GKlib's random generator, whose state is shared by every thread: two blocks ordered at once
    // (fast_prepare factorizes blocks in parallel) would race on it and the orderings, hence the rounding of Y,
    // would change from run to run and with the thread count. One ordering at a time keeps them deterministic.
    cholmod_factor* Li = nullptr;
#pragma omp critical(anasim_cholmod_analyze)
    Li = cholmod_analyze(&Aint, &cc_);
    if (!Li) return Status::numerical("CHOLMOD could not order a crossbar block");
    std::vector<int> perm(n);
    const int* P = static_cast<const int*>(Li->Perm);
    for (int i = 0; i < net.n_int; ++i) perm[i] = P[i];
    for (int p = 0; p < m; ++p) perm[net.n_int + p] = net.n_int + p;
    cholmod_free_factor(&Li, &cc_);
    cc_.nmethods = 1;
    cc_.method[0].ordering = CHOLMOD_GIVEN;
    cc_.postorder = 0;
    cholmod_sparse A = wrap(n, Ap, Ai, Ax);
    // Relaxed supernode amalgamation: at CHOLMOD's defaults (4/16/48 columns, 0.8/0.1/0.05 zeros) a shipped
    // network's 57,696-node block has ~8,900 supernodes of 6 columns and the factorization runs at 1.8 GFLOP/s, its
    // BLAS calls' overhead; 16/48/128 and 0.8/0.2/0.05 halve the supernodes and take ~30% less time (measured:
    // a trial's port reduction with sigma_g 5%, 0.54 -> 0.38 s CPU); more amalgamation was slower again.
    cc_.nrelax[0] = 16;
    cc_.nrelax[1] = 48;
    cc_.nrelax[2] = 128;
    cc_.zrelax[0] = 0.8;
    cc_.zrelax[1] = 0.2;
    cc_.zrelax[2] = 0.05;
    L_ = cholmod_analyze_p(&A, perm.data(), nullptr, 0, &cc_);
    if (!L_) return Status::numerical("CHOLMOD analysis of a crossbar block failed");
  }
  cholmod_sparse A = wrap(n, Ap, Ai, Ax);
  const auto tf = Clock::now();
  const bool fok = cholmod_factorize(&A, L_, &cc_);
  if (!fok || cc_.status != CHOLMOD_OK)
    return Status::numerical(fmt::format("CHOLMOD factorization of a crossbar block failed (status {}, column {})",
                                         cc_.status, L_->minor));
  const int* Lperm = static_cast<const int*>(L_->Perm);
  for (int p = 0; p < m; ++p)
    if (Lperm[net.n_int + p] != net.n_int + p)
      return Status::fail(ErrorKind::Other, "CHOLMOD moved a port out of the trailing block");
  // Trailing m x m block of the supernodal L.
  Eigen::MatrixXd Lpp = Eigen::MatrixXd::Zero(m, m);
  const int first = n - m;
  const int* super = static_cast<const int*>(L_->super);
  const int* lpi = static_cast<const int*>(L_->pi);
  const int* lpx = static_cast<const int*>(L_->px);
  const int* ls = static_cast<const int*>(L_->s);
  const double* lx = static_cast<const double*>(L_->x);
  if (!L_->is_super) return Status::fail(ErrorKind::Other, "CHOLMOD did not make a supernodal factor");
  for (size_t s = 0; s < L_->nsuper; ++s) {
    const int k1 = super[s], k2 = super[s + 1];
    if (k2 <= first) continue;
    const int psi = lpi[s], nsrow = lpi[s + 1] - psi, psx = lpx[s];
    for (int k = std::max(k1, first); k < k2; ++k)
      for (int r = 0; r < nsrow; ++r) {
        const int row = ls[psi + r];
        if (row >= k) Lpp(row - first, k - first) = lx[psx + static_cast<size_t>(k - k1) * nsrow + r];
      }
  }
  if (split > 0) {
    // Y(split.., ..split) = L(split.., ..split) L(..split, ..split)^T: the rest of L's rows are 0 there.
    Y.noalias() = Lpp.bottomLeftCorner(m - split, split) *
                  Lpp.topLeftCorner(split, split).triangularView<Eigen::Lower>().transpose();
  } else {
    Y.noalias() = Lpp * Lpp.transpose();
    for (int p = 0; p < m; ++p) Y(p, p) -= delta[p];
  }
  if (trace)
    fmt::print(stderr, "port reduction: {} nodes, {} ports, {} analysis, factor + extraction {:.3f} s (total {:.3f} s)\n",
               n, m, same ? "reused" : "new", since(tf), since(t_start));
  return {};
}

cholmod_sparse SchurSolver::wrap(int n, const std::vector<int>& p, const std::vector<int>& i, const std::vector<double>& x) {
  cholmod_sparse A{};
  A.nrow = A.ncol = static_cast<size_t>(n);
  A.nzmax = i.size();
  A.p = const_cast<int*>(p.data());
  A.i = const_cast<int*>(i.data());
  A.x = const_cast<double*>(x.data());
  A.stype = -1;
  A.itype = CHOLMOD_INT;
  A.xtype = CHOLMOD_REAL;
  A.dtype = CHOLMOD_DOUBLE;
  A.sorted = 1;
  A.packed = 1;
  return A;
}

}  // namespace anasim::nn::fast
