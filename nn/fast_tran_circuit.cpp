// The network transient's fast path (fast_tran.hpp), its circuit: the lanes' array products, the neurons' pole
// voltages and absorbed powers, the states (charges) and the absorbed powers by component at a lane's state.
#include <algorithm>
#include <cmath>
#include "devices/opamp_model.hpp"
#include "nn/fast_tran_lanes.hpp"

namespace anasim::nn::fast_tran {

namespace {

// out[i] (+)= sum_k M(i, k) v[k] for every lane (M column-major, out of M.rows() and v of M.cols() entries): one
// pass over M, four columns at a time (axpy4, as the sweeps' propagation); each lane's sums in the same order
// whatever the other lanes hold.
void product_lanes(const MatrixXd& M, const Vd* v, Vd* out, bool add) {
  const int R = static_cast<int>(M.rows()), K = static_cast<int>(M.cols());
  if (!add) std::fill(out, out + R, Vd{});
  int k = 0;
  for (; k + 4 <= K; k += 4)
    axpy4(out, M.col(k).data(), v[k], M.col(k + 1).data(), v[k + 1], M.col(k + 2).data(), v[k + 2],
          M.col(k + 3).data(), v[k + 3], R);
  for (; k < K; ++k) axpy(out, M.col(k).data(), v[k], R);
}

}  // namespace

// Port voltages of layer l in work state ws at ramp position rr (0..1 along the DAC edge).
VectorXd LaneStepper::col_volts(const Work& ws, int l) const {
  const LayerRun& r = lr[l];
  const Layout& Lo = I.layers[l].kernel.L;
  VectorXd c(r.C);
  for (int j = 0; j < r.C; ++j) c[j] = ws.x[l][static_cast<size_t>(j) * r.n + Lo.c];
  return c;
}

VectorXd LaneStepper::row_volts(const Lane& ln, const Work& ws, int l, double rr) const {
  const FastLayer& f = I.layers[l];
  VectorXd vx = ln.v0[l] + rr * ln.dv[l];
  if (!lr[l].dac) {
    const Layout& Lp = I.layers[l - 1].kernel.L;
    const int np = lr[l - 1].n;
    for (int p = 0; p < f.first_dac; ++p)
      vx[p] = ws.x[l - 1][static_cast<size_t>(p / 2) * np + (p % 2 == 0 ? Lp.h : Lp.hn)];
  }
  return vx;
}

// One of the layers' port relations (the admittances Y, or the moments C1 when `moments`) applied to the
// unknown-dependent port voltages of the lanes `group` (at each lane's ramp position rr), into their pr0: member
// oc at the columns (a DAC layer: its columns' part only), ox at free rows (not for DAC layers). One pass over
// each matrix for all of them (product_lanes: the matrices are read once per step, not once per lane; unused
// lanes zero), each lane's sums as they would be alone, so that an image's result does not depend on the images
// beside it.
void LaneStepper::port_products(const std::vector<Lane*>& group, bool moments, VectorXd Products::*oc,
                                VectorXd Products::*ox) {
  const int m = static_cast<int>(group.size());
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = I.layers[l];
    const LayerRun& r = lr[l];
    const Layout& Lo = f.kernel.L;
    const MatrixXd &Mcc = moments ? f.C1cc : f.Ycc, &Mcx = moments ? f.C1cx : f.Ycx,
                   &Mxc = moments ? f.C1xc : f.Yxc;
    const std::vector<MatrixXd>& Mxx = moments ? f.C1xx : f.Yxx;
    Vc[l].assign(r.C, Vd{});
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < r.C; ++j) Vc[l][j][i] = group[i]->w.x[l][static_cast<size_t>(j) * r.n + Lo.c];
    Oc[l].resize(r.C);
    product_lanes(Mcc, Vc[l].data(), Oc[l].data(), false);
    if (!r.dac) {
      Vx[l].assign(r.P, Vd{});
      for (int i = 0; i < m; ++i) {
        const VectorXd vx = row_volts(*group[i], group[i]->w, l, group[i]->rr);
        for (int q = 0; q < r.P; ++q) Vx[l][q][i] = vx[q];
      }
      product_lanes(Mcx, Vx[l].data(), Oc[l].data(), true);
      Ox[l].resize(r.P);
      for (size_t b = 0; b + 1 < f.m->row_blocks.size(); ++b) {
        const int r0 = f.m->row_blocks[b];
        product_lanes(Mxx[b], Vx[l].data() + r0, Ox[l].data() + r0, false);
      }
      product_lanes(Mxc, Vc[l].data(), Ox[l].data(), true);
    }
    for (int i = 0; i < m; ++i) {
      Products& p = group[i]->pr0[l];
      VectorXd& pc = p.*oc;
      pc.resize(r.C);
      for (int j = 0; j < r.C; ++j) pc[j] = Oc[l][j][i];
      if (!r.dac) {
        VectorXd& px = p.*ox;
        px.resize(r.P);
        for (int q = 0; q < r.P; ++q) px[q] = Ox[l][q][i];
      }
    }
  }
}

