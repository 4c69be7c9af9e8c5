// The network transient's fast path (see fast_tran.hpp): per image, time stepping of the port-reduced circuit with
// the engine's integrator and step control, the DC path's sweeps for each step, energies by component, settling.
#include "nn/fast_tran.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <fmt/format.h>
#include "devices/opamp_model.hpp"
#include "engine/integrator.hpp"
#include "nn/fast_eval_impl.hpp"

namespace anasim::nn {

using namespace fast;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

using Clock = std::chrono::steady_clock;
using Work = FastEvaluator::Impl::Work;

// y = blockdiag(B) x for the per-row-block matrices B of a layer (row_blocks: block boundaries).
VectorXd block_mv(const std::vector<MatrixXd>& B, const std::vector<int>& row_blocks, const VectorXd& x) {
  VectorXd y(x.size());
  for (size_t b = 0; b + 1 < row_blocks.size(); ++b) {
    const int r0 = row_blocks[b], nr = row_blocks[b + 1] - r0;
    y.segment(r0, nr).noalias() = B[b] * x.segment(r0, nr);
  }
  return y;
}

// Linear interpolation of v over t at x (clamped).
double interp(const std::vector<double>& t, const std::vector<double>& v, size_t stride, size_t k0, double x) {
  const size_t n = t.size();
  if (x <= t.front()) return v[k0];
  if (x >= t.back()) return v[(n - 1) * stride + k0];
  const size_t k = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), x) - t.begin());
  const double w = (x - t[k - 1]) / (t[k] - t[k - 1]);
  const double a = v[(k - 1) * stride + k0], b = v[k * stride + k0];
  return a + w * (b - a);
}

}  // namespace

Status FastTransient::prepare(const HardwareInstance& hw, const FastOptions& fo, const FastTranOptions& to) {
  hw_ = &hw;
  to_ = to;
  FastOptions o = fo;
  o.moments = true;
  return fe_.prepare(hw, o);
}

