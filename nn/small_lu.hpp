// Small dense LU factorization with partial pivoting for the fast evaluator's per-neuron Newton solves
// (nn/periphery_kernel.hpp): sizes up to a few dozen, fixed at compile time (N > 0) so that loops unroll, or given
// at run time (N = 0, size nrt). Matrices are n x n row-major.
#pragma once
#include <cmath>
#include <utility>
#include "nn/lanes.hpp"

namespace anasim::nn::fast {

// LU factorization in place (A n x n row-major, partial pivoting; piv[k] = row swapped with k; the diagonal of U
// is stored as its reciprocals). False if singular.
template <int N>
inline bool lu_factor(int nrt, double* A, int* piv) {
  const int n = N > 0 ? N : nrt;
  for (int k = 0; k < n; ++k) {
    int p = k;
    double best = std::fabs(A[k * n + k]);
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(A[i * n + k]) > best) {
        best = std::fabs(A[i * n + k]);
        p = i;
      }
    if (!(best > 0)) return false;
    piv[k] = p;
    if (p != k)
      for (int c = 0; c < n; ++c) std::swap(A[k * n + c], A[p * n + c]);
    const double inv = 1.0 / A[k * n + k];
    A[k * n + k] = inv;  // the diagonal holds reciprocals: lu_apply multiplies
    for (int i = k + 1; i < n; ++i) {
      const double f = A[i * n + k] * inv;
      A[i * n + k] = f;
      if (f == 0) continue;
      for (int c = k + 1; c < n; ++c) A[i * n + c] -= f * A[k * n + c];
    }
  }
  return true;
}
// Solves with a factorization from lu_factor, b in place.
template <int N>
inline void lu_apply(int nrt, const double* A, const int* piv, double* b) {
  const int n = N > 0 ? N : nrt;
  for (int k = 0; k < n; ++k)
    if (piv[k] != k) std::swap(b[k], b[piv[k]]);
  for (int k = 0; k < n; ++k) {
    const double bk = b[k];
    if (bk != 0)
      for (int i = k + 1; i < n; ++i) b[i] -= A[i * n + k] * bk;
  }
  for (int k = n - 1; k >= 0; --k) {  // column-oriented: independent updates, no division
    const double bk = b[k] * A[k * n + k];
    b[k] = bk;
    for (int i = 0; i < k; ++i) b[i] -= A[i * n + k] * bk;
  }
}
// Solves m right-hand sides at once with a factorization from lu_factor (b: m consecutive vectors of n, in place).
template <int N>
inline void lu_apply_multi(int nrt, const double* A, const int* piv, double* b, int m) {
  const int n = N > 0 ? N : nrt;
  for (int r = 0; r < m; ++r) {
    double* br = b + r * n;
    for (int k = 0; k < n; ++k)
      if (piv[k] != k) std::swap(br[k], br[piv[k]]);
  }
  for (int k = 0; k < n; ++k)
    for (int i = k + 1; i < n; ++i) {
      const double lik = A[i * n + k];
      for (int r = 0; r < m; ++r) b[r * n + i] -= lik * b[r * n + k];
    }
  for (int k = n - 1; k >= 0; --k) {
    const double d = A[k * n + k];
    for (int r = 0; r < m; ++r) b[r * n + k] *= d;
    for (int i = 0; i < k; ++i) {
      const double uik = A[i * n + k];
      for (int r = 0; r < m; ++r) b[r * n + i] -= uik * b[r * n + k];
    }
  }
}

// The same for a block of images (nn/lanes.hpp): every lane its own matrix (A[(i * n + k)] holds entry (i, k) of
// every lane) with its own pivots (piv[k] lane-wise). Returns the lanes whose matrix is singular.
template <int N>
inline Vm lu_factor_lanes(int nrt, Vd* A, Vm* piv) {
  const int n = N > 0 ? N : nrt;
  Vm singular{};
  for (int k = 0; k < n; ++k) {
    Vm p = Vm{} + k;
    Vd best = vabs(A[k * n + k]);
    for (int i = k + 1; i < n; ++i) {
      const Vd a = vabs(A[i * n + k]);
      const Vm gt = a > best;
      best = gt ? a : best;
      p = gt ? Vm{} + i : p;
    }
    singular |= ~(best > 0);
    piv[k] = p;
    if (all(p == p[0])) {  // the same pivot row in every lane
      if (p[0] != k)
        for (int c = 0; c < n; ++c) std::swap(A[k * n + c], A[p[0] * n + c]);
    } else {
      for (int i = k + 1; i < n; ++i) {
        const Vm m = p == i;
        if (!any(m)) continue;
        for (int c = 0; c < n; ++c) {
          const Vd t = A[k * n + c];
          A[k * n + c] = m ? A[i * n + c] : t;
          A[i * n + c] = m ? t : A[i * n + c];
        }
      }
    }
    const Vd inv = 1.0 / A[k * n + k];
    A[k * n + k] = inv;
    for (int i = k + 1; i < n; ++i) {
      const Vd f = A[i * n + k] * inv;
      A[i * n + k] = f;
      if (!any(f != 0)) continue;  // structurally zero in the neuron's matrix (most of them), as in lu_factor
      for (int c = k + 1; c < n; ++c) A[i * n + c] -= f * A[k * n + c];
    }
  }
  return singular;
}
// Solves m right-hand sides with a factorization from lu_factor_lanes (b: m consecutive vectors of n lane vectors),
// in place, the pivots read once.
template <int N>
inline void lu_apply_lanes_multi(int nrt, const Vd* A, const Vm* piv, Vd* b, int m) {
  const int n = N > 0 ? N : nrt;
  for (int k = 0; k < n; ++k) {
    const Vm p = piv[k];
    if (all(p == p[0])) {
      if (p[0] != k)
        for (int r = 0; r < m; ++r) std::swap(b[r * n + k], b[r * n + p[0]]);
      continue;
    }
    for (int i = k + 1; i < n; ++i) {
      const Vm sel = p == i;
      for (int r = 0; r < m; ++r) {
        const Vd t = b[r * n + k];
        b[r * n + k] = sel ? b[r * n + i] : t;
        b[r * n + i] = sel ? t : b[r * n + i];
      }
    }
  }
  for (int r = 0; r < m; ++r) {
    Vd* br = b + r * n;
    for (int k = 0; k < n; ++k) {
      const Vd bk = br[k];
      for (int i = k + 1; i < n; ++i) br[i] -= A[i * n + k] * bk;
    }
    for (int k = n - 1; k >= 0; --k) {
      const Vd bk = br[k] * A[k * n + k];
      br[k] = bk;
      for (int i = 0; i < k; ++i) br[i] -= A[i * n + k] * bk;
    }
  }
}

// One right-hand side (n lane vectors).
template <int N>
inline void lu_apply_lanes(int nrt, const Vd* A, const Vm* piv, Vd* b) {
  lu_apply_lanes_multi<N>(nrt, A, piv, b, 1);
}

}  // namespace anasim::nn::fast