// The periphery of every neuron for the lanes g (at most kLanes), side by side as in the sweeps (each lane's
// results independent of the others): the level-2 pole voltages [V] into each lane's pv, at its pole companion
// conductance and history (dc: none, gp = 0), and the absorbed powers [W] by part into its pwn. The op-amps'
// include what their rails deliver (opamp_model::rail_power); the resistors, the ADC inputs and the diodes absorb
// v i. The DAC output resistances' share is the DACs' (powers()).
void LaneStepper::neurons(const std::vector<Lane*>& g, bool dc) {
  const int m = static_cast<int>(g.size());
  const Lane* src[kLanes];
  for (int b = 0; b < kLanes; ++b) src[b] = g[std::min(b, m - 1)];  // unused lanes repeat the last one
  Vd gp;
  for (int b = 0; b < kLanes; ++b) gp[b] = dc ? 0.0 : src[b]->w.gpole;
  for (Lane* ln : g) std::fill(ln->pwn, ln->pwn + kNumEnergyParts, 0.0);
  auto sq = [](Vd a) { return vsqrt(a); };
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = I.layers[l];
    const LayerRun& r = lr[l];
    const Kernel& K = f.kernel;
    const OpampDc& op = K.op;
    const Layout& Lo = K.L;
    for (Lane* ln : g) ln->pv[l].assign(static_cast<size_t>(r.C) * r.nops, std::nan(""));
    for (int j = 0; j < r.C; ++j) {
      Vd x[kMaxLocal];
      for (int k = 0; k < r.n; ++k)
        for (int b = 0; b < kLanes; ++b) x[k][b] = src[b]->w.x[l][static_cast<size_t>(j) * r.n + k];
      const double* res = &f.li->res[static_cast<size_t>(j) * kNumPeripheryRes];
      const double* vos = &f.li->vos[static_cast<size_t>(j) * kNumPeripheryOps];
      Vd pv[kNumPeripheryOps];
      std::fill(pv, pv + kNumPeripheryOps, splat(std::nan("")));  // (level 2 only)
      if (r.level2)
        for (int k = 0; k < r.nops; ++k) {
          Vd hp;
          for (int b = 0; b < kLanes; ++b) hp[b] = dc ? 0.0 : -src[b]->ctx.hist[r.pole_off + j * r.nops + k];
          const int inn = k == kOpTia ? Lo.c : k == kOpRect ? Lo.s : Lo.t;
          pv[k] = K.pole_of(x[inn], vos[k], gp, hp);
          for (int b = 0; b < m; ++b) g[b]->pv[l][j * r.nops + k] = pv[k][b];
        }
      auto opamp = [&](int k, int inn, int outn) {
        const Vd vi = x[inn], vo = x[outn];
        if (op.level == 0) return vo * x[Lo.br[k]];
        const Vd io = K.output_current(vi, vo, pv[k], vos[k]);
        Vd p = op.level == 2 ? vi * op.ib : Vd{};
        if (std::isfinite(op.rin)) p += vi * vi / op.rin;
        return p + opamp_model::rail_power(iq, op.vpos, op.vneg, io, sq) - vo * io;
      };
      Vd pw[kNumEnergyParts] = {};
      const Vd c = x[Lo.c], y = x[Lo.y];
      pw[kPartOpamps] += opamp(kOpTia, Lo.c, Lo.y);
      pw[kPartOther] += (c - y) * (c - y) / res[kResRf];
      if (K.adc_g > 0) pw[kPartAdcs] += K.adc_g * y * y;
      if (f.m->rectifier) {
        const Vd s = x[Lo.s], a = x[Lo.a], h = x[Lo.h], t = x[Lo.t], hn = x[Lo.hn];
        pw[kPartOpamps] += opamp(kOpRect, Lo.s, Lo.a) + opamp(kOpInv, Lo.t, Lo.hn);
        auto diode = [&](Vd va, Vd vj, Vd vk) { return (va - vk) * K.diode_current(vj - vk); };
        pw[kPartActivation] += (y - s) * (y - s) / res[kResR1] + (h - s) * (h - s) / res[kResR2] +
                               h * h / res[kResRl] + (h - t) * (h - t) / res[kResInv1] +
                               (t - hn) * (t - hn) / res[kResInv2] +
                               diode(s, Lo.d1i >= 0 ? x[Lo.d1i] : s, a) + diode(a, Lo.d2i >= 0 ? x[Lo.d2i] : a, h);
      }
      for (int b = 0; b < m; ++b)
        for (int p = 0; p < kNumEnergyParts; ++p) g[b]->pwn[p] += pw[p][b];
    }
  }
}

