// SparseLU: the two-half split (two KLU factorizations on two threads and a dense separator system) against
// one KLU factorization of the whole matrix, on MNA-like matrices with branch-current unknowns (zero
// diagonals) in the halves and next to the separator; refactorization; fallback on a singular matrix.
#include <doctest/doctest.h>
#include <cmath>
#include <omp.h>
#include <vector>
#include <Eigen/Sparse>
#include "engine/sparse_lu.hpp"

using namespace anasim;

namespace {

using Csc = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

// MNA matrix of a W x H resistor grid (conductances g(i,j) between neighbours, a small leak to ground at every
// node) with a voltage source from every node of the left column to ground and a VCVS-like unsymmetric
// branch (v(out) - gain * v(in) = 0) driving every node of the right column: W*H + 2*H unknowns.
Csc mna_grid(int W, int H, double scale) {
  std::vector<Eigen::Triplet<double>> t;
  auto node = [&](int x, int y) { return y * W + x; };
  auto g = [&](int a, int b) { return scale * (1.0 + 0.37 * ((a * 7 + b * 13) % 11)); };
  auto stamp_g = [&](int a, int b, double v) {
    t.emplace_back(a, a, v);
    t.emplace_back(b, b, v);
    t.emplace_back(a, b, -v);
    t.emplace_back(b, a, -v);
  };
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const int a = node(x, y);
      t.emplace_back(a, a, 1e-3 * scale);
      if (x + 1 < W) stamp_g(a, node(x + 1, y), g(a, node(x + 1, y)));
      if (y + 1 < H) stamp_g(a, node(x, y + 1), g(a, node(x, y + 1)));
    }
  int br = W * H;
  for (int y = 0; y < H; ++y, ++br) {  // voltage source at the left edge: row br = v(node), col br = current
    t.emplace_back(node(0, y), br, 1.0);
    t.emplace_back(br, node(0, y), 1.0);
  }
  for (int y = 0; y < H; ++y, ++br) {  // VCVS: out = right edge node, in = node two columns left
    const int out = node(W - 1, y), in = node(W - 3, y);
    t.emplace_back(out, br, 1.0);
    t.emplace_back(br, out, 1.0);
    t.emplace_back(br, in, -0.5);
  }
  Csc A(br, br);
  A.setFromTriplets(t.begin(), t.end());
  A.makeCompressed();
  return A;
}

// Solves A x = b with a SparseLU (split allowed or not); returns x.
std::vector<double> solve_with(SparseLU<double>& lu, const Csc& A, const std::vector<double>& b, bool allow) {
  lu.allow_split(allow);
  REQUIRE(lu.analyze(A.rows(), A.outerIndexPtr(), A.innerIndexPtr()));
  REQUIRE(lu.factor(A.valuePtr()));
  std::vector<double> x = b;
  lu.solve(x.data());
  return x;
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, big = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
    big = std::max(big, std::abs(a[i]));
  }
  return d / big;
}

struct TwoThreads {
  int saved = omp_get_max_threads();
  TwoThreads() { omp_set_num_threads(2); }
  ~TwoThreads() { omp_set_num_threads(saved); }
};

}  // namespace

TEST_CASE("sparse LU: the two-half split solves what one KLU factorization solves") {
  TwoThreads threads;
  constexpr int W = 140, H = 90;
  const Csc A = mna_grid(W, H, 1e-2);
  REQUIRE(A.rows() >= SparseLU<double>::kSplitMinUnknowns);
  std::vector<double> b(A.rows(), 0.0);
  for (int k = 0; k < H; ++k) b[W * H + k] = 0.1 + 0.01 * k;  // source voltages
  b[5000] = 1e-3;                                                   // and a current into one node

  SparseLU<double> whole, split;
  const auto x_whole = solve_with(whole, A, b, false);
  const auto x_split = solve_with(split, A, b, true);
  CHECK_FALSE(whole.split());
  REQUIRE(split.split());
  CHECK(split.separator_size() > 0);
  CHECK(split.separator_size() < 400);
  CHECK(max_rel_diff(x_whole, x_split) < 1e-11);
  // residual of the split solution
  Eigen::Map<const Eigen::VectorXd> xs(x_split.data(), A.rows()), bs(b.data(), A.rows());
  CHECK((A * xs - bs).norm() / bs.norm() < 1e-12);

  SUBCASE("refactorization with new values keeps the split and the agreement") {
    Csc A2 = mna_grid(W, H, 3e-2);
    REQUIRE(split.factor(A2.valuePtr()));
    REQUIRE(whole.factor(A2.valuePtr()));
    CHECK(split.split());
    CHECK(split.refactorizations() == 1);
    std::vector<double> x1 = b, x2 = b;
    split.solve(x1.data());
    whole.solve(x2.data());
    CHECK(max_rel_diff(x2, x1) < 1e-11);
  }
}

