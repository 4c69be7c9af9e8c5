// The per-neuron periphery kernel of the fast evaluator (nn/fast_eval.hpp): the local unknowns of one neuron's
// periphery at DC (TIA; rectifier layers also the precision rectifier with its two diodes and the inverter), their
// companion stamps with the array's self-admittance at the ports and the lagged currents of the other ports
// (NeuronIn), a dense local Newton with step limiting and fallbacks, and the stage-by-stage initial guess.
// Contract: Kernel::solve returns a point where every local KCL and branch equation holds to reltol/vntol for the
// given NeuronIn, the same equations the MNA devices stamp (devices/opamp_model.hpp, devices/diode_model.hpp) with
// the level-2 pole node eliminated exactly; the LU factors it leaves serve the sweeps' linear-response updates.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include "devices/diode_model.hpp"
#include "devices/opamp_model.hpp"
#include "nn/hardware.hpp"
#include "nn/lanes.hpp"
#include "nn/small_lu.hpp"

namespace anasim::nn {
struct FastOptions;
}

namespace anasim::nn::fast {

using opamp_model::limit_tanh_arg;
using anasim::kTanhLin;
using anasim::pnjlim_acts;

constexpr int kMaxLocal = 16;  // most local unknowns of one neuron
constexpr int kLim = 8;  // limiting states per neuron: op-amp k tanh slots 2k, 2k+1; diodes 6, 7
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
// The same, lane-wise: the series on every lane, std::tanh on the lanes outside its range.
inline Vd tanh_fast(Vd x) {
  const Vd x2 = x * x;
  Vd r = x + x * x2 * (-1.0 / 3 + x2 * (2.0 / 15 + x2 * (-17.0 / 315 + x2 * (62.0 / 2835 + x2 * (-1382.0 / 155925)))));
  const Vm big = vabs(x) >= 0.03125;
  return any(big) ? select(big, vtanh(x), r) : r;
}

// Newton step limiting of a tanh argument (limit_tanh_arg) unless `nolimit`; `limited` tells where it acted.
inline double limit_arg(double arg, double xold, bool nolimit, bool& limited) {
  limited = false;
  return nolimit ? arg : limit_tanh_arg(arg, xold, limited);
}
inline Vd limit_arg(Vd arg, Vd xold, Vm nolimit, Vm& limited) {
  limited = Vm{};
  const Vm may = ~nolimit & (vabs(arg) > kTanhLin);
  if (!any(may)) return arg;
  for (int b = 0; b < kLanes; ++b) {
    if (!may[b]) continue;
    bool l = false;
    arg[b] = limit_tanh_arg(arg[b], xold[b], l);
    limited[b] = -static_cast<long>(l);
  }
  return arg;
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

inline Layout make_layout(bool rect, int level, bool diode_rs) {
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
// T = double for one image, Vd for a block of images (the admittances and the periphery are the same in every
// image of a trial; the currents are per image).
template <class T>
struct NeuronInT {
  double y_cc = 0;                      // [S] self-admittance of the column port
  T lag_c{};                            // [A] current leaving c into the array from the other ports (and noise)
  double y_hh = 0, y_hhn = 0, y_hnh = 0, y_hnhn = 0;  // next layer's row-pair self-admittance (rectifier)
  T lag_h{}, lag_hn{};
  // Transient step (0 at DC): companion conductance ag0 * kCpole of the level-2 pole capacitors [S], and per op-amp
  // (kOpTia, kOpRect, kOpInv) the capacitor's history current [A], added to the input stage's (see
  // opamp_model::pole_voltage).
  double gpole = 0;
  T ipole[3] = {};
  // A block of images at different time steps (the network transient's lanes): `lanes` set, and per lane the
  // part ag0 C1 of each self-admittance above [S] and the pole companion conductance [S] (which then replaces
  // gpole). Unset and unused otherwise.
  bool lanes = false;
  T dy_cc, dy_hh, dy_hhn, dy_hnh, dy_hnhn, gpole_lanes;
  const double* r = nullptr;            // kNumPeripheryRes resistances [ohm]
  const double* vos = nullptr;          // kNumPeripheryOps offsets [V]
};
using NeuronIn = NeuronInT<double>;

// DC coefficients of the op-amps (fixed rails; the non-inverting input is grounded in every periphery stage).
using OpampDc = opamp_model::DcCoeffs;

// The periphery of one layer's neurons: coefficients (make_kernel) and the per-neuron algorithms.
struct Kernel {
  Layout L;
  bool rect = false;
  OpampDc op;
  diode_model::Coeffs di;  // rectifier diodes (di.grs = 0: no series resistance, no internal node)
  double gmin = 0;       // [S] junction gmin (Options::gmin of build_netlist's netlist)
  double adc_g = 0;      // [S] ADC input conductance on y
  double reltol = 1e-12, vntol = 1e-15;
  // [A] absolute part of the residual test (kcl_ok, times the solve's tol_scale), as SPICE's abstol. The voltage
  // tests alone accept an op-amp input a few uV off: against an open-loop gain of 1e5 over tens of ohms that is
  // mA of output current that no node receives (seen as power spikes with level-1 op-amps in the transient).
  double abstol = 1e-15;
  int max_newton = 100;

  // Stamps the companion model of every element at x into J (n x n, row-major) and rhs. T = double (one image)
  // or Vd (a block of images: every lane's own stamp; nolimit and noncon lane-wise).
  template <int N, class T>
  void stamp(const NeuronInT<T>& in, const T* x, T* J, T* rhs, T* lim, Mask<T> nolimit, Mask<T>& noncon) const {
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
    if (in.lanes) J[L.c * n + L.c] += in.dy_cc;
    const T* gpl = in.lanes ? &in.gpole_lanes : nullptr;
    rhs[L.c] -= in.lag_c;
    opamp<N>(L.c, L.y, in.gpole, gpl, in.ipole[kOpTia], L.br[kOpTia], in.vos[kOpTia], x, J, rhs, lim + 0, nolimit,
             noncon);
    if (adc_g > 0) J[L.y * n + L.y] += adc_g;
    if (!rect) return;
    g2(L.y, L.s, 1.0 / in.r[kResR1]);
    opamp<N>(L.s, L.a, in.gpole, gpl, in.ipole[kOpRect], L.br[kOpRect], in.vos[kOpRect], x, J, rhs, lim + 2, nolimit,
             noncon);
    diode<N>(L.s, L.d1i, L.a, x, J, rhs, lim[6], nolimit, noncon);
    diode<N>(L.a, L.d2i, L.h, x, J, rhs, lim[7], nolimit, noncon);
    g2(L.h, L.s, 1.0 / in.r[kResR2]);
    g2(L.h, -1, 1.0 / in.r[kResRl]);
    g2(L.h, L.t, 1.0 / in.r[kResInv1]);
    opamp<N>(L.t, L.hn, in.gpole, gpl, in.ipole[kOpInv], L.br[kOpInv], in.vos[kOpInv], x, J, rhs, lim + 4, nolimit,
             noncon);
    g2(L.t, L.hn, 1.0 / in.r[kResInv2]);
    J[L.h * n + L.h] += in.y_hh;
    J[L.h * n + L.hn] += in.y_hhn;
    J[L.hn * n + L.h] += in.y_hnh;
    J[L.hn * n + L.hn] += in.y_hnhn;
    if (in.lanes) {
      J[L.h * n + L.h] += in.dy_hh;
      J[L.h * n + L.hn] += in.dy_hhn;
      J[L.hn * n + L.h] += in.dy_hnh;
      J[L.hn * n + L.hn] += in.dy_hnhn;
    }
    rhs[L.h] -= in.lag_h;
    rhs[L.hn] -= in.lag_hn;
  }

  // Op-amp with grounded non-inverting input, inverting input inn, output out; level 2: gp, hp the pole
  // capacitor's companion conductance and history current of a transient step (0 at DC).
  template <int N, class T>
  // gpl: the lanes' own pole companion conductances (lanes at different time steps), else null and gp for all.
  void opamp(int inn, int out, double gp, const T* gpl, T hp, int br, double vos, const T* x, T* J, T* rhs, T* xold,
             Mask<T> nolimit, Mask<T>& noncon) const {
    const int n = N > 0 ? N : L.n;
    if (op.level == 0) {  // nullor: the branch current leaves `out`; branch equation v(inp) - v(inn) = 0
      J[out * n + br] += 1.0;
      J[br * n + inn] -= 1.0;
      return;
    }
    if (std::isfinite(op.rin)) J[inn * n + inn] += 1.0 / op.rin;
    auto th = [&](T arg, int slot, T& ds) {
      Mask<T> limited;
      const T xl = limit_arg(arg, xold[slot], nolimit, limited);
      const T t = tanh_fast(xl), s = 1 - t * t;
      if (any(limited)) mark(noncon, limited & (vabs(tanh_fast(arg) - t) > 1e-12));
      xold[slot] = xl;
      ds = s;
      return t + s * (arg - xl);
    };
    // Linearised current i0 + sum g_k (x_k - x0_k) leaving node `node`.
    auto lin = [&](int node, T i0, int k1, T g1, int k2, T g2) {
      J[node * n + k1] += g1;
      J[node * n + k2] += g2;
      rhs[node] -= i0 - g1 * x[k1] - g2 * x[k2];
    };
    const T vinn = x[inn], vout = x[out];
    if (op.level == 1) {
      const T vd = (0.0 - vinn) + vos;
      T ds;
      const T tv = th(op.a0 * vd / op.vhalf, 0, ds);
      const T vt = op.vmid + op.vhalf * tv;
      const T io = (vt - vout) / op.rout;  // into `out`
      const T dio_dinn = -op.a0 * ds / op.rout;
      const T dio_dout = T{} + -1.0 / op.rout;
      lin(out, -io, inn, -dio_dinn, out, -dio_dout);
      return;
    }
    // Level 2 at DC: the pole node p carries only the pole current (input stage - leak - rail clamp = 0), so it is
    // a function of the input alone and is eliminated here (solved exactly, see pole_voltage); then the output
    // current (with its limit), the bias current and the common-mode term.
    T vd = (0.0 - vinn) + vos;
    double dvd = -1.0;
    if (op.kcm != 0) {
      vd = vd + op.kcm * (0.5 * (0.0 + vinn) - op.vmid);
      dvd += 0.5 * op.kcm;
    }
    T ds;
    const T stage = op.imax * th(vd / op.vsr, 0, ds);
    const T dstage = op.imax * ds * dvd / op.vsr;
    T dp_dstage;
    const T vp = gpl ? pole_v_lanes(stage + hp, *gpl, dp_dstage) : pole_v(stage + hp, gp, dp_dstage);
    rhs[inn] -= op.ib;
    T io, dp, dout;
    if (!std::isfinite(op.ilim)) {
      io = (vp - vout) / op.rout;
      dp = T{} + 1.0 / op.rout;
      dout = -dp;
    } else {
      T ds2;
      io = op.ilim * th((vp - vout) / (op.rout * op.ilim), 1, ds2);
      dp = ds2 / op.rout;
      dout = -dp;
    }
    lin(out, -io, inn, -dp * dp_dstage * dstage, out, -dout);
  }

  // Level 2: opamp_model::pole_voltage for this op-amp (lane-wise for a block).
  double pole_v(double stage, double gp, double& dp) const { return opamp_model::pole_voltage(op, stage, gp, dp); }
  // Lanes with their own pole companion conductance gpv (lanes at different time steps; 0 at DC).
  double pole_v_lanes(double stage, double gp, double& dp) const { return pole_v(stage, gp, dp); }
  Vd pole_v_lanes(Vd stage, Vd gpv, Vd& dp) const {
    Vd p = opamp_model::pole_explicit_lanes(op, stage, gpv, dp);
    const Vm near = ~opamp_model::clamp_off(op, p);
    if (any(near))
      for (int b = 0; b < kLanes; ++b) {
        if (!near[b]) continue;
        double d;
        p[b] = opamp_model::pole_voltage(op, stage[b], gpv[b], d);
        dp[b] = d;
      }
    return p;
  }
  Vd pole_v(Vd stage, double gp, Vd& dp) const {
    double d0;
    Vd p = opamp_model::pole_explicit(op, stage, gp, d0);
    dp = splat(d0);
    const Vm near = ~opamp_model::clamp_off(op, p);
    if (any(near))
      for (int b = 0; b < kLanes; ++b) {
        if (!near[b]) continue;
        double d;
        p[b] = opamp_model::pole_voltage(op, stage[b], gp, d);
        dp[b] = d;
      }
    return p;
  }

  // Level 2: the pole-node voltage of an op-amp whose inverting input is at vinn (NaN at other levels): at DC, or
  // in a transient step with the pole capacitor's companion conductance gp [S] and history current hp [A].
  // T = double, or Vd for a block of images (gp and hp per lane).
  template <class T>
  T pole_of(T vinn, double vos, T gp = T{}, T hp = T{}) const {
    if (op.level != 2) return T{} + std::nan("");
    T vd = (0.0 - vinn) + vos;
    if (op.kcm != 0) vd = vd + op.kcm * (0.5 * (0.0 + vinn) - op.vmid);
    T dp;
    return pole_v_lanes(op.imax * tanh_fast(vd / op.vsr) + hp, gp, dp);
  }
  // Current the op-amp drives into its output [A] with the inverting input at vinn, the output at vout and (level 2)
  // the pole node at p [V] (levels 1 and 2; at level 0 it is the branch unknown). T as pole_of.
  template <class T>
  T output_current(T vinn, T vout, T p, double vos) const {
    if (op.level == 1) return (op.vmid + op.vhalf * tanh_fast(op.a0 * ((0.0 - vinn) + vos) / op.vhalf) - vout) / op.rout;
    if (!std::isfinite(op.ilim)) return (p - vout) / op.rout;
    return op.ilim * tanh_fast((p - vout) / (op.rout * op.ilim));
  }

  // Level 2: the pole-node voltage at DC for input-stage current `stage` [A], and dp/dstage.
  double pole_voltage(double stage, double& dp_dstage) const {
    return opamp_model::pole_voltage_dc(op, stage, dp_dstage);
  }

  // Diode from anode a (through the series-resistance node ai when present) to cathode k.
  template <int N, class T>
  void diode(int a, int ai, int k, const T* x, T* J, T* rhs, T& vold, Mask<T> nolimit, Mask<T>& noncon) const {
    const int n = N > 0 ? N : L.n;
    const int j = ai >= 0 ? ai : a;
    if (ai >= 0) {
      J[a * n + a] += di.grs;
      J[ai * n + ai] += di.grs;
      J[a * n + ai] -= di.grs;
      J[ai * n + a] -= di.grs;
    }
    T vd = x[j] - x[k];
    T gd, cd;
    diode_at(vd, vold, nolimit, noncon, gd, cd);
    vold = vd;
    const T ieq = cd - gd * vd;
    J[j * n + j] += gd;
    J[k * n + k] += gd;
    J[j * n + k] -= gd;
    J[k * n + j] -= gd;
    rhs[j] -= ieq;
    rhs[k] += ieq;
  }


  // The diode's limiting (vd against vold unless nolimit; noncon where it acted), then its conductance gd [S] and
  // current cd [A] at the limited vd (lane-wise for a block).
  void diode_at(double& vd, double vold, bool nolimit, bool& noncon, double& gd, double& cd) const {
    bool limited = false;
    if (!nolimit) vd = diode_model::limit(di, vd, vold, limited);
    if (limited) noncon = true;
    const diode_model::Current d = diode_model::current(di, vd, gmin);
    gd = d.gd;
    cd = d.cd;
  }
  void diode_at(Vd& vd, Vd vold, Vm nolimit, Vm& noncon, Vd& gd, Vd& cd) const {
    // Lanes where limiting does not act (the rectifier's usual case): the junction lane-wise; lanes where it acts
    // (and every lane of a model with breakdown) through the one-image code. The choice is each lane's own, so a
    // lane's result does not depend on the images beside it.
    Vm scalar = Vm{} - 1;
    if (!di.bv_given) {
      scalar = ~nolimit & pnjlim_acts(vd, vold, di.vte, di.vcrit);
      junction(vd, cd, gd);
      if (!any(scalar)) return;
    }
    for (int b = 0; b < kLanes; ++b) {
      if (!scalar[b]) continue;
      double v = vd[b], g, c;
      bool nc = false;
      diode_at(v, vold[b], nolimit[b] != 0, nc, g, c);
      vd[b] = v;
      gd[b] = g;
      cd[b] = c;
      if (nc) noncon[b] = -1;
    }
  }

  double tol(int k, double a, double b) const {
    return reltol * std::max(std::fabs(a), std::fabs(b)) + (L.is_current[k] ? 1e-18 : vntol);
  }
  // The residual test at x of the system J x = rhs stamped there (J row-major n x n): every row's residual
  // |J x - rhs| [A; V for branch rows] within tol_scale (kKclRel reltol (sum_j |J_kj x_j| + |rhs_k|) + abstol).
  // kKclRel = 10: in the transient's solves (reltol 1e-4 after scaling) SPICE's reltol, 1e-3, of the row's
  // magnitude, which holds the op-amp's opposing terms (gain over output resistance times the input), so a
  // level-1 op-amp's output current still balances to ~0.1 mA. Measured (2026-11-25): the shipped network 5%
  // slower at 1, 3% at 10; at 100 the level-1 glitches are back.
  static constexpr double kKclRel = 10;
  // T = double (one image: a bool) or Vd (a block: a mask of the lanes that pass; tol_scale per lane).
  template <int N, class T, class S>
  auto kcl_ok(const T* J, const T* rhs, const T* x, S tol_scale) const {
    const int n = N > 0 ? N : L.n;
    auto ok = vabs(T{}) <= T{};  // true on every lane
    for (int k = 0; k < n; ++k) {
      T r = -rhs[k], m = vabs(rhs[k]);
      for (int j = 0; j < n; ++j) {
        const T t = J[k * n + j] * x[j];
        r += t;
        m += vabs(t);
      }
      ok &= vabs(r) <= tol_scale * (kKclRel * reltol * m + abstol);
    }
    return ok;
  }

  // Newton on the neuron's periphery from x (warm: x is an earlier solution and lim its limiting states).
  // gshunt [S] adds a conductance from every node to ground (gmin stepping); max_step [V] (> 0) scales down
  // steps that would move a node voltage further. Returns the iteration count, or minus it when it did not
  // converge.
  // J (n*n) and piv (n), when given, receive the LU factors of the last Jacobian (for linear-response updates).
  // tol_scale multiplies the tolerance (> 1: a looser stop, for solves whose result a later check refines).
  int solve(const NeuronIn& in, double* x, double* lim, bool warm, double gshunt = 0, double max_step = 0,
            double* Jout = nullptr, int* pivout = nullptr, double tol_scale = 1.0) const;
  // f(std::integral_constant<int, N>{}) with N the local size if it is compiled as a fixed size, else 0.
  template <class F>
  decltype(auto) by_size(F&& f) const;
  // Convergence check at x without refactoring: one Newton step computed with the Jacobian stamped at x but solved
  // with the earlier LU factors (J, piv). True, with x advanced by that step, if the step is within the tolerance
  // (times tol_scale).
  bool check(const NeuronIn& in, double* x, double* lim, const double* J, const int* piv, double tol_scale = 1) const;
  template <int N>
  bool check_n(const NeuronIn& in, double* x, double* lim, const double* Jold, const int* piv,
               double tol_scale) const;
  // A block of images (nn/lanes.hpp): tol() lane-wise.
  Vd tol_lanes(int k, Vd a, Vd b) const;
  // solve() on the lanes of `run` of a block of images (gshunt and max_step 0), each lane with its own warm flag,
  // tolerance scale and stopping iteration; lanes outside `run` are left as they are. J, piv receive the lanes' LU
  // factors of their last Jacobian. its[b]: lane b's iteration count, minus it where Newton did not converge (as
  // solve() returns), 0 on lanes not run.
  // At most `lockstep` iterations are taken side by side: lanes still iterating then return with its[b] = 0 and
  // are marked in the result (the caller continues them one by one: a few slow lanes would otherwise hold up
  // the whole block).
  Vm solve_lanes(const NeuronInT<Vd>& in, Vd* x, Vd* lim, Vm warm, Vm run, Vd tol_scale, Vd* J, Vm* piv,
                 long* its, int lockstep) const;
  template <int N>
  Vm solve_lanes_n(const NeuronInT<Vd>& in, Vd* x, Vd* lim, Vm warm, Vm run, Vd tol_scale, Vd* J, Vm* piv,
                   long* its, int lockstep) const;
  // check() on the lanes of `run` of a block of images; returns the lanes that passed (advanced by their step).
  Vm check_lanes(const NeuronInT<Vd>& in, Vd* x, Vd* lim, const Vd* J, const Vm* piv, Vd tol_scale, Vm run) const;
  template <int N>
  Vm check_lanes_n(const NeuronInT<Vd>& in, Vd* x, Vd* lim, const Vd* Jold, const Vm* piv, Vd tol_scale,
                   Vm run) const;
  // Solves m right-hand sides with the lanes' LU factors (lu_apply_lanes_multi at the neuron's size), in place.
  void apply_lanes(const Vd* J, const Vm* piv, Vd* b, int m) const;
  // m right-hand sides at once (b: m consecutive vectors of n).
  void apply_multi(const double* A, const int* piv, double* b, int m) const;
  template <int N>
  int solve_n(const NeuronIn& in, double* x, double* lim, bool warm, double gshunt, double max_step, double* Jout,
              int* pivout, double tol_scale) const;

  // Fallbacks after a failed Newton (`failed` < 0: its iterations): from the start point (the previous solution
  // `x0` when warm, else the ideal guess) with 1 V step limiting, then gmin stepping (1e-2 S down to 0 by decades,
  // each step warm-started).
  int robust_solve(const NeuronIn& in, double* x, double* lim, const double* x0, bool warm, int failed, double* Jout,
                   int* pivout) const;

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
  static Vd guess_atanh(Vd u) {
    const Vd u2 = u * u;
    Vd r = u * (1.0 + u2 * (1.0 / 3.0 + u2 * 0.2));
    const Vm big = ~(vabs(u) < 0.3);
    return any(big) ? select(big, vatanh(u), r) : r;
  }
  // std::clamp(v, lo, hi), lane-wise for a block.
  static double clamp_to(double v, double lo, double hi) { return std::clamp(v, lo, hi); }
  static Vd clamp_to(Vd v, double lo, double hi) { return v < lo ? splat(lo) : (hi < v ? splat(hi) : v); }
  double pole_load_of(double p) const { return opamp_model::pole_load(op, p); }
  Vd pole_load_of(Vd p) const {
    if (all(opamp_model::clamp_off(op, p))) return opamp_model::pole_load_linear(op, p);
    return per_lane([&](int b) { return opamp_model::pole_load(op, p[b]); });
  }
  // diode_model::current lane-wise: cd [A] and gd [S] at vd (the forward and reverse branches as lane selects;
  // lanes by the one-image function when the model has breakdown).
  void junction(Vd vd, Vd& cd, Vd& gd) const {
    if (di.bv_given) {
      for (int b = 0; b < kLanes; ++b) {
        const diode_model::Current c = diode_model::current(di, vd[b], gmin);
        cd[b] = c.cd;
        gd[b] = c.gd;
      }
      return;
    }
    const Vm fwd = diode_model::forward_branch(di, vd);
    Vd cdj, gdj;
    if (any(fwd)) diode_model::forward_current(di, vd, vexp(vd * di.inv_vte), gmin, cdj, gdj, cd, gd);
    if (all(fwd)) return;
    Vd rcd, rgd;
    diode_model::reverse_current(di, vd, gmin, cdj, gdj, rcd, rgd);
    cd = fwd ? cd : rcd;
    gd = fwd ? gd : rgd;
  }
  // idio: the junction current at v [A] (with gmin).
  double diode_current(double v) const { return diode_model::current(di, v, gmin).cd; }
  Vd diode_current(Vd v) const {
    Vd cd, gd;
    junction(v, cd, gd);
    return cd;
  }
  // vdio: the forward voltage at current i [V].
  double diode_voltage(double i) const { return diode_model::forward_voltage(di, i); }
  Vd diode_voltage(Vd i) const {
    return diode_model::forward_voltage(di, i, [](Vd a) { return vlog(a); });
  }

  template <class T>
  void opamp_inverse(T out, T io, double vos, T& inn, T& p) const {
    p = out;
    if (op.level == 0) {
      inn = T{};
      return;
    }
    constexpr double kEdge = 1 - 1e-15;
    T vd;
    if (op.level == 1) {
      const T u = clamp_to((out + op.rout * io - op.vmid) / op.vhalf, -kEdge, kEdge);
      vd = op.vhalf * guess_atanh(u) / op.a0;
    } else {
      p = std::isfinite(op.ilim) ? out + op.rout * op.ilim * guess_atanh(clamp_to(io / op.ilim, -kEdge, kEdge))
                                 : out + op.rout * io;
      const T need = pole_load_of(p);
      vd = op.vsr * guess_atanh(clamp_to(need / op.imax, -kEdge, kEdge));
    }
    const double kcm = op.level >= 2 ? op.kcm : 0.0;
    inn = (vos - kcm * op.vmid - vd) / (1 - 0.5 * kcm);
  }

  // Initial guess for a cold start: the stages in signal order (TIA, rectifier, inverter), each from its KCL with
  // the op-amp equations inverted and the diodes in their ideal regime, three passes so that the loading of each
  // stage by the next settles. Near-exact away from the rectifier corner and saturation. Sets the limiting states.
  // T = double (one image) or Vd (a block: every lane's own guess; branches become lane selects).
  template <class T>
  void guess(const NeuronInT<T>& in, T* x, T* lim) const {
    std::fill(x, x + L.n, T{});
    std::fill(lim, lim + kLim, T{});
    const double* r = in.r;
    const double gin = op.level >= 1 && std::isfinite(op.rin) ? 1.0 / op.rin : 0.0;
    const double ib = op.level == 2 ? op.ib : 0.0;
    const double rs = di.rs;
    T c{}, y{}, s{}, a{}, h{}, t{}, hn{}, id1{}, id2{};
    T io[3] = {}, p[3] = {};
    for (int pass = 0; pass < kGuessPasses; ++pass) {
      // TIA: y from the KCL at c; if that is beyond the swing the output saturates and c follows from the KCL.
      const T y0 = c + r[kResRf] * ((in.y_cc + gin) * c + in.lag_c + ib);
      const auto sat = (y0 > op.vhi) | (y0 < op.vlo);
      const T ysat = clamp_to(y0, op.vlo, op.vhi);
      c = select(sat, (ysat / r[kResRf] - in.lag_c - ib) / (1.0 / r[kResRf] + in.y_cc + gin), c);
      y = select(sat, ysat, y0);
      io[0] = (y - c) / r[kResRf] + adc_g * y + (rect ? (y - s) / r[kResR1] : T{});
      T cn;
      opamp_inverse(y, io[0], in.vos[kOpTia], cn, p[0]);
      c = select(vabs(cn) < 1.0, cn, c);
      if (!rect) continue;
      // Rectifier: D2 conducts (h > 0) for y < 0, else D1.
      const double gh = 1.0 / r[kResR2] + 1.0 / r[kResRl] + 1.0 / r[kResInv1] + in.y_hh;
      auto d2_on = [&](T& i1, T& hh, T& i2, T& aa) {
        i1 = diode_current(s - a);
        hh = s + r[kResR2] * ((s - y) / r[kResR1] + i1 + gin * s + ib);
        i2 = (hh - s) / r[kResR2] + hh / r[kResRl] + (hh - t) / r[kResInv1] + in.y_hh * hh + in.y_hhn * hn + in.lag_h;
        aa = hh + diode_voltage(i2);
      };
      auto d1_on = [&](T& i1, T& hh, T& i2, T& aa) {
        i2 = diode_current(a - h);
        hh = (s / r[kResR2] + t / r[kResInv1] - in.y_hhn * hn - in.lag_h + i2) / gh;
        i1 = (y - s) / r[kResR1] + (hh - s) / r[kResR2] - gin * s - ib;
        aa = s - diode_voltage(i1);
      };
      const auto neg = y < 0;
      if (all(neg)) {
        d2_on(id1, h, id2, a);
      } else if (!any(neg)) {
        d1_on(id1, h, id2, a);
      } else {
        T i1n, hn_, i2n, an, i1p, hp, i2p, ap;
        d2_on(i1n, hn_, i2n, an);
        d1_on(i1p, hp, i2p, ap);
        id1 = select(neg, i1n, i1p);
        h = select(neg, hn_, hp);
        id2 = select(neg, i2n, i2p);
        a = select(neg, an, ap);
      }
      a = clamp_to(a, op.vlo, op.vhi);
      io[1] = id2 - id1;
      T sn;
      opamp_inverse(a, io[1], in.vos[kOpRect], sn, p[1]);
      s = select(vabs(sn) < 1.0, sn, s);
      // Inverter.
      hn = clamp_to(t + r[kResInv2] * ((t - h) / r[kResInv1] + gin * t + ib), op.vlo, op.vhi);
      io[2] = (hn - t) / r[kResInv2] + in.y_hnhn * hn + in.y_hnh * h + in.lag_hn;
      T tn;
      opamp_inverse(hn, io[2], in.vos[kOpInv], tn, p[2]);
      t = select(vabs(tn) < 1.0, tn, t);
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

// The kernel of a layer's neurons: op-amp and diode coefficients from cfg, layout, tolerances from opt.
Kernel make_kernel(const HardwareConfig& cfg, const LayerMapping& m, const FastOptions& opt);

}  // namespace anasim::nn::fast

#include "nn/periphery_newton.hpp"  // (Kernel's local Newton: the definitions declared above)
