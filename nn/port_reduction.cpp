// Port reduction of crossbar blocks (see port_reduction.hpp): the tiles' conductances from the crossbar element
// enumerator, the Schur complement onto the ports from the trailing block of a supernodal factor (CHOLMOD's, in the
// module of nn/port_reduction_cholmod.cpp).
#include "nn/port_reduction.hpp"
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include "engine/module.hpp"
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

SchurSolver::SchurSolver() = default;
SchurSolver::~SchurSolver() = default;

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
  if (!factor_) {
    std::string why;
    using New = PortFactor*();
    New* make = module::function<New>("cholmod", "anasim_cholmod_new_port_factor", &why);
    if (!make) return Status::fail(ErrorKind::Other, "port reduction: " + why);
    factor_.reset(make());
  }
  const auto tf = Clock::now();
  Eigen::MatrixXd Lpp = Eigen::MatrixXd::Zero(m, m);
  bool same = false;
  std::string error;
  switch (factor_->factor(n, m, Ap, Ai, Ax, Lpp.data(), same, error)) {
    case PortFactor::kOk: break;
    case PortFactor::kNumerical: return Status::numerical(error);
    default: return Status::fail(ErrorKind::Other, error);
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
    fmt::print(stderr, "port reduction: {} nodes, {} ports, {} analysis, analysis + factor + extraction {:.3f} s (total {:.3f} s)\n",
               n, m, same ? "reused" : "new", since(tf), since(t_start));
  return {};
}

}  // namespace anasim::nn::fast
