// The two-half evaluation of a large real system (see sparse_lu.hpp): two KLU halves factored side by side and
// a dense separator system. Used by SparseLU only.
#pragma once
#include <memory>
#include <vector>
#include <Eigen/Dense>
#include "engine/sparse_lu.hpp"

namespace anasim {

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

}  // namespace anasim
