// NodalPcg (conjugate gradients on an MNA system's nodal core) against KLU on a crossbar's MNA matrix (grounded
// sources, VCVS read-outs, zero branch diagonals held by the pattern); the cases where it does not apply
// (unsymmetric reduced system, a floating island, a nonzero branch diagonal) and where it gives up (a uniform
// grid with almost no tie to ground), each handed to the direct solver by SparseLU with the same answer.
#include <doctest/doctest.h>
#include <cmath>
#include <vector>
#include <Eigen/Sparse>
#include "engine/nodal_pcg.hpp"
#include "engine/sparse_lu.hpp"
#include "tests/test_support.hpp"

using namespace anasim;

namespace {

using Csc = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;
using Trips = std::vector<Eigen::Triplet<double>>;

void stamp_g(Trips& t, int a, int b, double g) {
  t.emplace_back(a, a, g);
  if (b < 0) return;
  t.emplace_back(b, b, g);
  t.emplace_back(a, b, -g);
  t.emplace_back(b, a, -g);
}

// MNA matrix of an R x C crossbar: 1 ohm row and column wire segments, cells of 10-100 kohm, a grounded source
// at every row input, a VCVS (gain 1e5, inverting) with a 1 kohm feedback resistor at every column. Half the
// branch rows hold an explicit zero diagonal. Unknowns: 2RC crossbar nodes, R inputs, C virtual grounds, C
// outputs, R + C branch currents. b receives the sources.
Csc crossbar_mna(int R, int C, std::vector<double>& b, bool ammeters = false) {
  Trips t;
  const int rn = 0, cn = R * C, in = 2 * R * C, nn = in + R, on = nn + C, bv = on + C, be = bv + R, am = be + C;
  const int sn = am + (ammeters ? C : 0), n = sn + (ammeters ? C : 0);
  b.assign(n, 0.0);
  auto cell = [&](int i, int j) { return 1e-5 * (1.0 + 9.0 * std::fabs(std::sin(0.37 * i + 1.3 * j))); };
  for (int i = 0; i < R; ++i) {
    stamp_g(t, in + i, rn + i * C, 1.0);
    for (int j = 0; j < C; ++j) {
      if (j + 1 < C) stamp_g(t, rn + i * C + j, rn + i * C + j + 1, 1.0);
      stamp_g(t, rn + i * C + j, cn + i * C + j, cell(i, j));
      // (with ammeters, the last segment ends at s_j, and a 0 V source from s_j to n_j measures the column)
      stamp_g(t, cn + i * C + j, i + 1 < R ? cn + (i + 1) * C + j : ammeters ? sn + j : nn + j, 1.0);
    }
    t.emplace_back(bv + i, in + i, 1.0);
    t.emplace_back(in + i, bv + i, 1.0);
    if (i % 2) t.emplace_back(bv + i, bv + i, 0.0);
    b[bv + i] = 0.1 + 0.05 * std::cos(0.7 * i);
  }
  for (int j = 0; j < C; ++j) {
    stamp_g(t, nn + j, on + j, 1e-3);
    t.emplace_back(be + j, on + j, 1.0);
    t.emplace_back(be + j, nn + j, 1e5);
    t.emplace_back(on + j, be + j, 1.0);
    if (j % 2) t.emplace_back(be + j, be + j, 0.0);
    if (ammeters) {  // branch am+j: v(s_j) - v(n_j) = 0, its current leaves s_j and enters n_j
      t.emplace_back(am + j, sn + j, 1.0);
      t.emplace_back(am + j, nn + j, -1.0);
      t.emplace_back(sn + j, am + j, 1.0);
      t.emplace_back(nn + j, am + j, -1.0);
      t.emplace_back(am + j, am + j, 0.0);
    }
  }
  Csc A(n, n);
  A.setFromTriplets(t.begin(), t.end());
  A.makeCompressed();
  return A;
}

std::vector<double> klu_solution(const Csc& A, const std::vector<double>& b) {
  KluLU<double> klu;
  REQUIRE(klu.analyze(A.rows(), A.outerIndexPtr(), A.innerIndexPtr()));
  REQUIRE(klu.factor(A.valuePtr()));
  std::vector<double> x = b;
  klu.solve(x.data());
  return x;
}

// A x = b through `lu` under solver `s` (analysis, factorization, solve); the factorization must have chosen
// `at_factor`. lu is left as the solve left it (conjugate gradients may have handed over to KLU there).
std::vector<double> sparse_lu_solution(SparseLU<double>& lu, LinearSolver s, LinearSolver at_factor, const Csc& A,
                                       const std::vector<double>& b) {
  lu.set_solver(s);
  REQUIRE(lu.analyze(A.rows(), A.outerIndexPtr(), A.innerIndexPtr()));
  REQUIRE(lu.factor(A.valuePtr()));
  CHECK(lu.solver() == at_factor);
  std::vector<double> x = b;
  lu.solve(x.data());
  return x;
}

// Largest |x - y| relative to the largest |y| among the unknowns of the same kind (the caller's range).
double max_diff(const std::vector<double>& x, const std::vector<double>& y, int from, int to) {
  double d = 0, big = 0;
  for (int i = from; i < to; ++i) {
    d = std::max(d, std::fabs(x[i] - y[i]));
    big = std::max(big, std::fabs(y[i]));
  }
  return d / big;
}

}  // namespace