namespace {
// The block-diagonal matrix of `blocks` (circuits that share no unknown).
Csc block_diag(const std::vector<Csc>& blocks) {
  std::vector<Eigen::Triplet<double>> t;
  int off = 0;
  for (const Csc& B : blocks) {
    for (int c = 0; c < B.outerSize(); ++c)
      for (Csc::InnerIterator it(B, c); it; ++it) t.emplace_back(off + it.row(), off + it.col(), it.value());
    off += static_cast<int>(B.rows());
  }
  Csc A(off, off);
  A.setFromTriplets(t.begin(), t.end());
  A.makeCompressed();
  return A;
}
}  // namespace

TEST_CASE("sparse LU: disconnected circuits are split between components or around the largest") {
  TwoThreads threads;
  SUBCASE("two equal circuits: one per half, no separator") {
    const Csc A = block_diag({mna_grid(90, 70, 1e-2), mna_grid(90, 70, 2e-2)});
    REQUIRE(A.rows() >= SparseLU<double>::kSplitMinUnknowns);
    std::vector<double> b(A.rows(), 0.0);
    for (int k = 0; k < 70; ++k) b[90 * 70 + k] = 0.3;
    for (int k = 0; k < 70; ++k) b[A.rows() / 2 + 90 * 70 + k] = -0.2;
    SparseLU<double> whole, split;
    const auto x_whole = solve_with(whole, A, b, false);
    const auto x_split = solve_with(split, A, b, true);
    REQUIRE(split.split());
    CHECK(split.separator_size() == 0);
    CHECK(max_rel_diff(x_whole, x_split) < 1e-11);
  }
  SUBCASE("small circuits first, then a large one: the large one is cut") {
    std::vector<Csc> blocks(40, mna_grid(5, 4, 1.0));  // unknown 0 lies in a small circuit
    blocks.push_back(mna_grid(140, 90, 1e-2));
    const Csc A = block_diag(blocks);
    std::vector<double> b(A.rows(), 1e-3);
    SparseLU<double> whole, split;
    const auto x_whole = solve_with(whole, A, b, false);
    const auto x_split = solve_with(split, A, b, true);
    REQUIRE(split.split());
    CHECK(split.separator_size() > 0);
    CHECK(max_rel_diff(x_whole, x_split) < 1e-11);
  }
}

TEST_CASE("sparse LU: small systems and one thread are not split") {
  const Csc A = mna_grid(20, 20, 1.0);
  std::vector<double> b(A.rows(), 1.0);
  SparseLU<double> lu;
  solve_with(lu, A, b, true);
  CHECK_FALSE(lu.split());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Csc big = mna_grid(140, 90, 1e-2);
  std::vector<double> bb(big.rows(), 1.0);
  SparseLU<double> one;
  solve_with(one, big, bb, true);
  omp_set_num_threads(saved);
  CHECK_FALSE(one.split());
}

