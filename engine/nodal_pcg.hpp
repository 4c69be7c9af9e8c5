// Conjugate gradients on the nodal core of an MNA system, preconditioned by its strongest spanning forest: the
// solver SparseLU (sparse_lu.hpp) tries first on large real systems, before any factorization.
//
// Reduction (exact; fill only in the rows named): an MNA branch row k that reads
//     A_ka x_a (+ A_kc x_c) = b_k,   x_k appearing in no row but a (and c),
// with A_kk zero, is a voltage source or a VCVS: x_a follows from x_c, and row a (KCL at a) then only yields the
// branch current x_k. Both rows and both columns leave the system, eliminated through the 2x2 pivot block
// P = [[A_ka, 0], [A_aa, A_ak]] (rows k, a; columns a, k): every other row r that holds x_a or x_k takes
//     M_rj -= [A_ra, A_rk] P^-1 [A_kj; A_aj],   c_r -= [A_ra, A_rk] P^-1 [b_k; b_a].
// Grounded sources (x_k only in row a) fix x_a or tie it to a control node c; a floating source (x_k also in row
// c: a 0 V ammeter, a source between two nodes) merges a into c, whose row becomes the KCL of both. What remains,
// M y = c, is a circuit's nodal conductance matrix when the circuit is conductances, capacitors' companions, diodes
// and such sources. A node with one or two neighbours has a branch row's pattern: the choice reads the values of
// the first factorization (a branch row's diagonal is zero).
//
// Iteration: where M is symmetric with a positive, dominant diagonal (M_ii >= sum_j |M_ij|, within rounding),
// it is positive semidefinite, and conjugate gradients solve it. The preconditioner P keeps M's diagonal and,
// of its off-diagonal entries, those of a maximum spanning forest of M's graph (weights |M_ij|): P is as
// dominant as M, positive definite whenever M is, and factors as L D L^T with no fill at all (a forest), in
// O(n). On a crossbar the forest is its wires (conductances 10^3..10^5 above the cells'), and the iteration
// needs a few dozen steps where a factorization fills in: the 784x128 deck of bench/gen_crossbar.py (200,832
// reduced unknowns) 17 steps, 0.06 s, against KLU's 0.97 s on two threads.
//
// From 50,000 reduced unknowns the products, dot products and updates of a solve run on the OpenMP threads (the
// forest's substitutions stay on one), with dot products summed in fixed blocks: the same iterates on any number
// of threads. Measured (2 threads against 1): 1024x1024 crossbar op phase 3.1 -> 2.6 s, the 256x256 crossbar
// transient 22.2 -> 17.2 s.
//
// A solve stops when the true residual of M y = c is within kTolerance of |c| + |M| |y| (normwise, the
// backward error of a direct solve), or gives up (returns false, b unchanged) when its convergence rate says it
// will not get there within kMaxIterations: the caller then factors the matrix.
#pragma once
#include <vector>

namespace anasim {

class NodalPcg {
 public:
  static constexpr double kTolerance = 1e-15;
  static constexpr int kMaxIterations = 400;

  // Takes an n x n CSC pattern (arrays must outlive this object); false if n = 0.
  bool analyze(int n, const int* Ap, const int* Ai);
  // Reduces values Ax (size nnz), checks that M is symmetric and diagonally dominant, and factors the
  // preconditioner. false if not (or if a pivot of an elimination or of P is zero: M singular). The first call
  // also chooses the eliminations (build): a row whose diagonal the pattern holds is a branch row only where that
  // value is zero (a node with one or two neighbours has the same pattern); later values must keep them zero.
  bool factor(const double* Ax);
  // Solves A x = b in place (b size n), starting from `start` (size n; the caller's last iterate, e.g. the previous
  // time point's solution) or, without one, from the last solution; either only where it is closer than zero (not
  // for an iterative refinement's correction). false if it gave up; b is then unchanged.
  bool solve(double* b, const double* start = nullptr);
  // Steps of the last solve() and of all solves.
  int last_iterations() const { return last_its_; }
  long iterations() const { return total_its_; }
  // Unknowns of the reduced system M.
  int reduced_size() const { return static_cast<int>(keep_.size()); }
  // Bytes held (pattern, values, preconditioner, work vectors).
  double bytes() const;

 private:
  struct Elimination {
    int k, a, c;      // branch row / unknown k, the unknown a it fixes, the unknown c it depends on (-1: none)
    int p_ka, p_kc;   // CSC positions of A_ka, A_kc (-1)
    int p_ak;         // CSC position of A_ak
    int p_kk;         // CSC position of A_kk (held by the pattern, zero), or -1
    int p_aa;         // CSC position of A_aa, or -1
    int rows0, rows1; // [rows0, rows1) in refs_: the other rows that hold x_a or x_k
    int arow0, arow1; // [arow0, arow1) in arow_: row a's entries but A_ak
  };
  struct RowRef {
    int r;     // reduced row
    int p_ra;  // CSC position of A_ra, or -1
    int p_rk;  // CSC position of A_rk (row c of a floating source), or -1
  };
  // One entry of M that an elimination updates: M[q] -= (from_a ? beta : alpha)[t] * Ax[p], p the position of A_kj
  // or A_aj.
  struct Fill {
    int q, t, p;
    bool from_a;
  };
  // The eliminations (their diagonals zero in Ax) and M's pattern; false if M is not structurally symmetric.
  bool build(const double* Ax);
  void spmv(const double* y, double* out) const;  // out = M y
  void precondition(const double* r, double* z) const;

  int n_ = 0;
  const int* Ap_ = nullptr;
  const int* Ai_ = nullptr;
  std::vector<Elimination> elim_;
  std::vector<RowRef> refs_;
  std::vector<Fill> fill_;
  std::vector<std::pair<int, int>> arow_;  // (CSC position, column) of the entries of the rows a
  std::vector<int> keep_;                  // reduced unknown -> unknown
  std::vector<int> red_;                   // unknown -> reduced unknown, or -1
  // M in CSR form (symmetric: also CSC), its value recipe and each entry's transposed position.
  std::vector<int> Mp_, Mj_, Mt_, Mdiag_;
  std::vector<std::pair<int, int>> gather_;  // (CSC position, reduced position), reduced positions ascending
  std::vector<double> Mx_;
  // Copies of the values that solve() needs.
  std::vector<double> ka_, kc_, ak_, arow_x_;
  std::vector<double> alpha_, beta_;  // per RowRef: [A_ra, A_rk] P^-1, P the pivot block (see factor())
  // Preconditioner P = L D L^T over the forest, in elimination order (leaves first): unknown, parent (-1 for a
  // root), l = P_vp / d_v, 1 / d_v.
  std::vector<int> ord_, par_;
  std::vector<double> l_, dinv_;
  // Solution of the last solve (the next one's start), work vectors.
  std::vector<double> y_, c_, r_, z_, p_, q_, part_;
  bool have_start_ = false;
  bool built_ = false;
  int last_its_ = 0;
  long total_its_ = 0;
};

}  // namespace anasim