TEST_CASE("nodal PCG: a crossbar's MNA system equals KLU's solution, sources and read-outs eliminated") {
  const int R = 40, C = 12;
  std::vector<double> b;
  const Csc A = crossbar_mna(R, C, b);
  const int n = A.rows();
  const std::vector<double> ref = klu_solution(A, b);

  NodalPcg cg;
  REQUIRE(cg.analyze(n, A.outerIndexPtr(), A.innerIndexPtr()));
  REQUIRE(cg.factor(A.valuePtr()));
  CHECK(cg.reduced_size() == n - 2 * (R + C));  // every source's node and branch current left the system
  std::vector<double> x = b;
  REQUIRE(cg.solve(x.data()));
  MESSAGE("steps: " << cg.last_iterations());
  CHECK(cg.last_iterations() > 0);
  CHECK(cg.last_iterations() < 60);
  const int nodes = 2 * R * C + R + 2 * C;
  CHECK(max_diff(x, ref, 0, 2 * R * C) < 1e-12);            // crossbar nodes
  CHECK(max_diff(x, ref, 2 * R * C + R + C, nodes) < 1e-11);  // outputs (1e5 times the virtual grounds)
  CHECK(max_diff(x, ref, nodes, n) < 1e-11);                 // branch currents
  // the residual of the whole system
  Eigen::VectorXd xv = Eigen::Map<Eigen::VectorXd>(x.data(), n), bv = Eigen::Map<Eigen::VectorXd>(b.data(), n);
  CHECK((A * xv - bv).cwiseAbs().maxCoeff() < 1e-14);

  // the next solve starts from this solution: the same right-hand side takes no step, a changed one few
  std::vector<double> again = b;
  REQUIRE(cg.solve(again.data()));
  CHECK(cg.last_iterations() == 0);
  CHECK(max_diff(again, x, 0, n) == 0.0);
}

