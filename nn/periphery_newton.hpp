// The per-neuron periphery kernel's local Newton (Kernel in nn/periphery_kernel.hpp, which includes this file at
// its end): the one-image solve with its fallbacks, the blocks' lane-wise solve, and the convergence checks with
// earlier LU factors. The stamps they solve and the initial guess are periphery_kernel.hpp's.
#pragma once
#include <type_traits>
#include <utility>

namespace anasim::nn::fast {

// f(std::integral_constant<int, N>{}) with N = n if n is one of the sizes listed, else N = 0 (the size is then read
// at run time). Kernel::by_size lists the layouts' sizes (make_layout) worth a fixed size: 2 and 3 (one op-amp,
// level 1-2 or 0), 7 and 10 (the rectifier), 12 (the rectifier at level 0 with series-resistance diodes); the
// compiler then unrolls the small dense LU and its substitutions.
template <int First, int... Rest, class F>
decltype(auto) with_fixed_size(int n, F&& f) {
  if (n == First) return f(std::integral_constant<int, First>{});
  if constexpr (sizeof...(Rest) > 0) return with_fixed_size<Rest...>(n, std::forward<F>(f));
  else return f(std::integral_constant<int, 0>{});
}

template <class F>
decltype(auto) Kernel::by_size(F&& f) const {
  return with_fixed_size<2, 3, 7, 10, 12>(L.n, std::forward<F>(f));
}

inline int Kernel::solve(const NeuronIn& in, double* x, double* lim, bool warm, double gshunt, double max_step,
                         double* Jout, int* pivout, double tol_scale) const {
  return by_size([&](auto N) {
    return this->template solve_n<decltype(N)::value>(in, x, lim, warm, gshunt, max_step, Jout, pivout, tol_scale);
  });
}

inline bool Kernel::check(const NeuronIn& in, double* x, double* lim, const double* J, const int* piv,
                          double tol_scale) const {
  return by_size([&](auto N) { return this->template check_n<decltype(N)::value>(in, x, lim, J, piv, tol_scale); });
}

template <int N>
bool Kernel::check_n(const NeuronIn& in, double* x, double* lim, const double* Jold, const int* piv,
                     double tol_scale) const {
  const int n = N > 0 ? N : L.n;
  double J[kMaxLocal * kMaxLocal] = {}, r[kMaxLocal] = {};
  double lim2[kLim];
  std::copy(lim, lim + kLim, lim2);
  bool noncon = false;
  stamp<N>(in, x, J, r, lim2, false, noncon);
  if (noncon || !kcl_ok<N>(J, r, x, tol_scale)) return false;
  for (int i = 0; i < n; ++i) {
    double v = r[i];
    for (int k = 0; k < n; ++k) v -= J[i * n + k] * x[k];
    r[i] = v;
  }
  lu_apply<N>(n, Jold, piv, r);
  for (int k = 0; k < n; ++k)
    if (!(std::fabs(r[k]) <= tol_scale * tol(k, x[k] + r[k], x[k]))) return false;
  for (int k = 0; k < n; ++k) x[k] += r[k];
  std::copy(lim2, lim2 + kLim, lim);
  return true;
}

inline Vd Kernel::tol_lanes(int k, Vd a, Vd b) const {
  return reltol * vmax(vabs(a), vabs(b)) + (L.is_current[k] ? 1e-18 : vntol);
}

inline Vm Kernel::solve_lanes(const NeuronInT<Vd>& in, Vd* x, Vd* lim, Vm warm, Vm run, Vd tol_scale, Vd* J, Vm* piv,
                              long* its, int lockstep) const {
  return by_size([&](auto N) {
    return this->template solve_lanes_n<decltype(N)::value>(in, x, lim, warm, run, tol_scale, J, piv, its, lockstep);
  });
}

template <int N>
Vm Kernel::solve_lanes_n(const NeuronInT<Vd>& in, Vd* x, Vd* lim, Vm warm, Vm run, Vd tol_scale, Vd* J, Vm* piv,
                         long* its, int lockstep) const {
  const int n = N > 0 ? N : L.n;
  Vd Jt[kMaxLocal * kMaxLocal], rhs[kMaxLocal], lim2[kLim];
  Vm pt[kMaxLocal];
  Vd prev = splat(std::numeric_limits<double>::infinity());
  for (int b = 0; b < kLanes; ++b) its[b] = 0;
  for (int it = 1; it <= max_newton && any(run); ++it) {
    if (it > lockstep) return run;
    // Every lane runs (the usual case): factor straight into J, as the masked copy below would.
    const bool every = all(run);
    Vd* Jw = every ? J : Jt;
    std::fill(Jw, Jw + n * n, Vd{});
    std::fill(rhs, rhs + n, Vd{});
    std::copy(lim, lim + kLim, lim2);
    Vm noncon{};
    stamp<N>(in, x, Jw, rhs, lim2, it == 1 ? ~warm : Vm{}, noncon);
    const Vm balanced = kcl_ok<N>(Jw, rhs, x, tol_scale);
    Vm bad = lu_factor_lanes<N>(n, Jw, pt) & run;
    lu_apply_lanes<N>(n, Jw, pt, rhs);
    Vm conv = (noncon == 0) & balanced & (warm | mask_all(it > 1) | (tol_scale > 1.0));
    Vd norm{};
    for (int k = 0; k < n; ++k) {
      bad |= run & ~(vabs(rhs[k]) <= std::numeric_limits<double>::max());
      norm = vmax(norm, vabs(rhs[k] - x[k]) / (tol_scale * tol_lanes(k, rhs[k], x[k])));
    }
    conv &= ~(norm > 1.0);
    for (int b = 0; b < kLanes; ++b)
      if (bad[b]) its[b] = -it;
    run &= ~bad;
    const Vm damp = run & ~conv & mask_all(it > max_newton / 4) & (norm > prev);
    if (any(damp))
      for (int k = 0; k < n; ++k) rhs[k] = damp ? x[k] + 0.5 * (rhs[k] - x[k]) : rhs[k];
    prev = run ? norm : prev;
    for (int k = 0; k < n; ++k) {
      x[k] = run ? rhs[k] : x[k];
      piv[k] = run ? pt[k] : piv[k];
    }
    for (int s = 0; s < kLim; ++s) lim[s] = run ? lim2[s] : lim[s];
    if (!every)
      for (int e = 0; e < n * n; ++e) J[e] = run ? Jt[e] : J[e];
    const Vm fin = run & conv;
    for (int b = 0; b < kLanes; ++b)
      if (fin[b]) its[b] = it;
    run &= ~conv;
  }
  for (int b = 0; b < kLanes; ++b)
    if (run[b]) its[b] = -max_newton;
  return Vm{};
}

inline Vm Kernel::check_lanes(const NeuronInT<Vd>& in, Vd* x, Vd* lim, const Vd* J, const Vm* piv, Vd tol_scale,
                              Vm run) const {
  return by_size(
      [&](auto N) { return this->template check_lanes_n<decltype(N)::value>(in, x, lim, J, piv, tol_scale, run); });
}

template <int N>
Vm Kernel::check_lanes_n(const NeuronInT<Vd>& in, Vd* x, Vd* lim, const Vd* Jold, const Vm* piv, Vd tol_scale,
                         Vm run) const {
  const int n = N > 0 ? N : L.n;
  Vd J[kMaxLocal * kMaxLocal], r[kMaxLocal], lim2[kLim];
  std::fill(J, J + n * n, Vd{});
  std::fill(r, r + n, Vd{});
  std::copy(lim, lim + kLim, lim2);
  Vm noncon{};
  stamp<N>(in, x, J, r, lim2, Vm{}, noncon);
  Vm ok = run & (noncon == 0) & kcl_ok<N>(J, r, x, tol_scale);
  for (int i = 0; i < n; ++i) {
    Vd v = r[i];
    for (int k = 0; k < n; ++k) v -= J[i * n + k] * x[k];
    r[i] = v;
  }
  lu_apply_lanes<N>(n, Jold, piv, r);
  for (int k = 0; k < n; ++k) ok &= vabs(r[k]) <= tol_scale * tol_lanes(k, x[k] + r[k], x[k]);
  for (int k = 0; k < n; ++k) x[k] = ok ? x[k] + r[k] : x[k];
  for (int s = 0; s < kLim; ++s) lim[s] = ok ? lim2[s] : lim[s];
  return ok;
}

inline void Kernel::apply_lanes(const Vd* J, const Vm* piv, Vd* b, int m) const {
  by_size([&](auto N) { lu_apply_lanes_multi<decltype(N)::value>(L.n, J, piv, b, m); });
}

inline void Kernel::apply_multi(const double* A, const int* piv, double* b, int m) const {
  by_size([&](auto N) { lu_apply_multi<decltype(N)::value>(L.n, A, piv, b, m); });
}

template <int N>
int Kernel::solve_n(const NeuronIn& in, double* x, double* lim, bool warm, double gshunt, double max_step, double* Jout,
                    int* pivout, double tol_scale) const {
  const int n = N > 0 ? N : L.n;
  double Jbuf[kMaxLocal * kMaxLocal], rhs[kMaxLocal];
  int pbuf[kMaxLocal];
  double* J = Jout ? Jout : Jbuf;
  int* piv = pivout ? pivout : pbuf;
  double prev = std::numeric_limits<double>::infinity();
  double step = max_step, last[kMaxLocal] = {};  // the step limit in force; the last limited step
  bool limited = false;
  for (int it = 1; it <= max_newton; ++it) {
    std::fill(J, J + n * n, 0.0);
    std::fill(rhs, rhs + n, 0.0);
    bool noncon = false;
    stamp<N>(in, x, J, rhs, lim, !warm && it == 1, noncon);
    if (gshunt > 0)
      for (int k = 0; k < n; ++k)
        if (!L.is_current[k]) J[k * n + k] += gshunt;
    const bool balanced = kcl_ok<N>(J, rhs, x, tol_scale);
    if (!lu_factor<N>(n, J, piv)) return -it;
    lu_apply<N>(n, J, piv, rhs);
    if (max_step > 0) {
      double big = 0;
      for (int k = 0; k < n; ++k)
        if (!L.is_current[k]) big = std::max(big, std::fabs(rhs[k] - x[k]));
      if (big > step) {
        noncon = true;
        // A limited step that undoes the last limited one is a 2-cycle between two points (seen with a
        // saturated level-2 TIA: the output jumping 1 V back and forth): halve the limit for the rest.
        double back = 0;
        for (int k = 0; k < n; ++k) back += (rhs[k] - x[k]) * last[k];
        if (limited && back < 0) step *= 0.5;
        for (int k = 0; k < n; ++k) rhs[k] = x[k] + (step / big) * (rhs[k] - x[k]);
        for (int k = 0; k < n; ++k) last[k] = rhs[k] - x[k];
        limited = true;
      } else {
        limited = false;
      }
    }
    // (a loose cold stop may take the first step)
    bool conv = !noncon && balanced && (warm || it > 1 || tol_scale > 1);
    double norm = 0;
    for (int k = 0; k < n; ++k) {
      if (!std::isfinite(rhs[k])) return -it;
      const double d = std::fabs(rhs[k] - x[k]) / (tol_scale * tol(k, rhs[k], x[k]));
      norm = std::max(norm, d);
    }
    if (norm > 1) conv = false;
    if (!conv && it > max_newton / 4 && norm > prev)
      for (int k = 0; k < n; ++k) rhs[k] = x[k] + 0.5 * (rhs[k] - x[k]);
    prev = norm;
    std::copy(rhs, rhs + n, x);
    if (conv) return it;
  }
  return -max_newton;
}

inline int Kernel::robust_solve(const NeuronIn& in, double* x, double* lim, const double* x0, bool warm, int failed,
                                double* Jout, int* pivout) const {
  int total = -failed;
  auto restart = [&] {
    if (warm) std::copy(x0, x0 + L.n, x);
    else guess(in, x, lim);
  };
  restart();
  int it = solve(in, x, lim, warm, 0.0, 1.0, Jout, pivout);
  total += std::abs(it);
  if (it > 0) return total;
  restart();
  for (double g = 1e-2; g > 1e-13; g /= 10) {
    it = solve(in, x, lim, warm || g < 1e-2, g, 1.0);
    total += std::abs(it);
    if (it < 0) return -total;
  }
  it = solve(in, x, lim, true, 0.0, 1.0, Jout, pivout);
  total += std::abs(it);
  return it > 0 ? total : -total;
}

}  // namespace anasim::nn::fast
