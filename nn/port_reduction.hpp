// Port reduction of the crossbar blocks for the fast evaluator (nn/fast_eval.hpp): a symmetric conductance network
// (the tiles of one row block, their wires and the DAC output resistances) reduced to the exact admittance at its
// ports, Y = A_pp - A_pi A_ii^-1 A_ip, by a CHOLMOD supernodal Cholesky factorization with the ports ordered last
// (Y = L_pp L_pp^T). Contract: Y is symmetric, size n_port, currents into the network per port volt [S]; the
// symbolic analysis is kept for the next network of the same pattern (the next Monte Carlo trial).
#pragma once
#include <vector>
#include <memory>
#include <string>
#include <Eigen/Dense>
#include "devices/crossbar.hpp"
#include "engine/types.hpp"

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

// The supernodal Cholesky factorization behind SchurSolver, as an interface: CHOLMOD's (nn/port_reduction_cholmod.cpp),
// the module "cholmod" (engine/module.hpp), loaded the first time a network is reduced, so that runs without the
// NN fast path do not load CHOLMOD and the OpenBLAS under it.
class PortFactor {
 public:
  enum Result { kOk = 0, kNumerical = 1, kOther = 2 };
  virtual ~PortFactor() = default;
  // Factors the symmetric positive definite n x n matrix (lower triangle in CSC: Ap, Ai, Ax, sorted, diagonal
  // first) with its last m unknowns (the ports) kept last in the elimination, into L L^T; writes the trailing m x m
  // block of L to Lpp (column-major, m * m, zeroed by the caller). The symbolic analysis is kept for the next
  // matrix of the same pattern (reused: whether it was). Not kOk: error says why.
  virtual int factor(int n, int m, const std::vector<int>& Ap, const std::vector<int>& Ai,
                     const std::vector<double>& Ax, double* Lpp, bool& reused, std::string& error) = 0;
};

// Port admittance of a network; keeps the symbolic analysis for the next network of the same pattern.
class SchurSolver {
 public:
  SchurSolver();
  ~SchurSolver();
  SchurSolver(const SchurSolver&) = delete;
  SchurSolver& operator=(const SchurSolver&) = delete;

  // Y (n_port x n_port) [S] of net. trace: timings of the analysis and factorization on stderr.
  // split > 0: only the block Y(split .. n_port-1, 0 .. split-1) (n_port - split x split), e.g. the column ports'
  // currents per volt on the row ports, at ~split / n_port of the dense product's cost.
  Status compute(const PortNetwork& net, Eigen::MatrixXd& Y, bool trace = false, int split = 0);

 private:
  std::unique_ptr<PortFactor> factor_;  // CHOLMOD's, created at the first compute()
};

}  // namespace anasim::nn::fast