TEST_CASE("nodal PCG through SparseLU: solver pcg on the crossbar; the direct solver where it does not apply") {
  std::vector<double> b;
  const Csc A = crossbar_mna(16, 8, b);
  const int n = A.rows();
  const std::vector<double> ref = klu_solution(A, b);
  SparseLU<double> lu;
  const std::vector<double> x = sparse_lu_solution(lu, LinearSolver::Pcg, LinearSolver::Pcg, A, b);
  CHECK(lu.cg_iterations() > 0);
  CHECK(max_diff(x, ref, 0, n) < 1e-11);

  // B under solver pcg: KLU takes over at the factorization, with KLU's solution
  auto direct_takes_over = [&](const Csc& B) {
    SparseLU<double> l2;
    const std::vector<double> y = sparse_lu_solution(l2, LinearSolver::Pcg, LinearSolver::Klu, B, b);
    CHECK(max_diff(y, klu_solution(B, b), 0, n) < 1e-12);
  };
  SUBCASE("a nonzero branch diagonal (a source with a series resistance): KLU") {
    Csc B = A;
    const int bv1 = 2 * 16 * 8 + 16 + 2 * 8 + 1;  // the second source's branch row holds a diagonal
    B.coeffRef(bv1, bv1) = -0.5;
    direct_takes_over(B);
  }
  SUBCASE("an unsymmetric reduced system (a cell's conductance stamped one-sided, as a VCCS): KLU") {
    Csc B = A;
    B.coeffRef(3, 16 * 8 + 3) *= 2.0;  // r(0,3) -> c(0,3) only in row r(0,3)
    direct_takes_over(B);
  }
}

TEST_CASE("nodal PCG through SparseLU: a floating island is singular, named by the direct solver") {
  // two resistors between nodes 0-1 and 1-2 with node 0 grounded through 1 ohm, and an island 3-4
  Trips t;
  stamp_g(t, 0, -1, 1.0);
  stamp_g(t, 0, 1, 2.0);
  stamp_g(t, 1, 2, 3.0);
  stamp_g(t, 3, 4, 1.0);
  Csc A(5, 5);
  A.setFromTriplets(t.begin(), t.end());
  A.makeCompressed();
  SparseLU<double> lu;
  lu.set_solver(LinearSolver::Pcg);
  REQUIRE(lu.analyze(5, A.outerIndexPtr(), A.innerIndexPtr()));
  CHECK_FALSE(lu.factor(A.valuePtr()));
  CHECK((lu.singular_unknown() == 3 || lu.singular_unknown() == 4));
}

TEST_CASE("nodal PCG through SparseLU: a grid it converges on too slowly is handed to the direct solver") {
  // a uniform 200 x 200 conductance grid tied to ground only at one corner: the spanning forest leaves most of the
  // coupling out, and the rate after the first steps projects far beyond kMaxIterations
  const int W = 200, n = W * W;
  Trips t;
  for (int y = 0; y < W; ++y)
    for (int x = 0; x < W; ++x) {
      const int a = y * W + x;
      if (x + 1 < W) stamp_g(t, a, a + 1, 1.0);
      if (y + 1 < W) stamp_g(t, a, a + W, 1.0);
    }
  stamp_g(t, 0, -1, 1e-3);
  Csc A(n, n);
  A.setFromTriplets(t.begin(), t.end());
  A.makeCompressed();
  std::vector<double> b(n, 0.0);
  b[n - 1] = 1e-3;  // 1 mA into the far corner
  b[n / 2] = -2e-4;
  const std::vector<double> ref = klu_solution(A, b);
  SparseLU<double> lu;  // auto: 40,000 unknowns
  REQUIRE(lu.analyze(n, A.outerIndexPtr(), A.innerIndexPtr()));
  REQUIRE(lu.factor(A.valuePtr()));
  CHECK(lu.solver() == LinearSolver::Pcg);
  std::vector<double> x = b;
  lu.solve(x.data());
  CHECK(lu.solver() != LinearSolver::Pcg);
  CHECK(lu.cg_iterations() > 0);
  CHECK(lu.cg_iterations() <= NodalPcg::kMaxIterations);
  MESSAGE("steps before giving up: " << lu.cg_iterations());
  // (ill-conditioned, ~1e9: the solutions of two direct solvers differ by ~1e-9; the residuals are at rounding)
  Eigen::VectorXd xv = Eigen::Map<Eigen::VectorXd>(x.data(), n), bv = Eigen::Map<Eigen::VectorXd>(b.data(), n);
  CHECK((A * xv - bv).cwiseAbs().maxCoeff() < 1e-14 * (A.cwiseAbs() * xv.cwiseAbs()).maxCoeff());
  CHECK(max_diff(x, ref, 0, n) < 1e-7);
  // a sibling (the transient's next cache slot) does not try again
  auto sib = lu.sibling();
  CHECK(sib->solver() != LinearSolver::Pcg);
}

