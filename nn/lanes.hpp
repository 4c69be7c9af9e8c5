// SIMD lanes for the fast evaluator's batched path (nn/fast_batch.cpp): kLanes images side by side, one per lane,
// as GCC/Clang vector extensions (one AVX-512 register with -march=native; split into narrower ones otherwise).
// Lane-wise helpers have scalar overloads of the same name, so that the periphery kernel's stamps
// (nn/periphery_kernel.hpp) are one template for one image (double) and for a block of images (Vd).
#pragma once
#include <cmath>

namespace anasim::nn::fast {

constexpr int kLanes = 8;
typedef double Vd __attribute__((vector_size(8 * kLanes)));  // one value per image of a block
typedef long Vm __attribute__((vector_size(8 * kLanes)));    // lane mask: -1 true, 0 false (Vd comparisons)

// The mask type of a value type: bool for one image, Vm for a block.
template <class T> struct MaskOf { using type = bool; };
template <> struct MaskOf<Vd> { using type = Vm; };
template <class T> using Mask = typename MaskOf<T>::type;

inline Vd splat(double a) { return Vd{} + a; }
inline Vm mask_all(bool b) { return Vm{} - static_cast<long>(b); }
inline bool any(Vm m) {
  long r = 0;
  for (int b = 0; b < kLanes; ++b) r |= m[b];
  return r != 0;
}
inline bool all(Vm m) {
  long r = -1;
  for (int b = 0; b < kLanes; ++b) r &= m[b];
  return r != 0;
}
inline bool any(bool m) { return m; }
inline bool all(bool m) { return m; }

// |x| (lane-wise), max, min, select(m, a, b) = m ? a : b; scalar twins.
inline double vabs(double x) { return std::fabs(x); }
inline Vd vabs(Vd x) {
  typedef unsigned long Vu __attribute__((vector_size(8 * kLanes)));
  return reinterpret_cast<Vd>(reinterpret_cast<Vu>(x) & ~(Vu{} + (1ul << 63)));
}
inline double vmax(double a, double b) { return a < b ? b : a; }  // std::max's argument order
inline Vd vmax(Vd a, Vd b) { return a < b ? b : a; }
inline double select(bool m, double a, double b) { return m ? a : b; }
inline Vd select(Vm m, Vd a, Vd b) { return m ? a : b; }
// m |= c for a mask of either kind.
inline void mark(bool& m, bool c) { m = m || c; }
inline void mark(Vm& m, Vm c) { m |= c; }

// Applies f(lane value...) -> double to every lane.
template <class F>
inline Vd per_lane(F&& f) {
  Vd r;
  for (int b = 0; b < kLanes; ++b) r[b] = f(b);
  return r;
}

}  // namespace anasim::nn::fast
