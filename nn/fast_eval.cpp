// Exact batched evaluator (see fast_eval.hpp): CHOLMOD port reduction of the crossbar blocks, then per-image
// Gauss-Seidel sweeps of per-neuron Newton solves of the periphery.
#include "nn/fast_eval.hpp"
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <omp.h>
#include <cholmod.h>
#include "devices/opamp_model.hpp"
#include "engine/limiting.hpp"
#include <Eigen/Dense>
#include <xmmintrin.h>

namespace anasim::nn {

namespace {

using Clock = std::chrono::steady_clock;

// Diagnostics on stderr: ANASIM_NN_DEBUG=1 reports failing local solves, ANASIM_NN_TRACE=1 every sweep.
const bool kDebug = std::getenv("ANASIM_NN_DEBUG") != nullptr;
const bool kTrace = std::getenv("ANASIM_NN_TRACE") != nullptr;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---- device equations at DC (devices/opamp_model.hpp; diode as devices/diode.cpp) ----------------------------

using opamp_model::kVs;
using opamp_model::limit_tanh_arg;
using opamp_model::softplus;
using opamp_model::softplus_d;
constexpr double kGmin = 1e-12;   // [S] junction gmin (Options::gmin of build_netlist's netlist)
constexpr double kBoltz = 1.38064852e-23, kCharge = 1.6021766208e-19, kTemp = 300.15;  // diode.cpp

// DC coefficients of the op-amps (opamp_model::coeffs with fixed rails, non-inverting input grounded).
struct OpampDc : opamp_model::Coeffs {
  double vhi, vlo, vmid, vhalf;  // [V] output swing limits, its centre and half width (fixed rails)
};

OpampDc opamp_dc(const HardwareConfig& cfg) {
  opamp_model::Params p;
  p.level = static_cast<int>(opamp_param(cfg, "level"));
  p.a0 = opamp_param(cfg, "a0");
  p.gbw = opamp_param(cfg, "gbw");
  p.sr = opamp_param(cfg, "sr");
  p.vos = 0.0;  // per instance (HardwareInstance offsets)
  p.ib = opamp_param(cfg, "ib");
  p.rin = opamp_param(cfg, "rin");
  p.rout = opamp_param(cfg, "rout");
  p.ilim = opamp_param(cfg, "ilim");
  p.cmrr = opamp_param(cfg, "cmrr");
  p.iq = 0.0;  // supply current: no supply pins in the mapped circuit
  p.hd_hi = opamp_param(cfg, "headroom_hi");
  p.hd_lo = opamp_param(cfg, "headroom_lo");
  p.vpos = opamp_param(cfg, "vpos");
  p.vneg = opamp_param(cfg, "vneg");
  OpampDc o;
  static_cast<opamp_model::Coeffs&>(o) = opamp_model::coeffs(p);
  opamp_model::fixed_swing(o, o.vhi, o.vlo, o.vmid, o.vhalf);
  return o;
}

struct DiodeDc {
  double is, vte, vcrit;
};

DiodeDc diode_dc(const HardwareConfig& cfg) {
  DiodeDc d;
  d.is = cfg.diode_is;
  d.vte = cfg.diode_n * (kBoltz * kTemp / kCharge);
  d.vcrit = d.vte * std::log(d.vte / (M_SQRT2 * d.is));
  return d;
}

// diode.cpp eval(): current and conductance at junction voltage vd, gmin included.
void diode_eval(const DiodeDc& d, double vd, double& cd, double& gd) {
  if (vd >= -3 * d.vte) {
    const double evd = std::exp(vd / d.vte);
    cd = d.is * (evd - 1);
    gd = d.is * evd / d.vte;
  } else {
    double arg = 3 * d.vte / (vd * M_E);
    arg = arg * arg * arg;
    cd = -d.is * (1 + arg);
    gd = d.is * 3 * arg / vd;
  }
  cd += kGmin * vd;
  gd += kGmin;
}

// diode.cpp's junction limiting.
double pnjlim(const DiodeDc& d, double vnew, double vold, bool& limited) {
  return anasim::pnjlim(vnew, vold, d.vte, d.vcrit, limited);
}

// ---- the per-neuron periphery: layout, stamps, Newton ------------------------------------------------------

constexpr int kMaxLocal = 16;
constexpr int kLim = 8;  // limiting states per neuron: op-amp k tanh slots 2k, 2k+1; diodes 6, 7
// Largest relative change (against |x| + 1 mV) applied by linear response instead of Newton; the verification sweep
// (a Newton iteration for every such neuron) makes the result exact whatever this value.
constexpr double kLinearMax = 1e-3;
// Linear moves below this (relative to |x| + 1 mV) need no verifying check: the second-order error, ~ (move /
// thermal voltage)^2 for the diodes, stays below 1e-13.
constexpr double kNoCheck = 1e-7;
// Tolerance multiplier of the Newton solves between verifications.
constexpr double kLooseTol = 1e4;
// Passes of the stage-by-stage initial guess (a third changes little: the residual left is the coupling to the
// neighbours, which the first Newton step corrects).
constexpr int kGuessPasses = 2;

// tanh(x) [-]: Taylor series to x^11 for |x| < 1/32 (the next term is below 1e-20 relative there, so the result
// is std::tanh's to rounding), std::tanh elsewhere. In linear operation the op-amps' tanh arguments are 1e-6 to
// 1e-3 (input stage and output current limit), and libm's tanh was ~15% of the per-image time.
inline double tanh_fast(double x) {
  if (std::fabs(x) >= 0.03125) return std::tanh(x);
  const double x2 = x * x;
  return x + x * x2 * (-1.0 / 3 + x2 * (2.0 / 15 + x2 * (-17.0 / 315 + x2 * (62.0 / 2835 + x2 * (-1382.0 / 155925)))));
}

// Local unknowns of one neuron's periphery (-1 = absent).
struct Layout {
  int n = 0;
  int c = -1, y = -1, s = -1, a = -1, h = -1, t = -1, hn = -1;
  std::array<int, 3> p{-1, -1, -1};   // level-2 pole node of op-amp k (kOpTia, kOpRect, kOpInv)
  std::array<int, 3> br{-1, -1, -1};  // level-0 output branch current of op-amp k
  int d1i = -1, d2i = -1;             // diode internal (series-resistance) nodes
  std::array<bool, kMaxLocal> is_current{};
};

Layout make_layout(bool rect, int level, bool diode_rs) {
  Layout L;
  L.c = L.n++;
  L.y = L.n++;
  if (rect) {
    L.s = L.n++;
    L.a = L.n++;
    L.h = L.n++;
    L.t = L.n++;
    L.hn = L.n++;
  }
  const int nops = rect ? 3 : 1;
  for (int k = 0; k < nops; ++k) {
    if (level == 0) {
      L.br[k] = L.n++;
      L.is_current[L.br[k]] = true;
    }
  }
  if (rect && diode_rs) {
    L.d1i = L.n++;
    L.d2i = L.n++;
  }
  return L;
}

// What a neuron sees of the array: self-admittances at its ports and the lagged currents of the other ports.
struct NeuronIn {
  double y_cc = 0;                      // [S] self-admittance of the column port
  double lag_c = 0;                     // [A] current leaving c into the array from the other ports (and noise)
  double y_hh = 0, y_hhn = 0, y_hnh = 0, y_hnhn = 0;  // next layer's row-pair self-admittance (rectifier)
  double lag_h = 0, lag_hn = 0;
  const double* r = nullptr;            // kNumPeripheryRes resistances [ohm]
  const double* vos = nullptr;          // kNumPeripheryOps offsets [V]
};

struct Kernel {
  Layout L;
  bool rect = false;
  OpampDc op;
  DiodeDc di;
  double diode_gs = 0;   // [S] 1/rs (0: no series resistance)
  double adc_g = 0;      // [S] ADC input conductance on y
  double reltol = 1e-12, vntol = 1e-15;
  int max_newton = 100;