TEST_CASE("nodal PCG: the same iterates on one thread and on two (a system large enough for both)") {
  std::vector<double> b;
  const Csc A = crossbar_mna(220, 120, b);  // 52,800 crossbar nodes: the vector kernels run on the threads
  const int n = A.rows();
  std::vector<std::vector<double>> x;
  std::vector<int> steps;
  for (int threads : {1, 2}) {
    test_support::OmpThreads limit(threads);
    NodalPcg cg;
    REQUIRE(cg.analyze(n, A.outerIndexPtr(), A.innerIndexPtr()));
    REQUIRE(cg.factor(A.valuePtr()));
    x.push_back(b);
    REQUIRE(cg.solve(x.back().data()));
    steps.push_back(cg.last_iterations());
  }
  CHECK(steps[0] == steps[1]);
  CHECK(x[0] == x[1]);  // bit for bit
  CHECK(max_diff(x[0], klu_solution(A, b), 0, 2 * 220 * 120) < 1e-11);
}

TEST_CASE("nodal PCG: floating sources (0 V ammeters between a column and its read-out) merge their two nodes") {
  const int R = 30, C = 10;
  std::vector<double> b;
  const Csc A = crossbar_mna(R, C, b, true);
  const int n = A.rows();
  const std::vector<double> ref = klu_solution(A, b);
  NodalPcg cg;
  REQUIRE(cg.analyze(n, A.outerIndexPtr(), A.innerIndexPtr()));
  REQUIRE(cg.factor(A.valuePtr()));
  CHECK(cg.reduced_size() == n - 2 * (R + 2 * C));  // the ammeters' branches and one node each left too
  std::vector<double> x = b;
  REQUIRE(cg.solve(x.data()));
  CHECK(max_diff(x, ref, 0, n) < 1e-11);
  const int am = 2 * R * C + R + 2 * C + R + C;  // the ammeters' currents: the column currents
  CHECK(max_diff(x, ref, am, am + C) < 1e-11);
  CHECK(x[am] > 0);
}

TEST_CASE("nodal PCG: a node with one or two neighbours and a nonzero diagonal is not taken for a branch row") {
  // an RC ladder's pattern: the last node has one neighbour and a capacitor's companion to ground, the others two;
  // a grounded source drives the first
  const int N = 3000, n = N + 1;
  Trips t;
  t.emplace_back(N, 0, 1.0);  // branch N: v(0) = 1
  t.emplace_back(0, N, 1.0);
  t.emplace_back(N, N, 0.0);
  for (int i = 0; i + 1 < N; ++i) stamp_g(t, i, i + 1, 1e-3);
  for (int i = 1; i < N; ++i) t.emplace_back(i, i, 1e-6);  // C / h
  Csc A(n, n);
  A.setFromTriplets(t.begin(), t.end());
  A.makeCompressed();
  std::vector<double> b(n, 0.0);
  b[N] = 1.0;
  for (int i = 1; i < N; ++i) b[i] = 1e-6 * 0.5;  // the charges' history
  SparseLU<double> lu;
  const std::vector<double> x = sparse_lu_solution(lu, LinearSolver::Pcg, LinearSolver::Pcg, A, b);
  CHECK(lu.cg_iterations() > 0);
  CHECK(lu.cg_iterations() < 5);  // the chain is its own spanning tree: the preconditioner is exact
  CHECK(max_diff(x, klu_solution(A, b), 0, n) < 1e-12);
}