TEST_CASE("sparse LU: a singular matrix falls back to the whole matrix and names a singular unknown") {
  TwoThreads threads;
  Csc A = mna_grid(140, 90, 1e-2);
  // Disconnect node 4321 entirely (its row and column become zero): A is singular.
  const int dead = 4321;
  for (int c = 0; c < A.outerSize(); ++c)
    for (Csc::InnerIterator it(A, c); it; ++it)
      if (it.row() == dead || it.col() == dead) it.valueRef() = 0.0;
  SparseLU<double> lu;
  REQUIRE(lu.analyze(A.rows(), A.outerIndexPtr(), A.innerIndexPtr()));
  CHECK_FALSE(lu.factor(A.valuePtr()));
  CHECK_FALSE(lu.split());
  CHECK(lu.singular_unknown() >= 0);
  CHECK_FALSE(lu.factored());
}

#include "tests/circuit_helpers.hpp"

namespace {
// A rows x cols crossbar with 1 ohm wire segments, PULSE row drivers, and a diode plus a capacitor to ground
// at the end of every column (nonlinear, so Newton refactors; reactive, so the transient steps).
std::string diode_crossbar_deck(int rows, int cols) {
  std::string d = "* crossbar with diode column loads\n";
  for (int i = 0; i < rows; ++i) {
    d += "v" + std::to_string(i) + " rin" + std::to_string(i) + " 0 pulse(0 " + std::to_string(0.2 + 0.005 * i) +
         " 1n 2n 2n 20n 50n)\n";
    for (int j = 0; j < cols; ++j) {
      const std::string r = "r" + std::to_string(i) + "_" + std::to_string(j);
      const std::string c = "c" + std::to_string(i) + "_" + std::to_string(j);
      const std::string rprev =
          j == 0 ? "rin" + std::to_string(i) : "r" + std::to_string(i) + "_" + std::to_string(j - 1);
      d += "rw" + r + " " + rprev + " " + r + " 1\n";
      d += "rc" + r + " " + r + " " + c + " " + std::to_string(1000 + (i * 37 + j * 11) % 500) + "\n";
      if (i > 0) d += "rv" + c + " c" + std::to_string(i - 1) + "_" + std::to_string(j) + " " + c + " 1\n";
    }
  }
  for (int j = 0; j < cols; ++j) {
    const std::string c = "c" + std::to_string(rows - 1) + "_" + std::to_string(j);
    d += "d" + std::to_string(j) + " " + c + " 0 dmod\n";
    d += "cl" + std::to_string(j) + " " + c + " 0 1p\n";
  }
  // trtol: steps set by the breakpoints and the largest step only, so both runs share their timepoints
  d += ".model dmod d(is=1e-14 n=1.5 rs=10)\n.options trtol=1e6\n.op\n.tran 0.5n 3n\n.end\n";
  return d;
}
}  // namespace

TEST_CASE("sparse LU: op and transient of a large nonlinear circuit agree split and unsplit") {
  const std::string deck = diode_crossbar_deck(100, 64);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const RunResults one = anasim::test::run_deck(deck);
  omp_set_num_threads(2);
  const RunResults two = anasim::test::run_deck(deck);
  omp_set_num_threads(saved);
  REQUIRE(two.unknowns >= SparseLU<double>::kSplitMinUnknowns);
  REQUIRE(one.analyses.size() == 2);
  REQUIRE(two.analyses.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    const auto& a = one.analyses[k];
    const auto& b = two.analyses[k];
    REQUIRE(a.sweep.size() == b.sweep.size());
    REQUIRE(a.signals.size() == b.signals.size());
    double worst = 0;
    for (size_t j = 0; j < a.signals.size(); ++j) {
      REQUIRE(a.signals[j].name == b.signals[j].name);
      for (size_t i = 0; i < a.signals[j].re.size(); ++i)
        worst = std::max(worst, std::abs(a.signals[j].re[i] - b.signals[j].re[i]));
    }
    double dt = 0;
    for (size_t i = 0; i < a.sweep.size(); ++i) dt = std::max(dt, std::abs(a.sweep[i] - b.sweep[i]));
    INFO("analysis " << a.kind << ", largest time difference " << dt << " s of " << a.sweep.size() << " points");
    CHECK(worst < 1e-9);
  }
}