  // Stamps the companion model of every element at x into J (n x n, row-major) and rhs.
  template <int N>
  void stamp(const NeuronIn& in, const double* x, double* J, double* rhs, double* lim, bool nolimit,
             bool& noncon) const {
    const int n = N > 0 ? N : L.n;
    auto g2 = [&](int a, int b, double g) {
      if (a >= 0) J[a * n + a] += g;
      if (b >= 0) J[b * n + b] += g;
      if (a >= 0 && b >= 0) {
        J[a * n + b] -= g;
        J[b * n + a] -= g;
      }
    };
    g2(L.c, L.y, 1.0 / in.r[kResRf]);
    J[L.c * n + L.c] += in.y_cc;
    rhs[L.c] -= in.lag_c;
    opamp<N>(L.c, L.y, L.p[kOpTia], L.br[kOpTia], in.vos[kOpTia], x, J, rhs, lim + 0, nolimit, noncon);
    if (adc_g > 0) J[L.y * n + L.y] += adc_g;
    if (!rect) return;
    g2(L.y, L.s, 1.0 / in.r[kResR1]);
    opamp<N>(L.s, L.a, L.p[kOpRect], L.br[kOpRect], in.vos[kOpRect], x, J, rhs, lim + 2, nolimit, noncon);
    diode<N>(L.s, L.d1i, L.a, x, J, rhs, lim[6], nolimit, noncon);
    diode<N>(L.a, L.d2i, L.h, x, J, rhs, lim[7], nolimit, noncon);
    g2(L.h, L.s, 1.0 / in.r[kResR2]);
    g2(L.h, -1, 1.0 / in.r[kResRl]);
    g2(L.h, L.t, 1.0 / in.r[kResInv1]);
    opamp<N>(L.t, L.hn, L.p[kOpInv], L.br[kOpInv], in.vos[kOpInv], x, J, rhs, lim + 4, nolimit, noncon);
    g2(L.t, L.hn, 1.0 / in.r[kResInv2]);
    J[L.h * n + L.h] += in.y_hh;
    J[L.h * n + L.hn] += in.y_hhn;
    J[L.hn * n + L.h] += in.y_hnh;
    J[L.hn * n + L.hn] += in.y_hnhn;
    rhs[L.h] -= in.lag_h;
    rhs[L.hn] -= in.lag_hn;
  }

  // Op-amp with grounded non-inverting input, inverting input inn, output out.
  template <int N>
  void opamp(int inn, int out, int /*p: level-2 pole node, eliminated*/, int br, double vos, const double* x, double* J, double* rhs, double* xold,
             bool nolimit, bool& noncon) const {
    const int n = N > 0 ? N : L.n;
    if (op.level == 0) {  // nullor: the branch current leaves `out`; branch equation v(inp) - v(inn) = 0
      J[out * n + br] += 1;
      J[br * n + inn] -= 1;
      return;
    }
    if (std::isfinite(op.rin)) J[inn * n + inn] += 1.0 / op.rin;
    auto th = [&](double arg, int slot, double& ds) {
      bool limited = false;
      const double xl = nolimit ? arg : limit_tanh_arg(arg, xold[slot], limited);
      const double t = tanh_fast(xl), s = 1 - t * t;
      if (limited && std::fabs(tanh_fast(arg) - t) > 1e-12) noncon = true;
      xold[slot] = xl;
      ds = s;
      return t + s * (arg - xl);
    };
    // Linearised current i0 + sum g_k (x_k - x0_k) leaving node `node`.
    auto lin = [&](int node, double i0, int k1, double g1, int k2, double g2) {
      J[node * n + k1] += g1;
      J[node * n + k2] += g2;
      rhs[node] -= i0 - g1 * x[k1] - g2 * x[k2];
    };
    const double vinn = x[inn], vout = x[out];
    if (op.level == 1) {
      const double vd = (0.0 - vinn) + vos;
      double ds;
      const double tv = th(op.a0 * vd / op.vhalf, 0, ds);
      const double vt = op.vmid + op.vhalf * tv;
      const double io = (vt - vout) / op.rout;  // into `out`
      const double dio_dinn = -op.a0 * ds / op.rout, dio_dout = -1.0 / op.rout;
      lin(out, -io, inn, -dio_dinn, out, -dio_dout);
      return;
    }
    // Level 2 at DC: the pole node p carries only the pole current (input stage - leak - rail clamp = 0), so it is
    // a function of the input alone and is eliminated here (solved exactly, see pole_voltage); then the output
    // current (with its limit), the bias current and the common-mode term.
    double vd = (0.0 - vinn) + vos, dvd = -1.0;
    if (op.kcm != 0) {
      vd = vd + op.kcm * (0.5 * (0.0 + vinn) - op.vmid);
      dvd += 0.5 * op.kcm;
    }
    double ds;
    const double stage = op.imax * th(vd / op.vsr, 0, ds);
    const double dstage = op.imax * ds * dvd / op.vsr;
    double dp_dstage;
    const double vp = pole_voltage(stage, dp_dstage);
    rhs[inn] -= op.ib;
    double io, dp, dout;
    if (!std::isfinite(op.ilim)) {
      io = (vp - vout) / op.rout;
      dp = 1.0 / op.rout;
      dout = -dp;
    } else {
      double ds2;
      io = op.ilim * th((vp - vout) / (op.rout * op.ilim), 1, ds2);
      dp = ds2 / op.rout;
      dout = -dp;
    }
    lin(out, -io, inn, -dp * dp_dstage * dstage, out, -dout);
  }

  // Level 2: the pole-node voltage at DC of an op-amp whose inverting input is at vinn (NaN at other levels).
  double pole_of(double vinn, double vos) const {
    if (op.level != 2) return std::nan("");
    double vd = (0.0 - vinn) + vos;
    if (op.kcm != 0) vd = vd + op.kcm * (0.5 * (0.0 + vinn) - op.vmid);
    double dp;
    return pole_voltage(op.imax * tanh_fast(vd / op.vsr), dp);
  }

  // Level 2: the pole-node voltage p at which the pole current stage - (p - vmid)/r1 - clamp(p) vanishes, and
  // dp/dstage. Far from the rails the clamp is exactly 0 and p is explicit; else Newton on the increasing
  // function of p, to the last bit.
  double pole_voltage(double stage, double& dp_dstage) const {
    const double p0 = op.vmid + op.r1 * stage;
    if ((p0 - op.vhi) / kVs < -746.0 && (op.vlo - p0) / kVs < -746.0) {
      dp_dstage = op.r1;
      return p0;
    }
    double p = std::clamp(p0, op.vlo - 1.0, op.vhi + 1.0), dF = 1.0 / op.r1;
    for (int it = 0; it < 200; ++it) {
      const double a1 = (p - op.vhi) / kVs, a2 = (op.vlo - p) / kVs;
      const double F = (p - op.vmid) / op.r1 + op.gcl * (softplus(a1) - softplus(a2)) - stage;
      dF = 1.0 / op.r1 + op.gcl * (softplus_d(a1) + softplus_d(a2)) / kVs;
      const double step = F / dF;
      p -= step;
      if (std::fabs(step) <= 1e-16 * (std::fabs(p) + 1.0)) break;
    }
    dp_dstage = 1.0 / dF;
    return p;
  }

  // Diode from anode a (through the series-resistance node ai when present) to cathode k.
  template <int N>
  void diode(int a, int ai, int k, const double* x, double* J, double* rhs, double& vold, bool nolimit,
             bool& noncon) const {
    const int n = N > 0 ? N : L.n;
    const int j = ai >= 0 ? ai : a;
    if (ai >= 0) {
      J[a * n + a] += diode_gs;
      J[ai * n + ai] += diode_gs;
      J[a * n + ai] -= diode_gs;
      J[ai * n + a] -= diode_gs;
    }
    double vd = x[j] - x[k];
    bool limited = false;
    if (!nolimit) vd = pnjlim(di, vd, vold, limited);
    if (limited) noncon = true;
    vold = vd;
    double cd, gd;
    diode_eval(di, vd, cd, gd);
    const double ieq = cd - gd * vd;
    J[j * n + j] += gd;
    J[k * n + k] += gd;
    J[j * n + k] -= gd;
    J[k * n + j] -= gd;
    rhs[j] -= ieq;
    rhs[k] += ieq;
  }

