// SIMD lanes for the fast evaluator's batched path (nn/fast_batch.cpp): kLanes images side by side, one per lane,
// as GCC/Clang vector extensions of one native register with -march=native: 8 doubles with AVX-512, 4 with AVX2
// (e.g. AMD Zen). A vector wider than the machine's registers is split by the compiler, and its comparisons then go
// lane by lane through scalar code: on a 2-core AMD EPYC VM with AVX2 (2026-12-01) the network transient took 33 ms
// per shipped image with 8 lanes and 11.8 ms with 4, the same results within 5e-8. Without either, 8 (SSE pairs).
// Lane-wise helpers have scalar overloads of the same name, so that the periphery kernel's stamps
// (nn/periphery_kernel.hpp) are one template for one image (double) and for a block of images (Vd).
#pragma once
#include <cmath>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace anasim::nn::fast {

#if defined(__AVX2__) && !defined(__AVX512F__)
constexpr int kLanes = 4;
#else
constexpr int kLanes = 8;
#endif
typedef double Vd __attribute__((vector_size(8 * kLanes)));  // one value per image of a block
typedef long Vm __attribute__((vector_size(8 * kLanes)));    // lane mask: -1 true, 0 false (Vd comparisons)

// The mask type of a value type: bool for one image, Vm for a block.
template <class T> struct MaskOf { using type = bool; };
template <> struct MaskOf<Vd> { using type = Vm; };
template <class T> using Mask = typename MaskOf<T>::type;

inline Vd splat(double a) { return Vd{} + a; }
inline Vm mask_all(bool b) { return Vm{} - static_cast<long>(b); }
#if defined(__AVX512F__)
// One mask test instead of eight lane extractions.
inline bool any(Vm m) { return _mm512_test_epi64_mask((__m512i)m, (__m512i)m) != 0; }
inline bool all(Vm m) { return _mm512_test_epi64_mask((__m512i)m, (__m512i)m) == 0xFF; }
#elif defined(__AVX2__)
// The lanes' sign bits in one instruction.
inline bool any(Vm m) { return _mm256_movemask_pd((__m256d)m) != 0; }
inline bool all(Vm m) { return _mm256_movemask_pd((__m256d)m) == 0xF; }
#else
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
#endif
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
// Square root lane-wise (IEEE, as std::sqrt on each lane).
inline double vsqrt(double x) { return std::sqrt(x); }
#if defined(__AVX512F__)
inline Vd vsqrt(Vd x) { return (Vd)_mm512_sqrt_pd((__m512d)x); }
#elif defined(__AVX2__)
inline Vd vsqrt(Vd x) { return (Vd)_mm256_sqrt_pd((__m256d)x); }
#else
inline Vd vsqrt(Vd x) {
  Vd r;
  for (int b = 0; b < kLanes; ++b) r[b] = std::sqrt(x[b]);
  return r;
}
#endif
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

// exp, log, tanh, atanh lane-wise: glibc's vector math library (libmvec: its AVX-512 or AVX2 variant, within 4 ulp
// of the scalar functions) where the build has it (ANASIM_HAVE_MVEC, CMakeLists.txt), else the scalar functions
// lane by lane.
#if defined(ANASIM_HAVE_MVEC) && (defined(__AVX512F__) || defined(__AVX2__))
// libmvec's names (x86_64 vector ABI): _ZGVeN8v_ takes one AVX-512 register of 8 doubles, _ZGVdN4v_ one AVX2
// register of 4: a block of lanes either way (kLanes above).
#if defined(__AVX512F__)
#define ANASIM_MVEC(f) _ZGVeN8v_##f
static_assert(kLanes == 8, "libmvec's AVX-512 variants take 8 doubles");
#else
#define ANASIM_MVEC(f) _ZGVdN4v_##f
static_assert(kLanes == 4, "libmvec's AVX2 variants take 4 doubles");
#endif
extern "C" Vd ANASIM_MVEC(exp)(Vd);
extern "C" Vd ANASIM_MVEC(log)(Vd);
extern "C" Vd ANASIM_MVEC(tanh)(Vd);
extern "C" Vd ANASIM_MVEC(atanh)(Vd);
inline Vd vexp(Vd x) { return ANASIM_MVEC(exp)(x); }
inline Vd vlog(Vd x) { return ANASIM_MVEC(log)(x); }
inline Vd vtanh(Vd x) { return ANASIM_MVEC(tanh)(x); }
inline Vd vatanh(Vd x) { return ANASIM_MVEC(atanh)(x); }
#undef ANASIM_MVEC
#else
inline Vd vexp(Vd x) { return per_lane([&](int b) { return std::exp(x[b]); }); }
inline Vd vlog(Vd x) { return per_lane([&](int b) { return std::log(x[b]); }); }
inline Vd vtanh(Vd x) { return per_lane([&](int b) { return std::tanh(x[b]); }); }
inline Vd vatanh(Vd x) { return per_lane([&](int b) { return std::atanh(x[b]); }); }
#endif
inline double vexp(double x) { return std::exp(x); }
inline double vlog(double x) { return std::log(x); }

// y[i] += a[i] * d for i < m (one admittance column into every lane's currents).
inline void axpy(Vd* y, const double* a, Vd d, int m) {
#pragma GCC unroll 4
  for (int i = 0; i < m; ++i) y[i] += a[i] * d;
}

// y[i] += a0[i] * d0 + a1[i] * d1 for i < m.
inline void axpy2(Vd* y, const double* a0, Vd d0, const double* a1, Vd d1, int m) {
#pragma GCC unroll 4
  for (int i = 0; i < m; ++i) y[i] += a0[i] * d0 + a1[i] * d1;
}

// y[i] += a0[i] * d0 + a1[i] * d1 + a2[i] * d2 + a3[i] * d3 for i < m (a transient step's Y and C1 columns at once).
inline void axpy4(Vd* y, const double* a0, Vd d0, const double* a1, Vd d1, const double* a2, Vd d2, const double* a3,
                  Vd d3, int m) {
#pragma GCC unroll 2
  for (int i = 0; i < m; ++i) y[i] += a0[i] * d0 + a1[i] * d1 + (a2[i] * d2 + a3[i] * d3);
}

}  // namespace anasim::nn::fast