// States of the lane's Work into q (charges) and a (aux), with the charge products already in pr0 (qc, qx:
// port_products of the moments) and the pole voltages in pv (neurons()).
void LaneStepper::charges(Lane& ln, double rr, double* q, double* a) const {
  const Work& ws = ln.w;
  for (int l = 0; l < L; ++l) {
    const LayerRun& r = lr[l];
    if (r.level2)
      for (int u = 0; u < r.C * r.nops; ++u) q[r.pole_off + u] = opamp_model::kCpole * ln.pv[l][u];
    Products& p = ln.pr0[l];
    if (r.dac) {
      const DacLayer& d = ln.dl[l];
      Eigen::Map<VectorXd>(q + r.qc_off, r.C) = p.qc + d.z0 + rr * d.z1;
      a[r.aux_off] = rr;
      const VectorXd c = col_volts(ws, l);
      std::copy(c.data(), c.data() + r.C, a + r.aux_off + 1);
    } else {
      Eigen::Map<VectorXd>(q + r.qc_off, r.C) = p.qc;
      Eigen::Map<VectorXd>(q + r.qx_off, r.P) = p.qx;
    }
  }
}

// After the sweeps of a step with companion coefficient ag0 and history hist: the conductive products from the
// currents the sweeps keep (ws.ic = G v + ag0 q + hist at the columns, likewise ws.ix at free rows).
void LaneStepper::conductive(Lane& ln, double rr, double ag0, const double* hist) const {
  const Work& ws = ln.w;
  for (int l = 0; l < L; ++l) {
    const LayerRun& r = lr[l];
    Products& p = ln.pr0[l];
    const Eigen::Map<const VectorXd> ic(ws.ic[l].data(), r.C), hc(hist + r.qc_off, r.C);
    if (r.dac) {
      const DacLayer& d = ln.dl[l];
      p.gc = ic - ag0 * (p.qc + d.z0 + rr * d.z1) - hc - (d.w0 + rr * d.w1);
    } else {
      p.gc = ic - ag0 * p.qc - hc;
      p.gx = Eigen::Map<const VectorXd>(ws.ix[l].data(), r.P) - ag0 * p.qx -
             Eigen::Map<const VectorXd>(hist + r.qx_off, r.P);
    }
  }
}

// Absorbed powers [W] by component at the lane's state, ramp rr: the neurons' (pwn, from neurons() at this state)
// and the arrays'; iaux (per aux state): the derivatives of the step (null at DC). The arrays absorb what their
// ports deliver: at the columns and free rows the currents the sweeps keep (ws.ic, ws.ix: conductive and
// capacitive); a DAC layer's rows vx.(Yxx vx + Yxc c) = vx.(u0 + rr u1) + (w0 + rr w1).c and the capacitive
// vx.(uc1 D[rr]) + (z0 + rr z1).D[c] (see n_aux). The DAC output resistances' share is the DACs'.
void LaneStepper::powers(const Lane& ln, double rr, const double* iaux, double* pw) const {
  const Work& ws = ln.w;
  std::fill(pw, pw + kNumEnergyParts, 0.0);
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = I.layers[l];
    const LayerRun& r = lr[l];
    const VectorXd c = col_volts(ws, l);
    pw[kPartCrossbar] += c.dot(Eigen::Map<const VectorXd>(ws.ic[l].data(), r.C));
    if (!r.dac) {
      pw[kPartCrossbar] += row_volts(ln, ws, l, rr).dot(Eigen::Map<const VectorXd>(ws.ix[l].data(), r.P));
    } else {
      const DacLayer& d = ln.dl[l];
      pw[kPartCrossbar] += d.a0 + rr * (d.a1 + rr * d.a2) + (d.w0 + rr * d.w1).dot(c);
      if (iaux) {
        const Eigen::Map<const VectorXd> dc(iaux + r.aux_off + 1, r.C);
        pw[kPartCrossbar] += (d.b0 + rr * d.b1) * iaux[r.aux_off] + (d.z0 + rr * d.z1).dot(dc);
      }
      if (cfg.dac_rout > 0) {  // every row's current: the C x P products
        VectorXd ix = d.u0 + rr * d.u1;
        ix.noalias() += f.Yxc * c;
        if (iaux) {
          ix += d.uc1 * iaux[r.aux_off];
          ix.noalias() += f.C1xc * Eigen::Map<const VectorXd>(iaux + r.aux_off + 1, r.C);
        }
        double rd = 0;
        for (int p = f.first_dac; p < r.P; ++p) rd += ix[p] * ix[p];
        pw[kPartDacs] += cfg.dac_rout * rd;
        pw[kPartCrossbar] -= cfg.dac_rout * rd;
      }
    }
  }
  for (int p = 0; p < kNumEnergyParts; ++p) pw[p] += ln.pwn[p];
}

}  // namespace anasim::nn::fast_tran
