// The fast evaluator's batched path (nn/fast_eval.hpp, issue 19): the Gauss-Seidel sweeps of nn/fast_sweeps.cpp
// run on kLanes images at once, one image per SIMD lane (nn/lanes.hpp). Every lane follows the one-image algorithm
// (its own neuron states, linear-response updates, verification and stopping sweep); the neurons' Newton solves,
// checks and sensitivities are the periphery kernel's lane-wise forms (one stamp template, a lane-wise pivoted LU),
// and the coupling updates pass each admittance column once for all the lanes. Contract: the same fixed point as
// the one-image path to its tolerance (reltol |x| + vntol on every unknown), so the same ADC codes and classes
// except where an output lies within that tolerance of a code boundary; results do not depend on the thread count
// (the blocks are fixed by the chunks).
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include "nn/fast_eval_impl.hpp"

namespace anasim::nn {

using namespace fast;

namespace {

// As in nn/fast_sweeps.cpp (the same algorithm): largest relative linear-response move, the move below which no
// verification is needed, and the tolerance multiplier of the Newton solves between verifications.
constexpr double kLinearMax = 1e-3;
constexpr double kNoCheck = 1e-7;
constexpr double kLooseTol = 1e4;
// Newton iterations the lanes of a block take side by side; a lane that needs more continues alone (measured on
// the shipped network: 85% of the first sweep's solves converge in 2 iterations, 14% in 3, 1% in more).
constexpr int kLockstep = 2;

}  // namespace

// Per-thread state of a block of kLanes images: the one-image Work's arrays, lane-wise ([index] holds every lane).
struct FastEvaluator::Impl::Batch {
  struct Layer {
    std::vector<Vd> x, xn, lim, lagn, lagu, sens, bound, lu, ic, ix, vx;
    std::vector<Vm> piv, state;
    std::vector<Vd> ipole;  // transient step: the pole capacitors' history currents [A] (C x 3), else empty
  };
  std::vector<Layer> layers;
  // The port relations the sweeps see: the layers' DC admittances Y; in a transient step (tran) Y + ag0 C1 with
  // every lane's own companion coefficient ag0 [1/s] (the lanes are at different times and steps), applied as
  // two products. The tolerance multiplier, and per lane the pole companion conductance [S] of a transient step.
  std::vector<const Eigen::MatrixXd*> Ycc, Ycx, Yxc;
  std::vector<std::vector<const Eigen::MatrixXd*>> Yxx;
  double tol_scale = 1;
  bool tran = false;
  Vd ag0{}, gpole{};
  Vd old[kMaxLocal];
  std::uint64_t sample[kLanes] = {};
  Vm live{};                  // lanes holding an image
  long sweeps[kLanes] = {}, newton[kLanes] = {};
  Vm failed{};
};

void FastEvaluator::Impl::BatchFree::operator()(Batch* b) const { delete b; }

std::unique_ptr<FastEvaluator::Impl::Batch, FastEvaluator::Impl::BatchFree> FastEvaluator::Impl::new_batch() const {
  std::unique_ptr<Batch, BatchFree> w(new Batch);
  w->layers.resize(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) {
    const FastLayer& f = layers[l];
    Batch::Layer& b = w->layers[l];
    const size_t C = static_cast<size_t>(f.C), n = static_cast<size_t>(f.kernel.L.n);
    b.x.assign(C * n, Vd{});
    b.xn.assign(C * n, Vd{});
    b.lim.assign(C * kLim, Vd{});
    b.lagn.assign(C * 3, Vd{});
    b.lagu.assign(C * 3, Vd{});
    b.sens.assign(C * 3 * n, Vd{});
    b.bound.assign(C * 3, Vd{});
    b.lu.assign(C * n * n, Vd{});
    b.piv.assign(C * n, Vm{});
    b.state.assign(C, Vm{});
    b.ic.assign(C, Vd{});
    b.ix.assign(f.P, Vd{});
    b.vx.assign(f.P, Vd{});
  }
  const size_t L = layers.size();
  w->Ycc.resize(L);
  w->Ycx.resize(L);
  w->Yxc.resize(L);
  w->Yxx.resize(L);
  for (size_t l = 0; l < L; ++l) {
    w->Ycc[l] = &layers[l].Ycc;
    w->Ycx[l] = &layers[l].Ycx;
    w->Yxc[l] = &layers[l].Yxc;
    for (const auto& S : layers[l].Yxx) w->Yxx[l].push_back(&S);
  }
  return w;
}

// True when classify() takes the batched path: DC sweeps without per-sweep tracing or debug output.
bool FastEvaluator::Impl::batched() const { return opt.batch && !opt.trace && !opt.debug; }

namespace {

using Impl = FastEvaluator::Impl;

// Lane b of a block's neuron inputs, for the one-image kernel functions (guess, robust_solve).
NeuronIn lane(const NeuronInT<Vd>& v, int b) {
  NeuronIn in;
  in.y_cc = v.y_cc;
  in.lag_c = v.lag_c[b];
  in.y_hh = v.y_hh;
  in.y_hhn = v.y_hhn;
  in.y_hnh = v.y_hnh;
  in.y_hnhn = v.y_hnhn;
  if (v.lanes) {  // the lane's own admittances and pole conductance
    in.y_cc += v.dy_cc[b];
    in.y_hh += v.dy_hh[b];
    in.y_hhn += v.dy_hhn[b];
    in.y_hnh += v.dy_hnh[b];
    in.y_hnhn += v.dy_hnhn[b];
  }
  in.lag_h = v.lag_h[b];
  in.lag_hn = v.lag_hn[b];
  in.gpole = v.lanes ? v.gpole_lanes[b] : v.gpole;
  for (int k = 0; k < 3; ++k) in.ipole[k] = v.ipole[k][b];
  in.r = v.r;
  in.vos = v.vos;
  return in;
}

// What neuron j of layer l sees of the arrays, every lane (Impl::inputs lane-wise).
NeuronInT<Vd> inputs_lanes(const Impl& I, const Impl::Batch& w, int l, int j, int l1) {
  const FastLayer& f = I.layers[l];
  const Layout& Lo = f.kernel.L;
  const Impl::Batch::Layer& B = w.layers[l];
  const Vd* x = &B.x[static_cast<size_t>(j) * Lo.n];
  NeuronInT<Vd> in;
  in.r = &f.li->res[static_cast<size_t>(j) * kNumPeripheryRes];
  in.vos = &f.li->vos[static_cast<size_t>(j) * kNumPeripheryOps];
  in.y_cc = (*w.Ycc[l])(j, j);
  if (w.tran) {
    in.lanes = true;
    in.dy_cc = w.ag0 * f.C1cc(j, j);
    in.dy_hh = in.dy_hhn = in.dy_hnh = in.dy_hnhn = Vd{};
    in.lag_c = B.ic[j] - (in.y_cc + in.dy_cc) * x[Lo.c];
  } else {
    in.lag_c = B.ic[j] - in.y_cc * x[Lo.c];
  }
  if (I.noise)
    for (int b = 0; b < kLanes; ++b)
      if (w.live[b]) in.lag_c[b] -= read_noise_current(*I.hw, l, j, w.sample[b]);
  if (!B.ipole.empty()) {
    in.gpole_lanes = w.gpole;
    for (int k = 0; k < 3; ++k) in.ipole[k] = B.ipole[static_cast<size_t>(j) * 3 + k];
  }
  if (f.m->rectifier && l + 1 < l1) {
    const FastLayer& nx = I.layers[l + 1];
    const int p = 2 * j, bl = nx.block_of_row[p], off = nx.m->row_blocks[bl];
    const Eigen::MatrixXd& S = *w.Yxx[l + 1][bl];
    row_pair(S, p - off, in.y_hh, in.y_hhn, in.y_hnh, in.y_hnhn);
    const Impl::Batch::Layer& N = w.layers[l + 1];
    if (w.tran) {
      double c[4];
      row_pair(nx.C1xx[bl], p - off, c[0], c[1], c[2], c[3]);
      in.dy_hh = w.ag0 * c[0];
      in.dy_hhn = w.ag0 * c[1];
      in.dy_hnh = w.ag0 * c[2];
      in.dy_hnhn = w.ag0 * c[3];
      in.lag_h = N.ix[p] - (in.y_hh + in.dy_hh) * x[Lo.h] - (in.y_hhn + in.dy_hhn) * x[Lo.hn];
      in.lag_hn = N.ix[p + 1] - (in.y_hnh + in.dy_hnh) * x[Lo.h] - (in.y_hnhn + in.dy_hnhn) * x[Lo.hn];
      return in;
    }
    in.lag_h = N.ix[p] - in.y_hh * x[Lo.h] - in.y_hhn * x[Lo.hn];
    in.lag_hn = N.ix[p + 1] - in.y_hnh * x[Lo.h] - in.y_hnhn * x[Lo.hn];
  }
  return in;
}

// Impl::propagate lane-wise: the port-voltage changes of neuron j of layer l (x against w.old) into the lagged
// currents of every lane.
void propagate_lanes(const Impl& I, Impl::Batch& w, int l, int j, int l1) {
  const FastLayer& f = I.layers[l];
  const Layout& Lo = f.kernel.L;
  Impl::Batch::Layer& B = w.layers[l];
  const Vd* x = &B.x[static_cast<size_t>(j) * Lo.n];
  const Vd dc = x[Lo.c] - w.old[Lo.c];
  if (any(dc != 0)) {
    if (w.tran) {  // (Y + ag0 C1) dc, ag0 per lane
      const Vd e = w.ag0 * dc;
      axpy2(B.ic.data(), w.Ycc[l]->col(j).data(), dc, f.C1cc.col(j).data(), e, f.C);
      if (!f.m->dac_rows) axpy2(B.ix.data(), w.Yxc[l]->col(j).data(), dc, f.C1xc.col(j).data(), e, f.P);
    } else {
      axpy(B.ic.data(), w.Ycc[l]->col(j).data(), dc, f.C);
      if (!f.m->dac_rows) axpy(B.ix.data(), w.Yxc[l]->col(j).data(), dc, f.P);
    }
  }
  if (!(f.m->rectifier && l + 1 < l1)) return;
  const FastLayer& nx = I.layers[l + 1];
  Impl::Batch::Layer& N = w.layers[l + 1];
  const int p = 2 * j, bl = nx.block_of_row[p], off = nx.m->row_blocks[bl];
  const Eigen::MatrixXd& S = *w.Yxx[l + 1][bl];
  const Eigen::MatrixXd& Ycx = *w.Ycx[l + 1];
  const int rows = static_cast<int>(S.rows());
  const Vd dh = x[Lo.h] - w.old[Lo.h], dhn = x[Lo.hn] - w.old[Lo.hn];
  if (any((dh != 0) | (dhn != 0))) {  // both columns of the row pair in one pass
    if (w.tran) {  // (Y + ag0 C1) of both columns, ag0 per lane
      const Eigen::MatrixXd& CS = nx.C1xx[bl];
      const Vd eh = w.ag0 * dh, ehn = w.ag0 * dhn;
      axpy4(N.ix.data() + off, S.col(p - off).data(), dh, S.col(p + 1 - off).data(), dhn, CS.col(p - off).data(), eh,
            CS.col(p + 1 - off).data(), ehn, rows);
      axpy4(N.ic.data(), Ycx.col(p).data(), dh, Ycx.col(p + 1).data(), dhn, nx.C1cx.col(p).data(), eh,
            nx.C1cx.col(p + 1).data(), ehn, nx.C);
    } else {
      axpy2(N.ix.data() + off, S.col(p - off).data(), dh, S.col(p + 1 - off).data(), dhn, rows);
      axpy2(N.ic.data(), Ycx.col(p).data(), dh, Ycx.col(p + 1).data(), dhn, nx.C);
    }
  }
  N.vx[p] = x[Lo.h];
  N.vx[p + 1] = x[Lo.hn];
}

// Impl::tiny_linear lane-wise (DC tolerance): lanes whose linear moves from xn need no verifying check.
Vm tiny_linear_lanes(const Layout& Lo, const Vd* x, const Vd* xn, double tol_scale) {
  const double lim = kNoCheck * std::sqrt(tol_scale);
  Vm tiny = Vm{} - 1;
  for (int k = 0; k < Lo.n; ++k)
    tiny &= ~(vabs(x[k] - xn[k]) > lim * (vabs(xn[k]) + (Lo.is_current[k] ? 1e-9 : 1e-3)));
  return tiny;
}

}  // namespace

// Impl::start_layer for a block: layer l unsolved, free rows at 0 V; DAC layers' column currents from ic0 (lane b:
// ic0[b * ld + j]) or from the lanes' row voltages vx.
void FastEvaluator::Impl::start_block_layer(Batch& w, int l, const double* ic0, int ld) const {
  const FastLayer& f = layers[l];
  Batch::Layer& B = w.layers[l];
  std::fill(B.state.begin(), B.state.end(), Vm{});
  std::fill(B.x.begin(), B.x.end(), Vd{});
  if (f.m->dac_rows) {
    if (ic0) {
      for (int j = 0; j < f.C; ++j)
        for (int b = 0; b < kLanes; ++b) B.ic[j][b] = w.live[b] ? ic0[static_cast<size_t>(b) * ld + j] : 0.0;
    } else {
      std::fill(B.ic.begin(), B.ic.end(), Vd{});
      for (int p = 0; p < f.P; ++p) axpy(B.ic.data(), f.Ycx.col(p).data(), B.vx[p], f.C);
    }
    std::fill(B.ix.begin(), B.ix.end(), Vd{});
  } else {
    for (int j = 0; j < f.C; ++j) B.ic[j] = splat(f.ic_bias[j]);
    for (int p = 0; p < f.P; ++p) B.ix[p] = splat(f.ix_bias[p]);
    for (int p = 0; p < f.first_dac; ++p) B.vx[p] = Vd{};
  }
}

// Impl::sweep for a block: Gauss-Seidel sweeps over layers [l0, l1) until every live lane has converged; each
// lane stops at the sweep where the one-image algorithm stops. Cold (DC): every neuron from its ideal-circuit
// guess; warm (a transient step): every neuron from its x, a Newton solve first (state 3).
void FastEvaluator::Impl::sweep_block(Batch& w, int l0, int l1, bool warm_start) const {
  const FastOptions& o = opt;
  const double ts = w.tol_scale;
  for (int l = l0; l < l1; ++l) {
    const Kernel& K = layers[l].kernel;
    const int n = K.L.n;
    Batch::Layer& B = w.layers[l];
    if (warm_start) {
      std::fill(B.state.begin(), B.state.end(), Vm{} + 3);
      continue;
    }
    // The ideal-circuit guess of every neuron (lanes without an image are guessed too, from zero currents).
    for (int j = 0; j < layers[l].C; ++j) {
      Vd* x = &B.x[static_cast<size_t>(j) * n];
      std::copy(x, x + n, w.old);
      K.guess(inputs_lanes(*this, w, l, j, l1), x, &B.lim[static_cast<size_t>(j) * kLim]);
      propagate_lanes(*this, w, l, j, l1);
    }
  }
  Vm done = ~w.live, verify{};
  for (int sw = 1; sw <= o.max_sweeps; ++sw) {
    for (int b = 0; b < kLanes; ++b) w.sweeps[b] += !done[b];
    Vd worst{};
    const Vm act = ~done;
    const Vd tol_newton = verify ? splat(ts) : splat(std::max(kLooseTol, ts));  // (see kLooseTol, fast_sweeps.cpp)
    for (int l = l0; l < l1; ++l) {
      const FastLayer& f = layers[l];
      const Kernel& K = f.kernel;
      const Layout& Lo = K.L;
      const int n = Lo.n;
      Batch::Layer& B = w.layers[l];
      for (int j = 0; j < f.C; ++j) {
        const size_t jn = static_cast<size_t>(j) * n;
        Vd* x = &B.x[jn];
        Vd* xn = &B.xn[jn];
        Vd* lim = &B.lim[static_cast<size_t>(j) * kLim];
        Vd* lagn = &B.lagn[static_cast<size_t>(j) * 3];
        Vd* lagu = &B.lagu[static_cast<size_t>(j) * 3];
        Vd* sens = &B.sens[static_cast<size_t>(j) * 3 * n];
        Vd* bound = &B.bound[static_cast<size_t>(j) * 3];
        Vd* J = &B.lu[jn * n];
        Vm* piv = &B.piv[jn];
        Vm& state = B.state[j];
        const NeuronInT<Vd> in = inputs_lanes(*this, w, l, j, l1);
        const Vd lag[3] = {in.lag_c, in.lag_h, in.lag_hn};
        std::copy(x, x + n, w.old);
        // Lanes whose linear updates stayed tiny are accurate as they are.
        const Vm lin2 = act & verify & (state == 2);
        if (any(lin2)) state = (lin2 & tiny_linear_lanes(Lo, x, xn, ts)) ? Vm{} + 1 : state;
        const Vm fresh = (state == 0) | (state == 3);  // no Newton solution yet in this solve
        Vm newton = act & (fresh | (verify & (state == 2)));
        const Vm rest = act & ~newton;
        Vm touched = newton;  // lanes whose x may change at this neuron
        if (any(rest)) {
          // Skip lanes whose currents moved too little to move any unknown by a twentieth of its tolerance; the
          // others move by linear response, or by Newton when that move is large.
          const Vd du = vabs(lag[0] - lagu[0]) * bound[0] + vabs(lag[1] - lagu[1]) * bound[1] +
                        vabs(lag[2] - lagu[2]) * bound[2];
          const Vm lin = rest & ~(du <= 0.05);
          if (any(lin)) {
            const Vd d[3] = {lag[0] - lagn[0], lag[1] - lagn[1], lag[2] - lagn[2]};
            Vd big{};
            for (int k = 0; k < n; ++k) {
              const Vd r = -(d[0] * sens[k] + d[1] * sens[n + k] + d[2] * sens[2 * n + k]);
              x[k] = lin ? xn[k] + r : x[k];
              big = vmax(big, vabs(r) / (vabs(xn[k]) + (Lo.is_current[k] ? 1e-9 : 1e-3)));
            }
            for (int i = 0; i < 3; ++i) lagu[i] = lin ? lag[i] : lagu[i];
            touched |= lin;
            const Vm small = lin & (big <= kLinearMax);
            state = small ? Vm{} + 2 : state;
            newton |= lin & ~small;
          }
        }
        // Verification of the lanes moved by linear response: a Newton step with the stored factors.
        const Vm chk = newton & verify & (state == 2);
        if (any(chk)) {
          const Vm ok = K.check_lanes(in, x, lim, J, piv, splat(ts), chk);
          newton &= ~ok;
          state = ok ? Vm{} + 1 : state;
          for (int k = 0; k < n; ++k) xn[k] = ok ? x[k] : xn[k];
          for (int i = 0; i < 3; ++i) {
            lagn[i] = ok ? lag[i] : lagn[i];
            lagu[i] = ok ? lag[i] : lagu[i];
          }
        }
        if (any(newton)) {
          const Vm warm = state != 0;
          long its[kLanes];
          const Vm more = K.solve_lanes(in, x, lim, warm, newton, tol_newton, J, piv, its, kLockstep);
          for (int b = 0; b < kLanes; ++b) {
            if (!newton[b]) continue;
            if (more[b]) {  // the lane's remaining iterations alone (warm: limiting on, as from a second iteration)
              double xb[kMaxLocal], lb[kLim], Jb[kMaxLocal * kMaxLocal];
              int pb[kMaxLocal];
              for (int k = 0; k < n; ++k) xb[k] = x[k][b];
              for (int s = 0; s < kLim; ++s) lb[s] = lim[s][b];
              const int it = K.solve(lane(in, b), xb, lb, true, 0.0, 0.0, Jb, pb, tol_newton[b]);
              for (int k = 0; k < n; ++k) {
                x[k][b] = xb[k];
                piv[k][b] = pb[k];
              }
              for (int s = 0; s < kLim; ++s) lim[s][b] = lb[s];
              for (int e = 0; e < n * n; ++e) J[e][b] = Jb[e];
              its[b] = it > 0 ? kLockstep + it : it - kLockstep;
            }
            if (its[b] < 0) {  // the one-image fallbacks on this lane
              const NeuronIn ib = lane(in, b);
              double xb[kMaxLocal], lb[kLim], x0[kMaxLocal], Jb[kMaxLocal * kMaxLocal];
              int pb[kMaxLocal];
              for (int k = 0; k < n; ++k) {
                xb[k] = x[k][b];
                x0[k] = warm[b] && state[b] != 3 ? xn[k][b] : w.old[k][b];
              }
              for (int s = 0; s < kLim; ++s) lb[s] = lim[s][b];
              int it = K.robust_solve(ib, xb, lb, x0, warm[b] != 0, static_cast<int>(its[b]), Jb, pb);
              if (it < 0) {
                w.failed[b] = -1;
                if (o.debug)
                  fmt::print(stderr, "newton fail (batched) sweep {} layer {} neuron {} lane {}\n", sw, l, j, b);
              }
              for (int k = 0; k < n; ++k) {
                x[k][b] = xb[k];
                piv[k][b] = pb[k];
              }
              for (int s = 0; s < kLim; ++s) lim[s][b] = lb[s];
              for (int e = 0; e < n * n; ++e) J[e][b] = Jb[e];
              its[b] = it;
            }
            w.newton[b] += std::abs(its[b]);
          }
          worst = (newton & fresh) ? vmax(worst, splat(2.0)) : worst;
          state = newton ? Vm{} + 1 : state;
          for (int k = 0; k < n; ++k) xn[k] = newton ? x[k] : xn[k];
          for (int i = 0; i < 3; ++i) {
            lagn[i] = newton ? lag[i] : lagn[i];
            lagu[i] = newton ? lag[i] : lagu[i];
          }
          // Sensitivities dx/dlag at the new solutions and their bounds in units of the tolerance.
          const int ports[3] = {Lo.c, Lo.h, Lo.hn};
          const int np = Lo.h >= 0 ? 3 : 1;
          Vd s[3 * kMaxLocal], itol[kMaxLocal];
          std::fill(s, s + np * n, Vd{});
          for (int i = 0; i < np; ++i) s[i * n + ports[i]] = splat(1.0);
          K.apply_lanes(J, piv, s, np);
          for (int k = 0; k < n; ++k) itol[k] = 1.0 / (ts * K.tol_lanes(k, x[k], x[k]));
          for (int i = 0; i < np; ++i) {
            Vd bnd{};
            for (int k = 0; k < n; ++k) {
              sens[i * n + k] = newton ? s[i * n + k] : sens[i * n + k];
              bnd = vmax(bnd, vabs(s[i * n + k]) * itol[k]);
            }
            bound[i] = newton ? bnd : bound[i];
          }
          for (int i = np; i < 3; ++i) bound[i] = newton ? Vd{} : bound[i];
        }
        if (!any(touched)) continue;  // every lane skipped: nothing moved, nothing to pass on
        for (int k = 0; k < n; ++k) {
          const Vd dx = vabs(x[k] - w.old[k]), tk = ts * K.tol_lanes(k, x[k], w.old[k]);
          const Vm moved = act & ~(dx <= tk * vmax(worst, splat(1e-3)));
          if (any(moved)) worst = moved ? vmax(worst, dx / tk) : worst;
        }
        propagate_lanes(*this, w, l, j, l1);
      }
    }
    // Per lane: done when nothing moved and every neuron sits at a Newton solution (or was checked in this sweep).
    Vm unverified{};
    for (int l = l0; l < l1; ++l)
      for (const Vm& st : w.layers[l].state) unverified |= st == 2;
    const Vm calm = act & (worst <= 1.0);
    done |= calm & (~unverified | verify);
    verify = calm | (act & ~calm & mask_all(sw > 1) & (worst <= 1e3));
    if (all(done)) return;
  }
  w.failed |= ~done;
}

void FastEvaluator::Impl::classify_batch(Batch& w, const Eigen::MatrixXd& IC, int col0, int nb,
                                         std::uint64_t sample0, int* classes, long* codes, long& sweeps,
                                         long& newton, long& failures) const {
  const int L = static_cast<int>(layers.size());
  std::vector<long> code, next;
  for (int b = 0; b < kLanes; ++b) {
    w.live[b] = b < nb ? -1 : 0;
    w.sample[b] = sample0 + static_cast<std::uint64_t>(b);
    w.sweeps[b] = w.newton[b] = 0;
  }
  w.failed = Vm{};
  const double* ic0 = IC.data() + static_cast<size_t>(col0) * IC.rows();
  if (hw->map->cfg.mode == MappingMode::Analog) {
    for (int l = 0; l < L; ++l) start_block_layer(w, l, l == 0 ? ic0 : nullptr, static_cast<int>(IC.rows()));
    sweep_block(w, 0, L);
  } else {
    for (int l = 0; l < L; ++l) {
      if (l > 0) {  // this layer's DAC rows from the previous layer's ADC codes, lane by lane
        const FastLayer& pf = layers[l - 1];
        const Batch::Layer& P = w.layers[l - 1];
        Batch::Layer& B = w.layers[l];
        const int n = pf.kernel.L.n, y = pf.kernel.L.y;
        std::vector<double> v(layers[l].P);
        next.resize(pf.C);
        for (int b = 0; b < kLanes; ++b) {
          for (int j = 0; j < pf.C; ++j)
            next[j] = w.live[b] ? pf.next_code[adc_code(*hw, l - 1, j, P.x[static_cast<size_t>(j) * n + y][b])] : 0;
          dac_voltages(layers[l], next.data(), v.data());
          for (int p = 0; p < layers[l].P; ++p) B.vx[p][b] = v[p];
        }
      }
      start_block_layer(w, l, l == 0 ? ic0 : nullptr, static_cast<int>(IC.rows()));
      sweep_block(w, l, l + 1);
    }
  }
  // The last layer's ADC codes and the classes (argmax; the first of equal codes), lane by lane.
  const FastLayer& f = layers[L - 1];
  const Batch::Layer& B = w.layers[L - 1];
  code.resize(f.C);
  for (int b = 0; b < nb; ++b) {
    for (int j = 0; j < f.C; ++j) code[j] = adc_code(*hw, L - 1, j, B.x[static_cast<size_t>(j) * f.kernel.L.n + f.kernel.L.y][b]);
    if (codes) std::copy(code.begin(), code.end(), codes + static_cast<size_t>(b) * f.C);
    classes[b] = static_cast<int>(std::max_element(code.begin(), code.end()) - code.begin());
    sweeps += w.sweeps[b];
    newton += w.newton[b];
    failures += w.failed[b] != 0;
  }
}

namespace {

// Lane-wise copies between per-lane arrays and a block's vectors (dst[k][b] = src[b][k], and back), in chunks of
// 64 vectors (4 KB) so that each chunk stays in L1 while the lanes pass over it. A null lane is skipped.
constexpr size_t kLaneChunk = 64;

void gather_lanes(const double* const (&src)[kLanes], std::vector<Vd>& dst) {
  const size_t m = dst.size();
  for (size_t k0 = 0; k0 < m; k0 += kLaneChunk) {
    const size_t k1 = std::min(m, k0 + kLaneChunk);
    for (int b = 0; b < kLanes; ++b) {
      const double* s = src[b];
      for (size_t k = k0; k < k1; ++k) dst[k][b] = s[k];
    }
  }
}

void scatter_lanes(const std::vector<Vd>& src, double* const (&dst)[kLanes]) {
  const size_t m = src.size();
  for (size_t k0 = 0; k0 < m; k0 += kLaneChunk) {
    const size_t k1 = std::min(m, k0 + kLaneChunk);
    for (int b = 0; b < kLanes; ++b) {
      double* d = dst[b];
      if (!d) continue;
      for (size_t k = k0; k < k1; ++k) d[k] = src[k][b];
    }
  }
}

}  // namespace

void FastEvaluator::Impl::load_block(Batch& w, const std::vector<Work*>& lanes,
                                     const std::vector<std::uint64_t>& samples) const {
  const int L = static_cast<int>(layers.size());
  const Work* first = nullptr;
  for (int b = 0; b < kLanes; ++b) {
    const Work* s = b < static_cast<int>(lanes.size()) ? lanes[b] : nullptr;
    w.live[b] = s ? -1 : 0;
    w.sample[b] = s ? samples[b] : 0;
    w.sweeps[b] = w.newton[b] = 0;
    if (s && !first) first = s;
  }
  w.failed = Vm{};
  if (!first) return;
  w.tol_scale = first->tol_scale;
  w.tran = !first->ipole.empty();
  for (int b = 0; b < kLanes; ++b) {
    const Work& s = b < static_cast<int>(lanes.size()) && lanes[b] ? *lanes[b] : *first;
    w.ag0[b] = s.ag0;
    w.gpole[b] = s.gpole;
  }
  // (The block's port relations stay the DC admittances new_batch set: a transient step adds each lane's ag0 C1.)
  for (int l = 0; l < L; ++l) {
    Batch::Layer& B = w.layers[l];
    const bool pole = !first->ipole.empty();
    B.ipole.assign(pole ? first->ipole[l].size() : 0, Vd{});
    // Empty lanes repeat the first live lane, so that they solve something well-posed (they are not counted).
    const double* src[kLanes];
    auto lanes_of = [&](const std::vector<std::vector<double>> Work::*m) {
      for (int b = 0; b < kLanes; ++b) {
        const Work& s = b < static_cast<int>(lanes.size()) && lanes[b] ? *lanes[b] : *first;
        src[b] = (s.*m)[l].data();
      }
    };
    lanes_of(&Work::x);
    gather_lanes(src, B.x);
    lanes_of(&Work::lim);
    gather_lanes(src, B.lim);
    lanes_of(&Work::ic);
    gather_lanes(src, B.ic);
    if (!layers[l].m->dac_rows) {  // a DAC layer's row currents and voltages are not the sweeps' (fixed rows)
      lanes_of(&Work::ix);
      gather_lanes(src, B.ix);
      lanes_of(&Work::vx);
      gather_lanes(src, B.vx);
    }
    if (pole) {
      lanes_of(&Work::ipole);
      gather_lanes(src, B.ipole);
    }
  }
}

void FastEvaluator::Impl::store_block(const Batch& w, const std::vector<Work*>& lanes) const {
  const int L = static_cast<int>(layers.size());
  double* dst[kLanes];
  auto lanes_of = [&](std::vector<std::vector<double>> Work::*m, int l) {
    for (int b = 0; b < kLanes; ++b)
      dst[b] = b < static_cast<int>(lanes.size()) && lanes[b] ? (lanes[b]->*m)[l].data() : nullptr;
  };
  for (int l = 0; l < L; ++l) {
    const Batch::Layer& B = w.layers[l];
    lanes_of(&Work::x, l);
    scatter_lanes(B.x, dst);
    lanes_of(&Work::lim, l);
    scatter_lanes(B.lim, dst);
    lanes_of(&Work::ic, l);
    scatter_lanes(B.ic, dst);
    if (!layers[l].m->dac_rows) {
      lanes_of(&Work::ix, l);
      scatter_lanes(B.ix, dst);
      lanes_of(&Work::vx, l);
      scatter_lanes(B.vx, dst);
    }
  }
  for (int b = 0; b < kLanes && b < static_cast<int>(lanes.size()); ++b) {
    Work* s = lanes[b];
    if (!s) continue;
    s->failed = s->failed || w.failed[b] != 0;
    s->sweeps += w.sweeps[b];
    s->newton += w.newton[b];
  }
}

}  // namespace anasim::nn
