// Port reduction of the crossbar blocks for the fast evaluator (nn/fast_eval.hpp): a symmetric conductance network
// (the tiles of one row block, their wires and the DAC output resistances) reduced to the exact admittance at its
// ports, Y = A_pp - A_pi A_ii^-1 A_ip, by a CHOLMOD supernodal Cholesky factorization with the ports ordered last
// (Y = L_pp L_pp^T). Contract: Y is symmetric, size n_port, currents into the network per port volt [S]; the
// symbolic analysis is kept for the next network of the same pattern (the next Monte Carlo trial).
#pragma once
#include <vector>
#include <cholmod.h>
#include <Eigen/Dense>
#include "devices/crossbar.hpp"

namespace anasim::nn::fast {

// A symmetric conductance network: nodes 0 .. n_int-1 internal, n_int .. n_int+n_port-1 ports.
struct PortNetwork {
  int n_int = 0, n_port = 0;
  std::vector<int> ea, eb;
  std::vector<double> eg;  // [S]
  std::vector<double> shunt;  // [S] per node to ground (empty = none; else size n_int + n_port)
  void edge(int a, int b, double g) {
    if (g == 0 || a == b) return;
    ea.push_back(a);
    eb.push_back(b);
    eg.push_back(g);
  }
};

// Adds the conductances of one crossbar tile (the elements devices/crossbar.hpp's CrossbarTopology enumerates;
// capacitors are open at DC) to a network. rowpin/colpin: network nodes of its R row and C column pins; next: the
// next free internal node (advanced by the tile's internal nodes, numbered in the topology's order). cap (optional,
// indexed by network node, grown as needed) accumulates the tile's wire capacitances [F] (CrossbarSpec::cwire).
void add_tile(PortNetwork& net, const CrossbarSpec& s, const std::vector<double>& g, const std::vector<int>& rowpin,
              const std::vector<int>& colpin, int& next, std::vector<double>* cap = nullptr);

// Port admittance of a network; keeps the symbolic analysis for the next network of the same pattern.
class SchurSolver {
 public:
  SchurSolver() { cholmod_start(&cc_); }
  ~SchurSolver() {
    if (L_) cholmod_free_factor(&L_, &cc_);
    cholmod_finish(&cc_);
  }
  SchurSolver(const SchurSolver&) = delete;
  SchurSolver& operator=(const SchurSolver&) = delete;

  // Y (n_port x n_port) [S] of net. trace: timings of the analysis and factorization on stderr.
  // split > 0: only the block Y(split .. n_port-1, 0 .. split-1) (n_port - split x split), e.g. the column ports'
  // currents per volt on the row ports, at ~split / n_port of the dense product's cost.
  Status compute(const PortNetwork& net, Eigen::MatrixXd& Y, bool trace = false, int split = 0);

 private:
  static cholmod_sparse wrap(int n, const std::vector<int>& p, const std::vector<int>& i, const std::vector<double>& x);
  cholmod_common cc_;
  cholmod_factor* L_ = nullptr;
  std::vector<int> ap_, ai_;  // pattern of the analysed network (lower-triangular CSC)
};

}  // namespace anasim::nn::fast