  // LU factorization in place (A n x n row-major, partial pivoting; piv[k] = row swapped with k; the diagonal of U
  // is stored as its reciprocals). False if singular.
  template <int N>
  static bool lu_factor(int nrt, double* A, int* piv) {
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
  static void lu_apply(int nrt, const double* A, const int* piv, double* b) {
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

  double tol(int k, double a, double b) const {
    return reltol * std::max(std::fabs(a), std::fabs(b)) + (L.is_current[k] ? 1e-18 : vntol);
  }

  // Newton on the neuron's periphery from x (warm: x is an earlier solution and lim its limiting states).
  // gshunt [S] adds a conductance from every node to ground (gmin stepping); max_step [V] (> 0) scales down
  // steps that would move a node voltage further. Returns the iteration count, or minus it when it did not
  // converge.
  // J (n*n) and piv (n), when given, receive the LU factors of the last Jacobian (for linear-response updates).
  // tol_scale multiplies the tolerance (> 1: a looser stop, for solves whose result a later check refines).
  int solve(const NeuronIn& in, double* x, double* lim, bool warm, double gshunt = 0, double max_step = 0,
            double* Jout = nullptr, int* pivout = nullptr, double tol_scale = 1.0) const {
    switch (L.n) {  // fixed sizes let the compiler unroll the small dense LU
      case 2: return solve_n<2>(in, x, lim, warm, gshunt, max_step, Jout, pivout, tol_scale);
      case 3: return solve_n<3>(in, x, lim, warm, gshunt, max_step, Jout, pivout, tol_scale);
      case 7: return solve_n<7>(in, x, lim, warm, gshunt, max_step, Jout, pivout, tol_scale);
      case 10: return solve_n<10>(in, x, lim, warm, gshunt, max_step, Jout, pivout, tol_scale);
      case 12: return solve_n<12>(in, x, lim, warm, gshunt, max_step, Jout, pivout, tol_scale);
      default: return solve_n<0>(in, x, lim, warm, gshunt, max_step, Jout, pivout, tol_scale);
    }
  }
  // Convergence check at x without refactoring: one Newton step computed with the Jacobian stamped at x but solved
  // with the earlier LU factors (J, piv). True, with x advanced by that step, if the step is within the tolerance.
  bool check(const NeuronIn& in, double* x, double* lim, const double* J, const int* piv) const {
    switch (L.n) {
      case 2: return check_n<2>(in, x, lim, J, piv);
      case 3: return check_n<3>(in, x, lim, J, piv);
      case 7: return check_n<7>(in, x, lim, J, piv);
      case 10: return check_n<10>(in, x, lim, J, piv);
      case 12: return check_n<12>(in, x, lim, J, piv);
      default: return check_n<0>(in, x, lim, J, piv);
    }
  }
  template <int N>
  bool check_n(const NeuronIn& in, double* x, double* lim, const double* Jold, const int* piv) const {
    const int n = N > 0 ? N : L.n;
    double J[kMaxLocal * kMaxLocal] = {}, r[kMaxLocal] = {};
    double lim2[kLim];
    std::copy(lim, lim + kLim, lim2);
    bool noncon = false;
    stamp<N>(in, x, J, r, lim2, false, noncon);
    if (noncon) return false;
    for (int i = 0; i < n; ++i) {
      double v = r[i];
      for (int k = 0; k < n; ++k) v -= J[i * n + k] * x[k];
      r[i] = v;
    }
    lu_apply<N>(n, Jold, piv, r);
    for (int k = 0; k < n; ++k)
      if (!(std::fabs(r[k]) <= tol(k, x[k] + r[k], x[k]))) return false;
    for (int k = 0; k < n; ++k) x[k] += r[k];
    std::copy(lim2, lim2 + kLim, lim);
    return true;
  }
  // m right-hand sides at once (b: m consecutive vectors of n).
  void apply_multi(const double* A, const int* piv, double* b, int m) const {
    switch (L.n) {
      case 2: return lu_apply_multi<2>(2, A, piv, b, m);
      case 3: return lu_apply_multi<3>(3, A, piv, b, m);
      case 7: return lu_apply_multi<7>(7, A, piv, b, m);
      case 10: return lu_apply_multi<10>(10, A, piv, b, m);
      default: return lu_apply_multi<0>(L.n, A, piv, b, m);
    }
  }
  template <int N>
  static void lu_apply_multi(int nrt, const double* A, const int* piv, double* b, int m) {
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
  void apply(const double* A, const int* piv, double* b) const {
    switch (L.n) {
      case 2: return lu_apply<2>(2, A, piv, b);
      case 3: return lu_apply<3>(3, A, piv, b);
      case 7: return lu_apply<7>(7, A, piv, b);
      case 10: return lu_apply<10>(10, A, piv, b);
      case 12: return lu_apply<12>(12, A, piv, b);
      default: return lu_apply<0>(L.n, A, piv, b);
    }
  }
  template <int N>
  int solve_n(const NeuronIn& in, double* x, double* lim, bool warm, double gshunt, double max_step, double* Jout,
              int* pivout, double tol_scale) const {
    const int n = N > 0 ? N : L.n;
    double Jbuf[kMaxLocal * kMaxLocal], rhs[kMaxLocal];
    int pbuf[kMaxLocal];
    double* J = Jout ? Jout : Jbuf;
    int* piv = pivout ? pivout : pbuf;
    double prev = std::numeric_limits<double>::infinity();
    for (int it = 1; it <= max_newton; ++it) {
      std::fill(J, J + n * n, 0.0);
      std::fill(rhs, rhs + n, 0.0);
      bool noncon = false;
      stamp<N>(in, x, J, rhs, lim, !warm && it == 1, noncon);
      if (gshunt > 0)
        for (int k = 0; k < n; ++k)
          if (!L.is_current[k]) J[k * n + k] += gshunt;
      if (!lu_factor<N>(n, J, piv)) return -it;
      lu_apply<N>(n, J, piv, rhs);
      if (max_step > 0) {
        double big = 0;
        for (int k = 0; k < n; ++k)
          if (!L.is_current[k]) big = std::max(big, std::fabs(rhs[k] - x[k]));
        if (big > max_step) {
          noncon = true;
          for (int k = 0; k < n; ++k) rhs[k] = x[k] + (max_step / big) * (rhs[k] - x[k]);
        }
      }
      bool conv = !noncon && (warm || it > 1 || tol_scale > 1);  // a loose cold stop may take the first step
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

  // Fallbacks after a failed Newton (`failed` < 0: its iterations): from the start point (the previous solution
  // `x0` when warm, else the ideal guess) with 1 V step limiting, then gmin stepping (1e-2 S down to 0 by decades,
  // each step warm-started).
  int robust_solve(const NeuronIn& in, double* x, double* lim, const double* x0, bool warm, int failed, double* Jout,
                   int* pivout) const {
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

  // The DC input voltage inn (non-inverting input grounded) and pole-node voltage p at which an op-amp with offset
  // vos delivers current io into its output at voltage out: the op-amp equations solved backwards.
  // atanh for the initial guess: the series to u^5 below 0.3 (error < u^7/7, far below what the guess needs).
  static double guess_atanh(double u) {
    if (std::fabs(u) < 0.3) {
      const double u2 = u * u;
      return u * (1.0 + u2 * (1.0 / 3.0 + u2 * 0.2));
    }
    return std::atanh(u);
  }

  void opamp_inverse(double out, double io, double vos, double& inn, double& p) const {
    p = out;
    if (op.level == 0) {
      inn = 0.0;
      return;
    }
    constexpr double kEdge = 1 - 1e-15;
    double vd;
    if (op.level == 1) {
      const double u = std::clamp((out + op.rout * io - op.vmid) / op.vhalf, -kEdge, kEdge);
      vd = op.vhalf * guess_atanh(u) / op.a0;
    } else {
      p = std::isfinite(op.ilim) ? out + op.rout * op.ilim * guess_atanh(std::clamp(io / op.ilim, -kEdge, kEdge))
                                 : out + op.rout * io;
      const double need =
          (p - op.vmid) / op.r1 + op.gcl * (softplus((p - op.vhi) / kVs) - softplus((op.vlo - p) / kVs));
      vd = op.vsr * guess_atanh(std::clamp(need / op.imax, -kEdge, kEdge));
    }
    const double kcm = op.level >= 2 ? op.kcm : 0.0;
    inn = (vos - kcm * op.vmid - vd) / (1 - 0.5 * kcm);
  }

  // Initial guess for a cold start: the stages in signal order (TIA, rectifier, inverter), each from its KCL with
  // the op-amp equations inverted and the diodes in their ideal regime, three passes so that the loading of each
  // stage by the next settles. Near-exact away from the rectifier corner and saturation. Sets the limiting states.
  void guess(const NeuronIn& in, double* x, double* lim) const {
    std::fill(x, x + L.n, 0.0);
    std::fill(lim, lim + kLim, 0.0);
    const double* r = in.r;
    const double gin = op.level >= 1 && std::isfinite(op.rin) ? 1.0 / op.rin : 0.0;
    const double ib = op.level == 2 ? op.ib : 0.0;
    const double rs = diode_gs > 0 ? 1.0 / diode_gs : 0.0;
    auto vdio = [&](double i) { return i > 0 ? di.vte * std::log(i / di.is + 1) + i * rs : 0.0; };
    auto idio = [&](double v) {
      double cd, gd;
      diode_eval(di, v, cd, gd);
      return cd;
    };
    double c = 0, y = 0, s = 0, a = 0, h = 0, t = 0, hn = 0, id1 = 0, id2 = 0;
    double io[3] = {0, 0, 0}, p[3] = {0, 0, 0};
    for (int pass = 0; pass < kGuessPasses; ++pass) {
      // TIA: y from the KCL at c; if that is beyond the swing the output saturates and c follows from the KCL.
      y = c + r[kResRf] * ((in.y_cc + gin) * c + in.lag_c + ib);
      if (y > op.vhi || y < op.vlo) {
        y = std::clamp(y, op.vlo, op.vhi);
        c = (y / r[kResRf] - in.lag_c - ib) / (1.0 / r[kResRf] + in.y_cc + gin);
      }
      io[0] = (y - c) / r[kResRf] + adc_g * y + (rect ? (y - s) / r[kResR1] : 0.0);
      double cn;
      opamp_inverse(y, io[0], in.vos[kOpTia], cn, p[0]);
      if (std::fabs(cn) < 1.0) c = cn;
      if (!rect) continue;
      // Rectifier: D2 conducts (h > 0) for y < 0, else D1.
      const double gh = 1.0 / r[kResR2] + 1.0 / r[kResRl] + 1.0 / r[kResInv1] + in.y_hh;
      if (y < 0) {
        id1 = idio(s - a);
        h = s + r[kResR2] * ((s - y) / r[kResR1] + id1 + gin * s + ib);
        id2 = (h - s) / r[kResR2] + h / r[kResRl] + (h - t) / r[kResInv1] + in.y_hh * h + in.y_hhn * hn + in.lag_h;
        a = h + vdio(id2);
      } else {
        id2 = idio(a - h);
        h = (s / r[kResR2] + t / r[kResInv1] - in.y_hhn * hn - in.lag_h + id2) / gh;
        id1 = (y - s) / r[kResR1] + (h - s) / r[kResR2] - gin * s - ib;
        a = s - vdio(id1);
      }
      a = std::clamp(a, op.vlo, op.vhi);
      io[1] = id2 - id1;
      double sn;
      opamp_inverse(a, io[1], in.vos[kOpRect], sn, p[1]);
      if (std::fabs(sn) < 1.0) s = sn;
      // Inverter.
      hn = std::clamp(t + r[kResInv2] * ((t - h) / r[kResInv1] + gin * t + ib), op.vlo, op.vhi);
      io[2] = (hn - t) / r[kResInv2] + in.y_hnhn * hn + in.y_hnh * h + in.lag_hn;
      double tn;
      opamp_inverse(hn, io[2], in.vos[kOpInv], tn, p[2]);
      if (std::fabs(tn) < 1.0) t = tn;
    }
    x[L.c] = c;
    x[L.y] = y;
    if (rect) {
      x[L.s] = s;
      x[L.a] = a;
      x[L.h] = h;
      x[L.t] = t;
      x[L.hn] = hn;
      if (L.d1i >= 0) x[L.d1i] = s - id1 * rs;
      if (L.d2i >= 0) x[L.d2i] = a - id2 * rs;
    }
    for (int k = 0; k < (rect ? 3 : 1); ++k) {
      if (L.p[k] >= 0) x[L.p[k]] = p[k];
      if (L.br[k] >= 0) x[L.br[k]] = -io[k];
    }
  }
};

// ---- port reduction with CHOLMOD ----------------------------------------------------------------------------

// Flushes subnormal results and operands to zero on this thread while in scope (SSE MXCSR FTZ and DAZ bits).
class FlushSubnormals {
 public:
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
 private:
  unsigned saved_;
};

// A symmetric conductance network: nodes 0 .. n_int-1 internal, n_int .. n_int+n_port-1 ports.
struct PortNetwork {
  int n_int = 0, n_port = 0;
  std::vector<int> ea, eb;
  std::vector<double> eg;  // [S]
  void edge(int a, int b, double g) {
    if (g == 0 || a == b) return;
    ea.push_back(a);
    eb.push_back(b);
    eg.push_back(g);
  }
};

// Port admittance of a network; keeps the symbolic analysis for the next network of the same pattern.
class SchurSolver {
 public:
  SchurSolver() {
    cholmod_start(&cc_);
  }
  ~SchurSolver() {
    if (L_) cholmod_free_factor(&L_, &cc_);
    cholmod_finish(&cc_);
  }
  SchurSolver(const SchurSolver&) = delete;
  SchurSolver& operator=(const SchurSolver&) = delete;

  Status compute(const PortNetwork& net, Eigen::MatrixXd& Y) {
    // Fill-in entries of L decay geometrically (mS wires next to uS cells) into the subnormal range, where the
    // arithmetic is ~100x slower; they are far below rounding of any port value: flush them to zero.
    const FlushSubnormals ftz;
    const auto t_start = Clock::now();
    const int n = net.n_int + net.n_port, m = net.n_port;
    // Lower-triangular CSC of the nodal matrix, ports shifted by delta (the port block alone is singular).
    std::vector<double> diag(n, 0.0);
    std::vector<std::vector<std::pair<int, double>>> below(n);
    for (size_t e = 0; e < net.eg.size(); ++e) {
      const int a = net.ea[e], b = net.eb[e];
      const double g = net.eg[e];
      diag[a] += g;
      diag[b] += g;
      below[std::min(a, b)].push_back({std::max(a, b), -g});
    }
    std::vector<double> delta(m);
    for (int p = 0; p < m; ++p) {
      delta[p] = 1e-3 * diag[net.n_int + p] + 1e-12;
      diag[net.n_int + p] += delta[p];
    }
    if (net.n_int == 0) {  // nothing to eliminate
      Y = Eigen::MatrixXd::Zero(m, m);
      for (int p = 0; p < m; ++p) Y(p, p) = diag[p] - delta[p];
      for (int j = 0; j < n; ++j)
        for (auto [i, v] : below[j]) Y(i, j) = Y(j, i) = Y(i, j) + v;
      return {};
    }
    std::vector<int> Ap(n + 1), Ai;
    std::vector<double> Ax;
    Ai.reserve(n + net.eg.size());
    Ax.reserve(n + net.eg.size());
    for (int j = 0; j < n; ++j) {
      Ap[j] = static_cast<int>(Ai.size());
      auto& col = below[j];
      std::sort(col.begin(), col.end());
      Ai.push_back(j);
      Ax.push_back(diag[j]);
      for (size_t k = 0; k < col.size(); ++k) {
        if (k > 0 && col[k].first == col[k - 1].first) {
          Ax.back() += col[k].second;  // parallel edges
          continue;
        }
        Ai.push_back(col[k].first);
        Ax.push_back(col[k].second);
      }
    }
    Ap[n] = static_cast<int>(Ai.size());
    const bool same = L_ && Ap == ap_ && Ai == ai_;
    if (!same) {
      if (L_) cholmod_free_factor(&L_, &cc_);
      ap_ = Ap;
      ai_ = Ai;
      // Interior ordering (postordered), then the ports last in their own order.
      std::vector<int> pi, ii;
      std::vector<double> xi;
      std::vector<int> pcol(net.n_int + 1);
      for (int j = 0; j < net.n_int; ++j) {
        pcol[j] = static_cast<int>(ii.size());
        for (int k = Ap[j]; k < Ap[j + 1]; ++k)
          if (Ai[k] < net.n_int) {
            ii.push_back(Ai[k]);
            xi.push_back(Ax[k]);
          }
      }
      pcol[net.n_int] = static_cast<int>(ii.size());
      cholmod_sparse Aint = wrap(net.n_int, pcol, ii, xi);
      cc_.supernodal = CHOLMOD_SUPERNODAL;
      cc_.nmethods = 1;
      cc_.method[0].ordering = net.n_int > 2000 ? CHOLMOD_METIS : CHOLMOD_AMD;
      cc_.postorder = 1;
      cholmod_factor* Li = cholmod_analyze(&Aint, &cc_);
      if (!Li) return Status::numerical("CHOLMOD could not order a crossbar block");
      std::vector<int> perm(n);
      const int* P = static_cast<const int*>(Li->Perm);
      for (int i = 0; i < net.n_int; ++i) perm[i] = P[i];
      for (int p = 0; p < m; ++p) perm[net.n_int + p] = net.n_int + p;
      cholmod_free_factor(&Li, &cc_);
      cc_.nmethods = 1;
      cc_.method[0].ordering = CHOLMOD_GIVEN;
      cc_.postorder = 0;
      cholmod_sparse A = wrap(n, Ap, Ai, Ax);
      L_ = cholmod_analyze_p(&A, perm.data(), nullptr, 0, &cc_);
      if (!L_) return Status::numerical("CHOLMOD analysis of a crossbar block failed");
    }
    cholmod_sparse A = wrap(n, Ap, Ai, Ax);
    const auto tf = Clock::now();
    const bool fok = cholmod_factorize(&A, L_, &cc_);
    if (!fok || cc_.status != CHOLMOD_OK)
      return Status::numerical(fmt::format("CHOLMOD factorization of a crossbar block failed (status {}, column {})",
                                           cc_.status, L_->minor));
    const int* Lperm = static_cast<const int*>(L_->Perm);
    for (int p = 0; p < m; ++p)
      if (Lperm[net.n_int + p] != net.n_int + p)
        return Status::fail(ErrorKind::Other, "CHOLMOD moved a port out of the trailing block");
    // Trailing m x m block of the supernodal L.
    Eigen::MatrixXd Lpp = Eigen::MatrixXd::Zero(m, m);
    const int first = n - m;
    const int* super = static_cast<const int*>(L_->super);
    const int* lpi = static_cast<const int*>(L_->pi);
    const int* lpx = static_cast<const int*>(L_->px);
    const int* ls = static_cast<const int*>(L_->s);
    const double* lx = static_cast<const double*>(L_->x);
    if (!L_->is_super) return Status::fail(ErrorKind::Other, "CHOLMOD did not make a supernodal factor");
    for (size_t s = 0; s < L_->nsuper; ++s) {
      const int k1 = super[s], k2 = super[s + 1];
      if (k2 <= first) continue;
      const int psi = lpi[s], nsrow = lpi[s + 1] - psi, psx = lpx[s];
      for (int k = std::max(k1, first); k < k2; ++k)
        for (int r = 0; r < nsrow; ++r) {
          const int row = ls[psi + r];
          if (row >= k) Lpp(row - first, k - first) = lx[psx + static_cast<size_t>(k - k1) * nsrow + r];
        }
    }
    Y.noalias() = Lpp * Lpp.transpose();
    for (int p = 0; p < m; ++p) Y(p, p) -= delta[p];
    if (kTrace)
      fmt::print(stderr, "port reduction: {} nodes, {} ports, {} analysis, factor + extraction {:.3f} s (total {:.3f} s)\n",
                 n, m, same ? "reused" : "new", since(tf), since(t_start));
    return {};
  }

 private:
  static cholmod_sparse wrap(int n, const std::vector<int>& p, const std::vector<int>& i, const std::vector<double>& x) {
    cholmod_sparse A{};
    A.nrow = A.ncol = static_cast<size_t>(n);
    A.nzmax = i.size();
    A.p = const_cast<int*>(p.data());
    A.i = const_cast<int*>(i.data());
    A.x = const_cast<double*>(x.data());
    A.stype = -1;
    A.itype = CHOLMOD_INT;
    A.xtype = CHOLMOD_REAL;
    A.dtype = CHOLMOD_DOUBLE;
    A.sorted = 1;
    A.packed = 1;
    return A;
  }
  cholmod_common cc_;
  cholmod_factor* L_ = nullptr;
  std::vector<int> ap_, ai_;
};

// Adds the documented crossbar topology (devices/crossbar.hpp) of one tile to a network. rowpin/colpin: node
// ids of its pins; next: the next free internal node id (advanced).
void add_tile(PortNetwork& net, const CrossbarSpec& s, const std::vector<double>& g, const std::vector<int>& rowpin,
              const std::vector<int>& colpin, int& next) {
  const int R = s.rows, C = s.cols;
  const bool row_cell = s.rwire_row > 0, row_line = !row_cell && s.rdriver > 0;
  const bool col_cell = s.rwire_col > 0, col_line = !col_cell && s.rsink > 0;
  const int rbase = next;
  next += row_cell ? R * C : row_line ? R : 0;
  const int cbase = next;
  next += col_cell ? R * C : col_line ? C : 0;
  auto rn = [&](int i, int j) { return row_cell ? rbase + i * C + j : row_line ? rbase + i : rowpin[i]; };
  auto cn = [&](int i, int j) { return col_cell ? cbase + i * C + j : col_line ? cbase + j : colpin[j]; };
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      const double gij = g[static_cast<size_t>(i) * C + j];
      if (gij > 0) net.edge(rn(i, j), cn(i, j), gij);
    }
  for (int i = 0; i < R && (row_cell || row_line); ++i) {
    net.edge(rowpin[i], rn(i, 0), 1.0 / (s.rdriver + s.rwire_row));
    if (row_cell)
      for (int j = 1; j < C; ++j) net.edge(rn(i, j - 1), rn(i, j), 1.0 / s.rwire_row);
  }
  for (int j = 0; j < C && (col_cell || col_line); ++j) {
    net.edge(colpin[j], cn(R - 1, j), 1.0 / (s.rsink + s.rwire_col));
    if (col_cell)
      for (int i = R - 2; i >= 0; --i) net.edge(cn(i + 1, j), cn(i, j), 1.0 / s.rwire_col);
  }
}

// ---- per-layer data -----------------------------------------------------------------------------------------

struct FastLayer {
  const LayerMapping* m = nullptr;
  const LayerInstance* li = nullptr;
  int C = 0, P = 0;
  Kernel kernel;
  Eigen::MatrixXd Ycx;                  // C x P: column currents per row-port volt
  Eigen::MatrixXd Yxc;                  // P x C: the transpose (contiguous columns)
  Eigen::MatrixXd Ycc;                  // C x C
  std::vector<Eigen::MatrixXd> Yxx;     // per row block (analog layers)
  std::vector<int> block_of_row;        // physical row -> row block
  std::vector<std::vector<double>> dac; // per physical DAC row: signed row voltage per code
  int first_dac = 0;                    // first physical row driven by a DAC
  long dac_max = 0;
  std::vector<double> ic_bias;          // C: column currents of the bias rows (analog layers)
  std::vector<double> ix_bias;          // P: row currents of the bias rows (analog layers)
};

}  // namespace

struct FastEvaluator::Impl {
  const HardwareInstance* hw = nullptr;
  FastOptions opt;
  bool noise = false;  // read noise on
  std::vector<FastLayer> layers;
  std::vector<std::vector<std::unique_ptr<SchurSolver>>> solvers;  // per layer, per row block

  // Per-image working state (one per thread). Per layer and neuron: the unknowns x, limiting states, and the
  // last Newton point (xn, the lagged port currents it saw, the LU factors of its Jacobian) for linear-response
  // updates; per layer the lagged currents into the array at the column ports (ic) and free row ports (ix).
  struct Work {
    std::vector<std::vector<double>> x, lim, ic, ix, vx, xn, lagn, lagu, sens, bound, lu;
    std::vector<std::vector<int>> piv;
    std::vector<std::vector<char>> state;  // 0 unsolved (guess), 1 Newton solution, 2 linear update
    std::vector<double> old;
    long sweeps = 0, newton = 0;
    bool failed = false;
  };

  void init_work(Work& w) const {
    const size_t L = layers.size();
    for (auto* v : {&w.x, &w.lim, &w.ic, &w.ix, &w.vx, &w.xn, &w.lagn, &w.lagu, &w.sens, &w.bound, &w.lu}) v->resize(L);
    w.piv.resize(L);
    w.state.resize(L);
    for (size_t l = 0; l < L; ++l) {
      const FastLayer& f = layers[l];
      const size_t C = static_cast<size_t>(f.C), n = static_cast<size_t>(f.kernel.L.n);
      w.x[l].assign(C * n, 0.0);
      w.xn[l].assign(C * n, 0.0);
      w.lim[l].assign(C * kLim, 0.0);
      w.lagn[l].assign(C * 3, 0.0);
      w.lagu[l].assign(C * 3, 0.0);
      w.sens[l].assign(C * 3 * n, 0.0);
      w.bound[l].assign(C * 3, 0.0);
      w.lu[l].assign(C * n * n, 0.0);
      w.piv[l].assign(C * n, 0);
      w.ic[l].assign(f.C, 0.0);
      w.ix[l].assign(f.P, 0.0);
      w.vx[l].assign(f.P, 0.0);
      w.state[l].assign(f.C, 0);
    }
    w.old.resize(kMaxLocal);
    w.failed = false;
  }

  // Row voltages of a DAC layer from its input codes (bias rows at full scale).
  void dac_voltages(const FastLayer& f, const long* codes, double* v) const {
    for (int p = f.first_dac; p < f.P; ++p) {
      const int i = p / 2;
      const long code = i < f.m->inputs ? codes[i] : f.dac_max;
      v[p] = f.dac[p - f.first_dac][code];
    }
  }

  // Resets layer l of an image: unknowns unsolved, free rows at 0 V, lagged currents of the fixed rows.
  // For DAC layers `ic0` (size C) holds Ycx * vx when given (the batched GEMM), else it is computed here.
  void start_layer(Work& w, int l, const double* ic0) const {
    const FastLayer& f = layers[l];
    std::fill(w.state[l].begin(), w.state[l].end(), 0);
    std::fill(w.x[l].begin(), w.x[l].end(), 0.0);
    if (f.m->dac_rows) {
      if (ic0) {
        std::copy(ic0, ic0 + f.C, w.ic[l].begin());
      } else {
        Eigen::Map<Eigen::VectorXd> ic(w.ic[l].data(), f.C);
        ic.noalias() = f.Ycx * Eigen::Map<const Eigen::VectorXd>(w.vx[l].data(), f.P);
      }
      std::fill(w.ix[l].begin(), w.ix[l].end(), 0.0);
    } else {
      w.ic[l] = f.ic_bias;
      w.ix[l] = f.ix_bias;
      for (int p = 0; p < f.first_dac; ++p) w.vx[l][p] = 0.0;
    }
  }

  // What neuron j of layer l sees of the arrays (l1: end of the coupled layer range).
  NeuronIn inputs(const Work& w, int l, int j, int l1, std::uint64_t sample) const {
    const FastLayer& f = layers[l];
    const Layout& Lo = f.kernel.L;
    const double* x = &w.x[l][static_cast<size_t>(j) * Lo.n];
    NeuronIn in;
    in.r = &f.li->res[static_cast<size_t>(j) * kNumPeripheryRes];
    in.vos = &f.li->vos[static_cast<size_t>(j) * kNumPeripheryOps];
    in.y_cc = f.Ycc(j, j);
    in.lag_c = w.ic[l][j] - f.Ycc(j, j) * x[Lo.c];
    if (noise) in.lag_c -= read_noise_current(*hw, l, j, sample);
    if (f.m->rectifier && l + 1 < l1) {
      const FastLayer& nx = layers[l + 1];
      const int p = 2 * j, b = nx.block_of_row[p], off = nx.m->row_blocks[b];
      const Eigen::MatrixXd& S = nx.Yxx[b];
      in.y_hh = S(p - off, p - off);
      in.y_hhn = S(p - off, p + 1 - off);
      in.y_hnh = S(p + 1 - off, p - off);
      in.y_hnhn = S(p + 1 - off, p + 1 - off);
      in.lag_h = w.ix[l + 1][p] - in.y_hh * x[Lo.h] - in.y_hhn * x[Lo.hn];
      in.lag_hn = w.ix[l + 1][p + 1] - in.y_hnh * x[Lo.h] - in.y_hnhn * x[Lo.hn];
    }
    return in;
  }

  // Passes the port-voltage changes of neuron j of layer l (x against w.old) into the lagged currents.
  void propagate(Work& w, int l, int j, int l1) const {
    const FastLayer& f = layers[l];
    const Layout& Lo = f.kernel.L;
    const double* x = &w.x[l][static_cast<size_t>(j) * Lo.n];
    const double dc = x[Lo.c] - w.old[Lo.c];
    if (dc != 0) {
      Eigen::Map<Eigen::VectorXd>(w.ic[l].data(), f.C) += f.Ycc.col(j) * dc;
      if (!f.m->dac_rows) Eigen::Map<Eigen::VectorXd>(w.ix[l].data(), f.P) += f.Yxc.col(j) * dc;
    }
    if (!(f.m->rectifier && l + 1 < l1)) return;
    const FastLayer& nx = layers[l + 1];
    const int p = 2 * j, b = nx.block_of_row[p], off = nx.m->row_blocks[b];
    const Eigen::MatrixXd& S = nx.Yxx[b];
    Eigen::Map<Eigen::VectorXd> ixb(w.ix[l + 1].data() + off, S.rows());
    Eigen::Map<Eigen::VectorXd> ic(w.ic[l + 1].data(), nx.C);
    const double dh = x[Lo.h] - w.old[Lo.h], dhn = x[Lo.hn] - w.old[Lo.hn];
    if (dh != 0) {
      ixb += S.col(p - off) * dh;
      ic += nx.Ycx.col(p) * dh;
    }
    if (dhn != 0) {
      ixb += S.col(p + 1 - off) * dhn;
      ic += nx.Ycx.col(p + 1) * dhn;
    }
    w.vx[l + 1][p] = x[Lo.h];
    w.vx[l + 1][p + 1] = x[Lo.hn];
  }

  // True if linear updates moved x so little from the Newton point xn that the linearisation error (second order
  // in the move) is far below the tolerance: no check needed.
  static bool tiny_linear(const Layout& Lo, const double* x, const double* xn) {
    for (int k = 0; k < Lo.n; ++k)
      if (std::fabs(x[k] - xn[k]) > kNoCheck * (std::fabs(xn[k]) + (Lo.is_current[k] ? 1e-9 : 1e-3))) return false;
    return true;
  }

  // Gauss-Seidel sweeps over layers [l0, l1) of one image until nothing moves. First every neuron gets its
  // ideal-circuit guess (so that each one then sees estimates of all the others), then Newton solves; a neuron
  // whose lagged currents changed only a little since its last Newton solve is updated by linear response
  // (its stored LU factors), and once nothing moves every such neuron is checked by a real Newton iteration.
  void sweep(Work& w, int l0, int l1, std::uint64_t sample) const {
    const FastOptions& o = opt;
    for (int l = l0; l < l1; ++l)
      for (int j = 0; j < layers[l].C; ++j) {
        const Kernel& K = layers[l].kernel;
        double* x = &w.x[l][static_cast<size_t>(j) * K.L.n];
        std::copy(x, x + K.L.n, w.old.begin());
        K.guess(inputs(w, l, j, l1, sample), x, &w.lim[l][static_cast<size_t>(j) * kLim]);
        propagate(w, l, j, l1);
      }
    bool verify = false;
    for (int sw = 1; sw <= o.max_sweeps; ++sw) {
      ++w.sweeps;
      double worst = 0;
      bool linear = false;
      int n_lin = 0, n_skip = 0, n_check = 0, n_newton = 0;
      for (int l = l0; l < l1; ++l) {
        const FastLayer& f = layers[l];
        const Kernel& K = f.kernel;
        const Layout& Lo = K.L;
        const int n = Lo.n;
        for (int j = 0; j < f.C; ++j) {
          const size_t jn = static_cast<size_t>(j) * n;
          double* x = &w.x[l][jn];
          double* xn = &w.xn[l][jn];
          double* lim = &w.lim[l][static_cast<size_t>(j) * kLim];
          double* lagn = &w.lagn[l][static_cast<size_t>(j) * 3];
          double* J = &w.lu[l][jn * n];
          int* piv = &w.piv[l][jn];
          char& state = w.state[l][j];
          const NeuronIn in = inputs(w, l, j, l1, sample);
          const double lag[3] = {in.lag_c, in.lag_h, in.lag_hn};
          double* lagu = &w.lagu[l][static_cast<size_t>(j) * 3];
          double* sens = &w.sens[l][static_cast<size_t>(j) * 3 * n];
          double* bound = &w.bound[l][static_cast<size_t>(j) * 3];
          std::copy(x, x + n, w.old.begin());
          if (verify && state == 2 && tiny_linear(Lo, x, xn)) state = 1;  // accurate as it is
          bool newton = state == 0 || (verify && state == 2);
          if (!newton) {
            // Skip when the currents moved so little since the last update that no unknown can move by more than a
            // twentieth of its tolerance; else linear response x = xn - sum_i (lag_i - lagn_i) dx/dlag_i.
            const double du = std::fabs(lag[0] - lagu[0]) * bound[0] + std::fabs(lag[1] - lagu[1]) * bound[1] +
                              std::fabs(lag[2] - lagu[2]) * bound[2];
            if (du <= 0.05) {
              ++n_skip;
              continue;
            }
            ++n_lin;
            const double d[3] = {lag[0] - lagn[0], lag[1] - lagn[1], lag[2] - lagn[2]};
            double big = 0;
            for (int k = 0; k < n; ++k) {
              const double r = -(d[0] * sens[k] + d[1] * sens[n + k] + d[2] * sens[2 * n + k]);
              x[k] = xn[k] + r;
              big = std::max(big, std::fabs(r) / (std::fabs(xn[k]) + (Lo.is_current[k] ? 1e-9 : 1e-3)));
            }
            std::copy(lag, lag + 3, lagu);
            if (big <= kLinearMax) {
              state = 2;
              linear = true;
            } else {
              newton = true;  // a larger change: Newton from the linear prediction
            }
          }
          if (newton && verify && state == 2) ++n_check;
          if (newton && verify && state == 2 && K.check(in, x, lim, J, piv)) {
            newton = false;  // the linear updates landed on the solution
            state = 1;
            std::copy(x, x + n, xn);
            std::copy(lag, lag + 3, lagn);
            std::copy(lag, lag + 3, lagu);
          }
          if (newton) {
            const bool warm = state != 0;
            // Outside verification a looser stop (1e-8 relative) suffices: the Newton step just taken makes the
            // error quadratically smaller, and the verifying check enforces the full tolerance.
            ++n_newton;
            int it = K.solve(in, x, lim, warm, 0.0, 0.0, J, piv, verify ? 1.0 : kLooseTol);
            if (it < 0) it = K.robust_solve(in, x, lim, warm ? xn : w.old.data(), warm, it, J, piv);
            if (it < 0) {
              w.failed = true;
              if (kDebug)
                fmt::print(stderr, "newton fail sweep {} layer {} neuron {} warm {} lag_c {:.6g} lag_h {:.6g} x {}\n",
                           sw, l, j, warm, in.lag_c, in.lag_h, fmt::join(x, x + n, " "));
            }
            w.newton += std::abs(it);
            if (state == 0) worst = std::max(worst, 2.0);
            state = 1;
            std::copy(x, x + n, xn);
            std::copy(lag, lag + 3, lagn);
            std::copy(lag, lag + 3, lagu);
            // Sensitivities dx/dlag at this solution (the rhs of a port moves by -lag) and their bounds in units
            // of the tolerance.
            const int ports[3] = {Lo.c, Lo.h, Lo.hn};
            const int np = Lo.h >= 0 ? 3 : 1;
            std::fill(sens, sens + 3 * n, 0.0);
            for (int i = 0; i < np; ++i) sens[i * n + ports[i]] = 1.0;
            K.apply_multi(J, piv, sens, np);
            double itol[kMaxLocal];
            for (int k = 0; k < n; ++k) itol[k] = 1.0 / K.tol(k, x[k], x[k]);
            for (int i = 0; i < 3; ++i) {
              bound[i] = 0;
              for (int k = 0; k < n && i < np; ++k) bound[i] = std::max(bound[i], std::fabs(sens[i * n + k]) * itol[k]);
            }
          }
          for (int k = 0; k < n; ++k) {
            const double dx = std::fabs(x[k] - w.old[k]), tk = K.tol(k, x[k], w.old[k]);
            if (dx <= tk * std::max(worst, 1e-3)) continue;
            const double d = dx / tk;
            if (d > worst && kTrace)
              fmt::print(stderr, "  sweep {} l {} j {} k {} old {:.12g} new {:.12g}\n", sw, l, j, k, w.old[k], x[k]);
            worst = std::max(worst, d);
          }
          propagate(w, l, j, l1);
        }
      }
      if (kTrace)
        fmt::print(stderr, "sweep {} worst {:.3g} linear {} verify {} newton so far {}: {} linear, {} unchanged, {} checks, {} "
                   "Newton solves\n", sw, worst, linear, verify, w.newton, n_lin, n_skip, n_check, n_newton);
      // Done when nothing moved and every neuron is at a Newton solution of the current currents (or was checked by
      // one in this sweep; linear updates made during a verifying sweep are within the tolerance).
      bool unverified = false;
      for (int l = l0; l < l1 && !unverified; ++l)
        for (char st : w.state[l]) unverified = unverified || st == 2;
      if (worst <= 1.0) {
        if (!unverified || verify) return;
        verify = true;
      } else {
        // The sweeps contract by ~1e3: when this one moved less than that, the next is expected to be the last and
        // verifies right away.
        verify = sw > 1 && worst <= 1e3;
      }
    }
    w.failed = true;
  }

  // The last layer's ADC codes of an image and its class; hybrid layers pass codes on via `codes`.
  int classify(const Work& w, long* out_codes) const {
    const int l = static_cast<int>(layers.size()) - 1;
    const FastLayer& f = layers[l];
    int best = 0;
    long best_code = -1;
    for (int j = 0; j < f.C; ++j) {
      const long k = adc_code(*hw, l, j, w.x[l][static_cast<size_t>(j) * f.kernel.L.n + f.kernel.L.y]);
      if (out_codes) out_codes[j] = k;
      if (k > best_code) {
        best_code = k;
        best = j;
      }
    }
    return best;
  }

  // Requantized DAC codes for layer l+1 from the ADC codes of hybrid layer l.
  void next_codes(const Work& w, int l, std::vector<long>& codes) const {
    const FastLayer& f = layers[l];
    const FastLayer& nf = layers[l + 1];
    codes.resize(f.C);
    const double kmax = static_cast<double>(adc_max_code(f.m->adc_spec));
    for (int j = 0; j < f.C; ++j) {
      const long k = adc_code(*hw, l, j, w.x[l][static_cast<size_t>(j) * f.kernel.L.n + f.kernel.L.y]);
      codes[j] = input_code(*nf.m, std::max(0.0, static_cast<double>(k)) / kmax);  // digital ReLU, requantized
    }
  }

  // Full evaluation of one image whose first-layer column currents are ic0 (Ycx * vx of layer 0).
  void run_image(Work& w, const std::vector<long>& codes0, const double* ic0, std::uint64_t sample,
                 LayerCodes* all_codes) const {
    const int L = static_cast<int>(layers.size());
    w.failed = false;
    dac_voltages(layers[0], codes0.data(), w.vx[0].data());
    if (all_codes) {
      all_codes->assign(L, {});
      (*all_codes)[0] = codes0;
    }
    if (hw->map->cfg.mode == MappingMode::Analog) {
      for (int l = 0; l < L; ++l) start_layer(w, l, l == 0 ? ic0 : nullptr);
      sweep(w, 0, L, sample);
      return;
    }
    std::vector<long> codes;
    for (int l = 0; l < L; ++l) {
      if (l > 0) {
        next_codes(w, l - 1, codes);
        dac_voltages(layers[l], codes.data(), w.vx[l].data());
        if (all_codes) (*all_codes)[l] = codes;
      }
      start_layer(w, l, l == 0 ? ic0 : nullptr);
      sweep(w, l, l + 1, sample);
    }
  }
};

FastEvaluator::FastEvaluator() : impl_(std::make_unique<Impl>()) {}
FastEvaluator::~FastEvaluator() = default;

Status FastEvaluator::prepare(const HardwareInstance& hw, const FastOptions& opt) {
  const auto t0 = Clock::now();
  Impl& I = *impl_;
  I.hw = &hw;
  I.opt = opt;
  I.noise = hw.map->cfg.read_noise > 0;
  const MappedNetwork& map = *hw.map;
  const HardwareConfig& cfg = map.cfg;
  const int L = static_cast<int>(map.layers.size());
  I.layers.assign(L, FastLayer{});
  if (static_cast<int>(I.solvers.size()) != L) {
    I.solvers.clear();
    I.solvers.resize(L);
  }
  const OpampDc od = opamp_dc(cfg);
  const DiodeDc dd = diode_dc(cfg);

  // Every (layer, row block) network, then all of them factorized in parallel.
  struct Job {
    int l, b;
    PortNetwork net;
    std::vector<int> port_row;  // per port: physical row (rows) or -1 - column (columns)
    Eigen::MatrixXd Y;
    Status st;
  };
  std::vector<Job> jobs;
  for (int l = 0; l < L; ++l) {
    const LayerMapping& m = map.layers[l];
    const LayerInstance& li = hw.layers[l];
    FastLayer& f = I.layers[l];
    f.m = &m;
    f.li = &li;
    f.C = m.outputs;
    f.P = m.physical_rows();
    f.first_dac = m.dac_rows ? 0 : f.P - 2;
    f.kernel.rect = m.rectifier;
    f.kernel.op = od;
    f.kernel.di = dd;
    f.kernel.diode_gs = cfg.diode_rs > 0 ? 1.0 / cfg.diode_rs : 0.0;
    f.kernel.adc_g = m.adc && std::isfinite(m.adc_spec.rin) ? 1.0 / m.adc_spec.rin : 0.0;
    f.kernel.L = make_layout(m.rectifier, od.level, cfg.diode_rs > 0);
    f.kernel.reltol = opt.reltol;
    f.kernel.vntol = opt.vntol;
    f.kernel.max_newton = opt.max_newton;
    if (f.kernel.L.n > kMaxLocal) return Status::fail(ErrorKind::Other, "periphery has too many unknowns");
    const int nrb = static_cast<int>(m.row_blocks.size()) - 1, ncb = static_cast<int>(m.col_blocks.size()) - 1;
    f.block_of_row.resize(f.P);
    for (int b = 0; b < nrb; ++b)
      for (int p = m.row_blocks[b]; p < m.row_blocks[b + 1]; ++p) f.block_of_row[p] = b;
    if (static_cast<int>(I.solvers[l].size()) != nrb) {
      I.solvers[l].clear();
      for (int b = 0; b < nrb; ++b) I.solvers[l].push_back(std::make_unique<SchurSolver>());
    }
    const bool dac_rout = cfg.dac_rout > 0;
    for (int b = 0; b < nrb; ++b) {
      Job job;
      job.l = l;
      job.b = b;
      const int r0 = m.row_blocks[b], r1 = m.row_blocks[b + 1], nr = r1 - r0;
      // Internal node count first: DAC row pins (with rout) and the tiles' own nodes.
      int n_int = 0;
      std::vector<int> rowpin_int(nr, -1);
      for (int p = r0; p < r1; ++p)
        if (dac_rout && p >= f.first_dac) rowpin_int[p - r0] = n_int++;
      int tile_nodes = 0;
      for (int cb = 0; cb < ncb; ++cb) {
        const CrossbarSpec& s = li.tiles[static_cast<size_t>(b) * ncb + cb].spec;
        const bool rc = s.rwire_row > 0, rl = !rc && s.rdriver > 0, cc = s.rwire_col > 0, cl = !cc && s.rsink > 0;
        tile_nodes += (rc ? s.rows * s.cols : rl ? s.rows : 0) + (cc ? s.rows * s.cols : cl ? s.cols : 0);
      }
      job.net.n_int = n_int + tile_nodes;
      job.net.n_port = nr + f.C;
      const int port0 = job.net.n_int;
      std::vector<int> rowpin(nr);
      for (int i = 0; i < nr; ++i) {
        job.port_row.push_back(r0 + i);
        if (rowpin_int[i] >= 0) {
          rowpin[i] = rowpin_int[i];
          job.net.edge(rowpin_int[i], port0 + i, 1.0 / cfg.dac_rout);  // DAC source behind rout
        } else {
          rowpin[i] = port0 + i;
        }
      }
      for (int j = 0; j < f.C; ++j) job.port_row.push_back(-1 - j);
      int next = n_int;
      for (int cb = 0; cb < ncb; ++cb) {
        const TileInstance& t = li.tiles[static_cast<size_t>(b) * ncb + cb];
        std::vector<int> rp(rowpin.begin(), rowpin.end()), cp(t.spec.cols);
        for (int j = 0; j < t.spec.cols; ++j) cp[j] = port0 + nr + t.col0 + j;
        add_tile(job.net, t.spec, t.g, rp, cp, next);
      }
      jobs.push_back(std::move(job));
    }
  }
  if (kTrace) fmt::print(stderr, "prepare: networks built in {:.3f} s\n", since(t0));
  {
    // CHOLMOD 3 opens its own OpenMP regions with a fixed team of 4 (CHOLMOD_OMP_NUM_THREADS), which on a busy
    // 2-core machine spins for most of the factorization time: blocks run in parallel here instead, and CHOLMOD's
    // regions are kept inactive (nested beyond the active levels allowed).
    const int saved_levels = omp_get_max_active_levels();
    omp_set_max_active_levels(omp_get_max_threads() > 1 ? 1 : 0);
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < static_cast<int>(jobs.size()); ++k)
      jobs[k].st = I.solvers[jobs[k].l][jobs[k].b]->compute(jobs[k].net, jobs[k].Y);
    omp_set_max_active_levels(saved_levels);
  }
  for (auto& j : jobs)
    if (!j.st) return j.st;
  if (kTrace) fmt::print(stderr, "prepare: factorized at {:.3f} s\n", since(t0));

  for (int l = 0; l < L; ++l) {
    FastLayer& f = I.layers[l];
    const LayerMapping& m = map.layers[l];
    const LayerInstance& li = hw.layers[l];
    f.Ycx = Eigen::MatrixXd::Zero(f.C, f.P);
    f.Ycc = Eigen::MatrixXd::Zero(f.C, f.C);
    f.Yxx.assign(m.row_blocks.size() - 1, Eigen::MatrixXd());
    for (auto& j : jobs) {
      if (j.l != l) continue;
      const int r0 = m.row_blocks[j.b], nr = m.row_blocks[j.b + 1] - r0;
      f.Ycx.middleCols(r0, nr) += j.Y.block(nr, 0, f.C, nr);
      f.Ycc += j.Y.block(nr, nr, f.C, f.C);
      f.Yxx[j.b] = j.Y.block(0, 0, nr, nr);
    }
    f.Yxc = f.Ycx.transpose();
    // DAC tables: signed row voltage per code (odd rows are driven by the DAC with swapped pins).
    f.dac.clear();
    for (int p = f.first_dac; p < f.P; ++p) {
      const DacSpec& d = li.dac_of_row(p, m.inputs);
      const long nc = dac_max_code(d) + 1;
      std::vector<double> tab(nc);
      const double sign = p % 2 == 0 ? 1.0 : -1.0;
      const bool only_full = p / 2 >= m.inputs;  // bias rows use the full-scale code only
      for (long k = 0; k < nc; ++k)
        tab[k] = (only_full && k != nc - 1) ? 0.0 : sign * (dac_output(d, k) + dac_noise(d));
      f.dac.push_back(std::move(tab));
      f.dac_max = nc - 1;
    }
    if (!m.dac_rows) {
      f.ic_bias.assign(f.C, 0.0);
      f.ix_bias.assign(f.P, 0.0);
      for (int p = f.first_dac; p < f.P; ++p) {
        const double v = f.dac[p - f.first_dac][f.dac_max];
        for (int j = 0; j < f.C; ++j) f.ic_bias[j] += f.Ycx(j, p) * v;
        const int b = f.block_of_row[p], off = m.row_blocks[b];
        for (int q = off; q < m.row_blocks[b + 1]; ++q) f.ix_bias[q] += f.Yxx[b](q - off, p - off) * v;
      }
    }
  }
  stats_.seconds_prepare += since(t0);
  return {};
}

Status FastEvaluator::classify(const MatrixRf& x, int first, int count, std::uint64_t sample0,
                               std::vector<int>& classes, std::vector<long>* codes) {
  const auto t0 = Clock::now();
  Impl& I = *impl_;
  if (!I.hw) return Status::fail(ErrorKind::Other, "FastEvaluator::classify before prepare");
  const FastLayer& f0 = I.layers[0];
  const int nout = I.layers.back().C;
  classes.assign(count, 0);
  if (codes) codes->assign(static_cast<size_t>(count) * nout, 0);
  const int chunk = std::max(1, I.opt.chunk);
  const int nchunks = (count + chunk - 1) / chunk;
  long sweeps = 0, newton = 0, failures = 0;
#pragma omp parallel reduction(+ : sweeps, newton, failures)
  {
    Impl::Work w;
    I.init_work(w);
    Eigen::MatrixXd V, IC;
    std::vector<std::vector<long>> cc;
#pragma omp for schedule(dynamic, 1)
    for (int ch = 0; ch < nchunks; ++ch) {
      const int a = ch * chunk, nb = std::min(chunk, count - a);
      V.resize(f0.P, nb);
      cc.assign(nb, {});
      for (int k = 0; k < nb; ++k) {
        cc[k] = input_codes(*f0.m, x.row(first + a + k).data());
        I.dac_voltages(f0, cc[k].data(), V.col(k).data());
      }
      IC.noalias() = f0.Ycx * V;
      for (int k = 0; k < nb; ++k) {
        const int idx = a + k;
        I.run_image(w, cc[k], IC.col(k).data(), sample0 + static_cast<std::uint64_t>(first + idx), nullptr);
        classes[idx] = I.classify(w, codes ? codes->data() + static_cast<size_t>(idx) * nout : nullptr);
        failures += w.failed;
      }
    }
    sweeps += w.sweeps;
    newton += w.newton;
  }
  stats_.images += count;
  stats_.sweeps += sweeps;
  stats_.newton += newton;
  stats_.failures += failures;
  stats_.seconds_eval += since(t0);
  return {};
}

Status FastEvaluator::evaluate_one(const float* xin, std::uint64_t sample, std::vector<LayerVoltages>& out,
                                   LayerCodes* dac_codes) {
  Impl& I = *impl_;
  if (!I.hw) return Status::fail(ErrorKind::Other, "FastEvaluator::evaluate_one before prepare");
  Impl::Work w;
  I.init_work(w);
  const FastLayer& f0 = I.layers[0];
  const std::vector<long> codes = input_codes(*f0.m, xin);
  I.dac_voltages(f0, codes.data(), w.vx[0].data());
  Eigen::VectorXd ic = f0.Ycx * Eigen::Map<const Eigen::VectorXd>(w.vx[0].data(), f0.P);
  I.run_image(w, codes, ic.data(), sample, dac_codes);
  stats_.images += 1;
  stats_.sweeps += w.sweeps;
  stats_.newton += w.newton;
  stats_.failures += w.failed;
  out.assign(I.layers.size(), LayerVoltages{});
  for (size_t l = 0; l < I.layers.size(); ++l) {
    const FastLayer& f = I.layers[l];
    const Layout& Lo = f.kernel.L;
    LayerVoltages& v = out[l];
    for (int j = 0; j < f.C; ++j) {
      const double* x = &w.x[l][static_cast<size_t>(j) * Lo.n];
      v.c.push_back(x[Lo.c]);
      v.y.push_back(x[Lo.y]);
      const double* vos = &f.li->vos[static_cast<size_t>(j) * kNumPeripheryOps];
      v.p.push_back(f.kernel.pole_of(x[Lo.c], vos[kOpTia]));
      if (f.m->rectifier) {
        v.h.push_back(x[Lo.h]);
        v.hn.push_back(x[Lo.hn]);
        v.s.push_back(x[Lo.s]);
        v.a.push_back(x[Lo.a]);
        v.t.push_back(x[Lo.t]);
        v.p.push_back(f.kernel.pole_of(x[Lo.s], vos[kOpRect]));
        v.p.push_back(f.kernel.pole_of(x[Lo.t], vos[kOpInv]));
        if (Lo.d1i >= 0) {
          v.d1i.push_back(x[Lo.d1i]);
          v.d2i.push_back(x[Lo.d2i]);
        }
      } else {
        v.p.push_back(std::nan(""));
        v.p.push_back(std::nan(""));
      }
    }
  }
  if (w.failed) return Status::numerical("fast evaluation did not converge for this sample");
  return {};
}

int fast_eval_eigen_alignment() { return 1000 * EIGEN_DEFAULT_ALIGN_BYTES + EIGEN_MAX_STATIC_ALIGN_BYTES; }

}  // namespace anasim::nn