Status FastTransient::run(const LayerCodes& codes, const LayerCodes& from, std::uint64_t sample,
                          const TransientOptions& opt, const std::vector<double>& sample_times,
                          ImageTransient& out) const {
  const auto clock0 = Clock::now();
  out = ImageTransient{};
  if (!hw_) return Status::fail(ErrorKind::Other, "FastTransient::run before prepare");
  const FastEvaluator::Impl& I = fe_.impl();
  const HardwareInstance& hw = *hw_;
  const HardwareConfig& cfg = hw.map->cfg;
  const int L = static_cast<int>(I.layers.size());

  // ---- the DAC rows before and after the step ----
  std::vector<VectorXd> v0(L), v1(L), dv(L);
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = I.layers[l];
    v0[l] = VectorXd::Zero(f.P);
    v1[l] = VectorXd::Zero(f.P);
    if (f.m->dac_rows) {
      if (static_cast<int>(codes.size()) <= l || static_cast<int>(codes[l].size()) != f.m->inputs)
        return Status::fail(ErrorKind::Other, fmt::format("network transient: layer {} needs {} DAC codes", l,
                                                          f.m->inputs));
      const bool have_from = opt.from_previous && static_cast<int>(from.size()) > l &&
                             static_cast<int>(from[l].size()) == f.m->inputs;
      const std::vector<long> c0 = have_from ? from[l] : std::vector<long>(f.m->inputs, 0L);
      I.dac_voltages(f, c0.data(), v0[l].data());
      I.dac_voltages(f, codes[l].data(), v1[l].data());
    } else {
      for (int p = f.first_dac; p < f.P; ++p) v0[l][p] = v1[l][p] = f.dac[p - f.first_dac][f.dac_max];
    }
    dv[l] = v1[l] - v0[l];
  }

  // ---- DC states before (t = 0) and after (the target) ----
  auto dc_state = [&](Work& w, const std::vector<VectorXd>& v) {
    I.init_work(w);
    for (int l = 0; l < L; ++l) {
      if (I.layers[l].m->dac_rows) std::copy(v[l].data(), v[l].data() + v[l].size(), w.vx[l].begin());
      I.start_layer(w, l, nullptr);
    }
    I.sweep(w, 0, L, sample);
    return !w.failed;
  };
  Work w, wfin;
  if (!dc_state(wfin, v1) || !dc_state(w, v0))
    return Status::numerical(fmt::format("network transient of sample {}: the operating point did not converge",
                                         sample));

  // ---- per layer: layout, states, the DAC layers' products with v0 and dv ----
  struct LayerRun {
    int n = 0, C = 0, P = 0, nops = 0;
    bool dac = false, level2 = false;
    int pole_off = -1, qc_off = 0, qx_off = -1;  // state indices (qx: free rows only)
    int aux_off = -1;                            // DAC layers: the ramp and column voltages in `aux`
    VectorXd w0, w1, z0, z1;                    // C: Ycx v0, Ycx dv, C1cx v0, C1cx dv (DAC layers)
    VectorXd u0, u1, uc0, uc1;                  // P: Yxx v0, Yxx dv, C1xx v0, C1xx dv (DAC layers)
    MatrixXd Ecc, Ecx, Exc;                     // companion admittances G + ag0 C1
    std::vector<MatrixXd> Exx;
  };
  std::vector<LayerRun> lr(L);
  int n_states = 0;
  // A DAC layer's row charges C1xx vx + C1xc c = uc0 + rr uc1 + C1xc c are linear in the ramp position rr and the
  // column voltages c, and the integration rule is linear: their currents are uc1 D[rr] + C1xc D[c], D the rule's
  // derivative, and the power into the rows vx.(uc1 D[rr]) + (C1cx vx).D[c] = (vx.uc1) D[rr] + (z0 + rr z1).D[c].
  // So rr and c are integrated as auxiliary states (`aux`, same rule and steps, outside the truncation-error
  // control, where the row charges contribute nothing: constant after the ramp, linear along it) instead of P row
  // charges, which would cost a P x C product per step.
  int n_aux = 0;
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = I.layers[l];
    LayerRun& r = lr[l];
    r.n = f.kernel.L.n;
    r.C = f.C;
    r.P = f.P;
    r.nops = f.m->rectifier ? 3 : 1;
    r.dac = f.m->dac_rows;
    r.level2 = f.kernel.op.level == 2;
    if (r.level2) {
      r.pole_off = n_states;
      n_states += r.C * r.nops;
    }
    r.qc_off = n_states;
    n_states += r.C;
    if (!r.dac) {
      r.qx_off = n_states;
      n_states += r.P;
    } else {
      r.aux_off = n_aux;
      n_aux += 1 + r.C;
    }
    if (r.dac) {
      r.w0 = f.Ycx * v0[l];
      r.w1 = f.Ycx * dv[l];
      r.z0 = f.C1cx * v0[l];
      r.z1 = f.C1cx * dv[l];
      r.u0 = block_mv(f.Yxx, f.m->row_blocks, v0[l]);
      r.u1 = block_mv(f.Yxx, f.m->row_blocks, dv[l]);
      r.uc0 = block_mv(f.C1xx, f.m->row_blocks, v0[l]);
      r.uc1 = block_mv(f.C1xx, f.m->row_blocks, dv[l]);
    }
    r.Ecc = f.Ycc;
    if (!r.dac) {
      r.Ecx = f.Ycx;
      r.Exc = f.Yxc;
      r.Exx = f.Yxx;
    }
  }

  // Port voltages of layer l in work state ws at ramp position rr (0..1 along the DAC edge).
  auto col_volts = [&](const Work& ws, int l) {
    const LayerRun& r = lr[l];
    const Layout& Lo = I.layers[l].kernel.L;
    VectorXd c(r.C);
    for (int j = 0; j < r.C; ++j) c[j] = ws.x[l][static_cast<size_t>(j) * r.n + Lo.c];
    return c;
  };
  auto row_volts = [&](const Work& ws, int l, double rr) {
    const FastLayer& f = I.layers[l];
    VectorXd vx = v0[l] + rr * dv[l];
    if (!lr[l].dac) {
      const Layout& Lp = I.layers[l - 1].kernel.L;
      const int np = lr[l - 1].n;
      for (int p = 0; p < f.first_dac; ++p)
        vx[p] = ws.x[l - 1][static_cast<size_t>(p / 2) * np + (p % 2 == 0 ? Lp.h : Lp.hn)];
    }
    return vx;
  };
  const double tr = cfg.dac_tr;
  auto ramp = [&](double t) { return std::clamp(t / tr, 0.0, 1.0); };

  // Pole-node voltages [V] of every level-2 op-amp (DC when gp = 0 and no history).
  auto pole = [&](const Work& ws, int l, int j, int k, double gp, const double* hist) {
    const FastLayer& f = I.layers[l];
    const Layout& Lo = f.kernel.L;
    const double* x = &ws.x[l][static_cast<size_t>(j) * Lo.n];
    const int inn = k == kOpTia ? Lo.c : k == kOpRect ? Lo.s : Lo.t;
    const double vos = f.li->vos[static_cast<size_t>(j) * kNumPeripheryOps + k];
    const double hp = hist ? -hist[lr[l].pole_off + j * lr[l].nops + k] : 0.0;
    return f.kernel.pole_of(x[inn], vos, gp, hp);
  };

  // The array products that depend on the unknowns, per layer: charges C1 v and conductive currents G v at the
  // columns (qc, gc) and free rows (qx, gx), without a DAC layer's fixed-row terms (z0 + rr z1, w0 + rr w1). Kept at
  // the last two accepted points: the predictor's are their linear extrapolation (the products are linear), so a
  // step costs one set of C1 products (the new charges); G v follows from the currents the sweeps keep up to date.
  struct Products {
    VectorXd qc, gc, qx, gx;
  };
  std::vector<Products> pr0(L), pr1(L), pr2(L);  // the point being solved, the last accepted, the one before
  // One of a layer's port relations (the admittances Y or the moments C1) applied to the unknown-dependent port
  // voltages: oc at the columns (a DAC layer: its columns' part only), ox at free rows (not for DAC layers).
  auto apply = [&](const Work& ws, int l, double rr, const MatrixXd& Mcc, const MatrixXd& Mcx, const MatrixXd& Mxc,
                   const std::vector<MatrixXd>& Mxx, VectorXd& oc, VectorXd& ox) {
    const FastLayer& f = I.layers[l];
    const VectorXd c = col_volts(ws, l);
    oc.noalias() = Mcc * c;
    if (lr[l].dac) return;
    const VectorXd vx = row_volts(ws, l, rr);
    oc.noalias() += Mcx * vx;
    ox = block_mv(Mxx, f.m->row_blocks, vx);
    ox.noalias() += Mxc * c;
  };
  // States of ws into q (charges) and a (aux); pole voltages into pv (per layer, C x nops); the charge products into
  // pr0.
  std::vector<std::vector<double>> pv(L);
  auto charges = [&](const Work& ws, double rr, double gp, const double* hist, double* q, double* a) {
    for (int l = 0; l < L; ++l) {
      const LayerRun& r = lr[l];
      pv[l].assign(static_cast<size_t>(r.C) * r.nops, std::nan(""));
      if (r.level2)
        for (int j = 0; j < r.C; ++j)
          for (int k = 0; k < r.nops; ++k) {
            const double p = pole(ws, l, j, k, gp, hist);
            pv[l][j * r.nops + k] = p;
            q[r.pole_off + j * r.nops + k] = opamp_model::kCpole * p;
          }
      const FastLayer& f = I.layers[l];
      Products& p = pr0[l];
      apply(ws, l, rr, f.C1cc, f.C1cx, f.C1xc, f.C1xx, p.qc, p.qx);
      if (r.dac) {
        Eigen::Map<VectorXd>(q + r.qc_off, r.C) = p.qc + r.z0 + rr * r.z1;
        a[r.aux_off] = rr;
        const VectorXd c = col_volts(ws, l);
        std::copy(c.data(), c.data() + r.C, a + r.aux_off + 1);
      } else {
        Eigen::Map<VectorXd>(q + r.qc_off, r.C) = p.qc;
        Eigen::Map<VectorXd>(q + r.qx_off, r.P) = p.qx;
      }
    }
  };
  // After the sweeps of a step with companion coefficient ag0 and history hist: the conductive products from the
  // currents the sweeps keep (ws.ic = G v + ag0 q + hist at the columns, likewise ws.ix at free rows).
  auto conductive = [&](const Work& ws, double rr, double ag0, const double* hist) {
    for (int l = 0; l < L; ++l) {
      const LayerRun& r = lr[l];
      Products& p = pr0[l];
      const Eigen::Map<const VectorXd> ic(ws.ic[l].data(), r.C), hc(hist + r.qc_off, r.C);
      if (r.dac) {
        p.gc = ic - ag0 * (p.qc + r.z0 + rr * r.z1) - hc - (r.w0 + rr * r.w1);
      } else {
        p.gc = ic - ag0 * p.qc - hc;
        p.gx = Eigen::Map<const VectorXd>(ws.ix[l].data(), r.P) - ag0 * p.qx -
               Eigen::Map<const VectorXd>(hist + r.qx_off, r.P);
      }
    }
  };
  // The conductive products computed directly (at t = 0, after charges()).
  auto exact_conductive = [&](const Work& ws, double rr) {
    for (int l = 0; l < L; ++l) {
      const FastLayer& f = I.layers[l];
      apply(ws, l, rr, f.Ycc, f.Ycx, f.Yxc, f.Yxx, pr0[l].gc, pr0[l].gx);
    }
  };

  // Absorbed powers [W] by component at state ws (pole voltages pv), ramp rr; iaux (per aux state): the
  // derivatives of the step (null at DC). The arrays absorb what their ports deliver: at the
  // columns and free rows the currents the sweeps keep (ws.ic, ws.ix: conductive and capacitive); a DAC layer's
  // rows vx.(Yxx vx + Yxc c) = vx.(u0 + rr u1) + (w0 + rr w1).c and the capacitive vx.(uc1 D[rr]) + (z0 + rr z1).D[c]
  // (see n_aux). The DAC output resistances' share is the DACs'.
  const double iq = static_cast<int>(opamp_param(cfg, "level")) == 2 ? opamp_param(cfg, "iq") : 0.0;
  auto powers = [&](const Work& ws, double rr, const double* iaux, double* pw) {
    std::fill(pw, pw + kNumEnergyParts, 0.0);
    for (int l = 0; l < L; ++l) {
      const FastLayer& f = I.layers[l];
      const LayerRun& r = lr[l];
      const Kernel& K = f.kernel;
      const Layout& Lo = K.L;
      const VectorXd c = col_volts(ws, l), vx = row_volts(ws, l, rr);
      pw[kPartCrossbar] += c.dot(Eigen::Map<const VectorXd>(ws.ic[l].data(), r.C));
      if (!r.dac) {
        pw[kPartCrossbar] += vx.dot(Eigen::Map<const VectorXd>(ws.ix[l].data(), r.P));
      } else {
        pw[kPartCrossbar] += vx.dot(r.u0 + rr * r.u1) + (r.w0 + rr * r.w1).dot(c);
        if (iaux) {
          const Eigen::Map<const VectorXd> dc(iaux + r.aux_off + 1, r.C);
          pw[kPartCrossbar] += vx.dot(r.uc1) * iaux[r.aux_off] + (r.z0 + rr * r.z1).dot(dc);
        }
        if (cfg.dac_rout > 0) {  // every row's current: the C x P products
          VectorXd ix = r.u0 + rr * r.u1;
          ix.noalias() += f.Yxc * c;
          if (iaux) {
            ix += r.uc1 * iaux[r.aux_off];
            ix.noalias() += f.C1xc * Eigen::Map<const VectorXd>(iaux + r.aux_off + 1, r.C);
          }
          double rd = 0;
          for (int p = f.first_dac; p < r.P; ++p) rd += ix[p] * ix[p];
          pw[kPartDacs] += cfg.dac_rout * rd;
          pw[kPartCrossbar] -= cfg.dac_rout * rd;
        }
      }
      for (int j = 0; j < r.C; ++j) {
        const double* x = &ws.x[l][static_cast<size_t>(j) * r.n];
        const double* res = &f.li->res[static_cast<size_t>(j) * kNumPeripheryRes];
        const double* vos = &f.li->vos[static_cast<size_t>(j) * kNumPeripheryOps];
        auto opamp = [&](int k, int inn, int outn) {
          const OpampDc& op = K.op;
          const double vi = x[inn], vo = x[outn];
          double io;
          if (op.level == 0) return vo * x[Lo.br[k]];
          io = K.output_current(vi, vo, pv[l][j * r.nops + k], vos[k]);
          double p = op.level == 2 ? vi * op.ib : 0.0;
          if (std::isfinite(op.rin)) p += vi * vi / op.rin;
          return p + opamp_model::rail_power(iq, op.vpos, op.vneg, io) - vo * io;
        };
        const double c = x[Lo.c], y = x[Lo.y];
        pw[kPartOpamps] += opamp(kOpTia, Lo.c, Lo.y);
        pw[kPartOther] += (c - y) * (c - y) / res[kResRf];
        if (K.adc_g > 0) pw[kPartAdcs] += K.adc_g * y * y;
        if (!f.m->rectifier) continue;
        const double s = x[Lo.s], a = x[Lo.a], h = x[Lo.h], t = x[Lo.t], hn = x[Lo.hn];
        pw[kPartOpamps] += opamp(kOpRect, Lo.s, Lo.a) + opamp(kOpInv, Lo.t, Lo.hn);
        auto diode = [&](double va, double vj, double vk) {
          return (va - vk) * diode_model::current(K.di, vj - vk, K.gmin).cd;
        };
        pw[kPartActivation] += (y - s) * (y - s) / res[kResR1] + (h - s) * (h - s) / res[kResR2] +
                               h * h / res[kResRl] + (h - t) * (h - t) / res[kResInv1] +
                               (t - hn) * (t - hn) / res[kResInv2] +
                               diode(s, Lo.d1i >= 0 ? x[Lo.d1i] : s, a) + diode(a, Lo.d2i >= 0 ? x[Lo.d2i] : a, h);
      }
    }
  };

  // ---- settling band and the target outputs ----
  const FastLayer& fl = I.layers.back();
  const AdcSpec& adc = fl.m->adc_spec;
  const double band = 0.5 * (adc.vmax - adc.vmin) / static_cast<double>(adc_max_code(adc));
  auto near_final = [&](const Work& ws, double tol) {  // every layer's outputs within tol [V] of the target
    for (int l = 0; l < L; ++l) {
      const Layout& Lo = I.layers[l].kernel.L;
      for (int j = 0; j < lr[l].C; ++j) {
        const size_t o = static_cast<size_t>(j) * lr[l].n;
        if (std::fabs(ws.x[l][o + Lo.y] - wfin.x[l][o + Lo.y]) > tol) return false;
        if (Lo.h >= 0 && (std::fabs(ws.x[l][o + Lo.h] - wfin.x[l][o + Lo.h]) > tol ||
                          std::fabs(ws.x[l][o + Lo.hn] - wfin.x[l][o + Lo.hn]) > tol))
          return false;
      }
    }
    return true;
  };

  // ---- integration set-up (the engine's .tran driver, engine/an_tran.cpp) ----
  Options o;
  o.reltol = to_.reltol;
  o.abstol = to_.abstol;
  o.chgtol = to_.chgtol;
  o.trtol = to_.trtol;
  Integrator integ(n_states);
  LoadContext ctx;
  ctx.mode = LoadContext::Mode::Tran;
  ctx.q = integ.q0().data();
  Integrator aux(n_aux);  // prepared, finished and accepted with integ
  LoadContext actx;
  actx.mode = LoadContext::Mode::Tran;
  actx.q = aux.q0().data();
  charges(w, 0.0, 0.0, nullptr, ctx.q, actx.q);
  integ.start_from_dc(ctx);
  aux.start_from_dc(actx);
  exact_conductive(w, 0.0);
  pr1 = pr0;
  pr2 = pr0;
  w.ipole.assign(L, {});
  for (int l = 0; l < L; ++l) w.ipole[l].assign(static_cast<size_t>(lr[l].C) * 3, 0.0);
  for (int l = 0; l < L; ++l) {
    w.Ycc[l] = &lr[l].Ecc;
    if (!lr[l].dac) {
      w.Ycx[l] = &lr[l].Ecx;
      w.Yxc[l] = &lr[l].Exc;
      for (size_t b = 0; b < lr[l].Exx.size(); ++b) w.Yxx[l][b] = &lr[l].Exx[b];
    }
  }

  // The steps' solves: reltol and vntol both scaled from the DC path's (FastOptions: 1e-12, 1e-12 V).
  const double step_tol_scale = std::max(1.0, to_.newton_reltol / I.opt.reltol);
  const double tstop_nominal = opt.tstop > 0 ? opt.tstop : default_tstop(cfg, L);
  // Steps: at most the engine's tmax (tstop / points) where an output crosses the edge of its settling band (the
  // settling time is interpolated linearly there, as the engine does), step_factor times that elsewhere.
  const double h_fine = tstop_nominal / std::max(10, opt.points);
  const double tmax = to_.step_factor * h_fine;
  const double hmin = 1e-11 * h_fine;
  const double t_limit = 64 * tstop_nominal;

  // Recorded per accepted point: time, last-layer outputs, cumulative energies by part.
  const int nout = lr[L - 1].C;
  std::vector<double> T, Y, E;
  double pw_prev[kNumEnergyParts], e_prev[kNumEnergyParts] = {}, e_prev2[kNumEnergyParts] = {};
  auto record = [&](const Work& ws, double t, const double* e) {
    T.push_back(t);
    const Layout& Lo = fl.kernel.L;
    for (int j = 0; j < nout; ++j) Y.push_back(ws.x[L - 1][static_cast<size_t>(j) * lr[L - 1].n + Lo.y]);
    E.insert(E.end(), e, e + kNumEnergyParts);
  };
  powers(w, 0.0, nullptr, pw_prev);  // pv from charges() above
  record(w, 0.0, e_prev);

  // Accepted solutions for the predictor and for rejected steps.
  std::vector<std::vector<double>> x1 = w.x, x2 = w.x, lim1 = w.lim;
  double h1 = 0;
  double t = 0.0;
  StepControl sc;  // the engine's .tran step control
  sc.delta = std::min(tstop_nominal / 100, tmax) / 10;
  sc.save_delta = tstop_nominal / 50;
  double bp = tr;
  constexpr int kSettledPoints = 5;
  int settled_points = 0;
  bool inside = false;  // every last-layer output within its band at the last accepted point
  long accepted = 0;
  double last_ag0 = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> iaux(n_aux);
  for (;;) {
    bool hits_break = sc.propose(t, bp, inside ? to_.tail_factor * tmax : tmax);
    double tn = 0;
    for (;;) {
      const double delta = sc.delta;
      tn = hits_break ? bp : t + delta;
      integ.prepare(ctx, Integration::Trapezoidal, sc.order, delta);
      aux.prepare(actx, Integration::Trapezoidal, sc.order, delta);
      const double ag0 = ctx.ag0, rr = ramp(tn);
      // Companion admittances (when the step changed) and the pole capacitors' history.
      if (ag0 != last_ag0) {
        for (int l = 0; l < L; ++l) {
          const FastLayer& f = I.layers[l];
          LayerRun& r = lr[l];
          r.Ecc = f.Ycc + ag0 * f.C1cc;
          if (!r.dac) {
            r.Ecx = f.Ycx + ag0 * f.C1cx;
            r.Exc = r.Ecx.transpose();
            for (size_t b = 0; b < r.Exx.size(); ++b) r.Exx[b] = f.Yxx[b] + ag0 * f.C1xx[b];
          }
        }
        last_ag0 = ag0;
      }
      w.gpole = ag0 * opamp_model::kCpole;
      for (int l = 0; l < L; ++l)
        if (lr[l].level2)
          for (int j = 0; j < lr[l].C; ++j)
            for (int k = 0; k < lr[l].nops; ++k) w.ipole[l][j * 3 + k] = -ctx.hist[lr[l].pole_off + j * lr[l].nops + k];
      // Predictor (the engine's: linear extrapolation from the last two accepted points), and the array products
      // there: the same extrapolation of the stored ones (xf = 0: the last accepted point).
      const double xf = !sc.first && h1 > 0 ? delta / h1 : 0.0;
      if (xf != 0)
        for (int l = 0; l < L; ++l)
          for (size_t u = 0; u < w.x[l].size(); ++u) w.x[l][u] = x1[l][u] + xf * (x1[l][u] - x2[l][u]);
      // Array currents at the predicted voltages: G v + ag0 C1 v + history (the sweeps keep them up to date).
      for (int l = 0; l < L; ++l) {
        const LayerRun& r = lr[l];
        const Products &p1 = pr1[l], &p2 = pr2[l];
        Eigen::Map<VectorXd> ic(w.ic[l].data(), r.C);
        ic = (1 + xf) * (p1.gc + ag0 * p1.qc) - xf * (p2.gc + ag0 * p2.qc) +
             Eigen::Map<const VectorXd>(ctx.hist + r.qc_off, r.C);
        if (r.dac) {
          ic += r.w0 + rr * r.w1 + ag0 * (r.z0 + rr * r.z1);
        } else {
          Eigen::Map<VectorXd>(w.ix[l].data(), r.P) = (1 + xf) * (p1.gx + ag0 * p1.qx) - xf * (p2.gx + ag0 * p2.qx) +
                                                      Eigen::Map<const VectorXd>(ctx.hist + r.qx_off, r.P);
        }
        const VectorXd vx = row_volts(w, l, rr);
        std::copy(vx.data(), vx.data() + r.P, w.vx[l].begin());
      }
      w.failed = false;
      w.tol_scale = step_tol_scale;
      I.sweep(w, 0, L, sample, true);
      double newdelta = delta;
      bool ok = !w.failed;
      if (!ok) {
        newdelta = delta / 8;
        sc.order = 1;
      } else {
        charges(w, rr, w.gpole, ctx.hist, ctx.q, actx.q);
        integ.finish(ctx);
        aux.finish(actx);
        conductive(w, rr, ag0, ctx.hist);
        if (!sc.first) ok = sc.judge(integ, o, Integration::Trapezoidal, newdelta);
        // An output crossing its band edge within a coarse step: redo the step finely.
        if (ok && delta > 1.01 * h_fine) {
          const Layout& Lo = fl.kernel.L;
          for (int j = 0; j < lr[L - 1].C && ok; ++j) {
            const size_t oj = static_cast<size_t>(j) * lr[L - 1].n + Lo.y;
            const double fin = wfin.x[L - 1][oj];
            if ((std::fabs(x1[L - 1][oj] - fin) <= band) != (std::fabs(w.x[L - 1][oj] - fin) <= band)) {
              ok = false;
              newdelta = h_fine;
            }
          }
        }
      }
      if (ok) {
        sc.delta = newdelta;
        break;
      }
      w.x = x1;
      w.lim = lim1;
      hits_break = false;
      if (!sc.retry(newdelta, hmin))
        return Status::numerical(fmt::format("network transient of sample {}: time step too small at {:.6g} s{}",
                                             sample, t, w.failed ? " (the step's sweeps did not converge)" : ""));
    }
    const double step = tn - t;
    t = tn;
    for (int s = 0; s < n_aux; ++s) iaux[s] = actx.ag0 * actx.q[s] + actx.hist[s];
    integ.accept();
    aux.accept();
    std::swap(pr2, pr1);
    std::swap(pr1, pr0);
    x2 = std::move(x1);
    x1 = w.x;
    lim1 = w.lim;
    h1 = step;
    sc.first = false;
    ++accepted;
    // Energies: this point's powers integrated with the step's rule.
    double pw[kNumEnergyParts], e[kNumEnergyParts];
    powers(w, ramp(t), iaux.data(), pw);
    for (int p = 0; p < kNumEnergyParts; ++p) {
      e[p] = integ.integrate(e_prev[p], e_prev2[p], pw[p], pw_prev[p]);
      e_prev2[p] = e_prev[p];
      e_prev[p] = e[p];
      pw_prev[p] = pw[p];
    }
    record(w, t, e);
    sc.at_break = t >= bp;
    if (sc.at_break) bp = std::numeric_limits<double>::infinity();
    // Done when every layer's outputs have stayed within a tenth of the band of their final (DC) values for
    // kSettledPoints points in a row (the engine's run instead goes on to twice the settling time).
    settled_points = near_final(w, 0.1 * band) ? settled_points + 1 : 0;
    inside = true;
    for (int j = 0; j < nout && inside; ++j) {
      const size_t oj = static_cast<size_t>(j) * lr[L - 1].n + fl.kernel.L.y;
      inside = std::fabs(w.x[L - 1][oj] - wfin.x[L - 1][oj]) <= band;
    }
    if (t >= tr && settled_points >= kSettledPoints) break;
    if (t > t_limit || accepted >= to_.max_points)
      return Status::numerical(fmt::format("network transient of sample {}: the outputs have not settled by {:.4g} s "
                                           "({} time points)", sample, t, accepted));
  }

  // ---- settling time, energies there, classes (as energy.cpp reads the engine's waveforms) ----
  const size_t np = T.size();
  double settle = 0;
  for (int j = 0; j < nout; ++j) {
    // The final value: the DC solution of the new input (the engine takes the value at its last time point, at
    // least twice the settling time; the run here stops nearer, so its last point is a poorer stand-in).
    const double fin = wfin.x[L - 1][static_cast<size_t>(j) * lr[L - 1].n + fl.kernel.L.y];
    for (size_t k = np - 1; k-- > 0;) {
      const double vk = Y[k * nout + j], vk1 = Y[(k + 1) * nout + j];
      if (std::fabs(vk - fin) <= band) continue;
      const double d0 = std::fabs(vk - fin), d1 = std::fabs(vk1 - fin);
      const double wgt = d0 > d1 ? (d0 - band) / (d0 - d1) : 1.0;
      settle = std::max(settle, T[k] + wgt * (T[k + 1] - T[k]));
      break;
    }
  }
  out.settle_s = settle;
  out.tstop_s = t;
  out.timepoints = accepted;
  for (int p = 0; p < kNumEnergyParts; ++p) {
    out.energy_parts_j[p] = interp(T, E, kNumEnergyParts, p, settle);
    out.energy_j += out.energy_parts_j[p];
  }
  auto class_at = [&](double ts) {
    int best = 0;
    long best_code = -1;
    for (int j = 0; j < nout; ++j) {
      const long k = adc_code(hw, L - 1, j, interp(T, Y, nout, j, ts));
      if (k > best_code) {
        best_code = k;
        best = j;
      }
    }
    return best;
  };
  out.cls = class_at(t);
  for (double ts : sample_times) out.cls_at.push_back(class_at(ts));
  for (size_t k = 0; k < np; ++k) {
    const int c = class_at(T[k]);
    if (out.class_v.empty() || c != out.class_v.back()) {
      out.class_t.push_back(T[k]);
      out.class_v.push_back(c);
    }
  }
  if (opt.keep_waveforms) {
    out.t = T;
    out.y.assign(nout, std::vector<double>(np));
    for (size_t k = 0; k < np; ++k)
      for (int j = 0; j < nout; ++j) out.y[j][k] = Y[k * nout + j];
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - clock0).count();
  return {};
}

}  // namespace anasim::nn
