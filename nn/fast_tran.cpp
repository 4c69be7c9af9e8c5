// The network transient's fast path (see fast_tran.hpp): per image, time stepping of the port-reduced circuit with
// the engine's integrator and step control, the DC path's sweeps for each step, energies by component, settling.
#include "nn/fast_tran.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <fmt/format.h>
#include "devices/opamp_model.hpp"
#include "engine/integrator.hpp"
#include "nn/fast_tran_lanes.hpp"

namespace anasim::nn {

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
  std::vector<ImageTransient> outs;
  std::vector<Status> st = run_lanes({Item{&codes, &from, sample}}, 1, opt, sample_times, outs);
  out = std::move(outs[0]);
  return st[0];
}

std::vector<Status> FastTransient::run_block(const std::vector<Item>& items, const TransientOptions& opt,
                                             const std::vector<double>& sample_times,
                                             std::vector<ImageTransient>& outs) const {
  return run_lanes(items, fast::kLanes, opt, sample_times, outs);
}

int FastTransient::lanes() { return fast::kLanes; }

std::vector<Status> FastTransient::run_lanes(const std::vector<Item>& items, int slots, const TransientOptions& opt,
                                             const std::vector<double>& sample_times,
                                             std::vector<ImageTransient>& outs) const {
  const int n_items = static_cast<int>(items.size());
  outs.assign(n_items, ImageTransient{});
  std::vector<Status> status(n_items);
  if (!hw_) {
    status.assign(n_items, Status::fail(ErrorKind::Other, "FastTransient::run before prepare"));
    return status;
  }
  fast_tran::LaneStepper(fe_.impl(), *hw_, to_, slots, items, opt, sample_times, outs, status).run();
  return status;
}

}  // namespace anasim::nn

namespace anasim::nn::fast_tran {

namespace {

// The entries of x that are not zero (an input step moves only the DAC rows whose codes change: most of an MNIST
// image's pixels stay at code 0).
std::vector<int> nonzeros(const VectorXd& x) {
  std::vector<int> nz;
  for (int k = 0; k < x.size(); ++k)
    if (x[k] != 0) nz.push_back(k);
  return nz;
}

// y = M x for x whose nonzero entries are nz (M column-major): a pass over those columns only.
VectorXd sparse_mv(const MatrixXd& M, const VectorXd& x, const std::vector<int>& nz) {
  VectorXd y = VectorXd::Zero(M.rows());
  for (int k : nz) y.noalias() += x[k] * M.col(k);
  return y;
}

// y = blockdiag(B) x for the per-row-block matrices B of a layer (row_blocks: block boundaries), x's nonzero
// entries nz (ascending).
VectorXd block_mv(const std::vector<MatrixXd>& B, const std::vector<int>& row_blocks, const VectorXd& x,
                  const std::vector<int>& nz) {
  VectorXd y = VectorXd::Zero(x.size());
  size_t b = 0;
  for (int k : nz) {
    while (k >= row_blocks[b + 1]) ++b;
    const int r0 = row_blocks[b], nr = row_blocks[b + 1] - r0;
    y.segment(r0, nr).noalias() += x[k] * B[b].col(k - r0);
  }
  return y;
}

// Whether the DAC rows a and b are the same.
bool same_rows(const std::vector<VectorXd>& a, const std::vector<VectorXd>& b) {
  if (a.size() != b.size()) return false;
  for (size_t l = 0; l < a.size(); ++l)
    if (a[l].size() != b[l].size() || !(a[l].array() == b[l].array()).all()) return false;
  return true;
}

}  // namespace

LaneStepper::LaneStepper(const FastEvaluator::Impl& impl, const HardwareInstance& hw_, const FastTranOptions& to,
                         int slots, const std::vector<FastTransient::Item>& items_, const TransientOptions& opt_,
                         const std::vector<double>& sample_times_, std::vector<ImageTransient>& outs_,
                         std::vector<Status>& status_)
    : I(impl), hw(hw_), cfg(hw_.map->cfg), to_(to), items(items_), opt(opt_), sample_times(sample_times_),
      outs(outs_), status(status_), n_items(static_cast<int>(items_.size())), L(static_cast<int>(impl.layers.size())),
      batched(slots > 1), lr(L), lanes(std::max(1, std::min({slots, kLanes, n_items}))), tr(cfg.dac_tr), Vc(L),
      Vx(L), Oc(L), Ox(L), fl(impl.layers.back()) {
  // A DAC layer's row charges C1xx vx + C1xc c = uc0 + rr uc1 + C1xc c are linear in the ramp position rr and the
  // column voltages c, and the integration rule is linear: their currents are uc1 D[rr] + C1xc D[c], D the rule's
  // derivative, and the power into the rows vx.(uc1 D[rr]) + (C1cx vx).D[c] = (vx.uc1) D[rr] + (z0 + rr z1).D[c].
  // So rr and c are integrated as auxiliary states (`aux`, same rule and steps, outside the truncation-error
  // control, where the row charges contribute nothing: constant after the ramp, linear along it) instead of P row
  // charges, which would cost a P x C product per step.
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
    r.Ecc = f.Ycc;
    if (!r.dac) {
      r.Ecx = f.Ycx;
      r.Exc = f.Yxc;
      r.Exx = f.Yxx;
    }
  }
  // The level-2 op-amps' quiescent current [A], what their rails deliver beyond the output (neurons()).
  iq = static_cast<int>(opamp_param(cfg, "level")) == 2 ? opamp_param(cfg, "iq") : 0.0;

  // ---- settling band and the target outputs ----
  const AdcSpec& adc = fl.m->adc_spec;
  band = 0.5 * (adc.vmax - adc.vmin) / static_cast<double>(adc_max_code(adc));
  nout = lr[L - 1].C;
  // The steps on the outputs' approach (output_cap).
  kappa = std::sqrt(12 * to_.settle_error);
  kbdf = std::min(to_.approach_order, Integrator::kMaxOrder);
  for (int k = 1; k <= Integrator::kMaxOrder; ++k) kappa_k[k] = bdf_step_for_rate_error(k, to_.settle_error);
  // The steps' solves resolve voltages to reltol |v| + vntol, both scaled from the DC path's (FastOptions: 1e-12,
  // 1e-12 V) to FastTranOptions::newton_reltol.
  step_tol_scale = std::max(1.0, to_.newton_reltol / I.opt.reltol);
  v_resolved = 10 * I.opt.vntol * step_tol_scale;  // [V] (and 10 newton_reltol |v|)

  // ---- integration set-up (the engine's .tran driver, engine/an_tran.cpp) ----
  o = Options{};
  o.reltol = to_.reltol;
  o.abstol = to_.abstol;
  o.chgtol = to_.chgtol;
  o.trtol = to_.trtol;
  o_energy = o;
  o_energy.trtol = 1.0;
  // The charges' truncation tolerance is not asked below what the steps' solves resolve: each state's charge floor
  // is its capacitance times the solves' voltage tolerance over reltol (100 uV / 1e-3), so that a voltage near 0 is
  // held to 100 uV, the solve's vntol, not to reltol * chgtol / C (1e-8 V on the op-amps' 1-nF pole capacitors,
  // opamp_model::kCpole, where the inverter of a neuron at zero output then decided most steps). Capacitances: the
  // pole capacitors, the ports' own (diagonal) moments. Measured (2026-11-25, shipped network): 200 images within
  // 1.2e-4 of a tight run as before; 22% fewer time points and 60% fewer rejected steps (3 images); on the LM358
  // board the settling times then came out up to 7.5e-3 early (4.5e-3 before), which the outputs' exponential
  // approaches now bound (output_cap).
  qfloor.assign(static_cast<size_t>(n_states), 0.0);
  {
    const double vfloor = I.opt.vntol * step_tol_scale / o.reltol;  // [V]
    for (int l = 0; l < L; ++l) {
      const FastLayer& f = I.layers[l];
      const LayerRun& r = lr[l];
      if (r.level2)
        for (int u = 0; u < r.C * r.nops; ++u) qfloor[r.pole_off + u] = opamp_model::kCpole * vfloor;
      for (int j = 0; j < r.C; ++j) qfloor[r.qc_off + j] = std::fabs(f.C1cc(j, j)) * vfloor;
      if (!r.dac)
        for (int p = 0; p < r.P; ++p) {
          const int b = f.block_of_row[p], off = f.m->row_blocks[b];
          qfloor[r.qx_off + p] = std::fabs(f.C1xx[b](p - off, p - off)) * vfloor;
        }
    }
  }
  tstop_nominal = opt.tstop > 0 ? opt.tstop : default_tstop(cfg, L);
  // Steps: the engine's (tstop / points) is the unit of the largest (step_factor times it) and the smallest one the
  // outputs' time constants ask for (a quarter of it).
  h_fine = tstop_nominal / std::max(10, opt.points);
  tmax = to_.step_factor * h_fine;
  hmin = 1e-11 * h_fine;
  t_limit = 64 * tstop_nominal;
}

// The largest step the outputs' approach allows (FastTranOptions::settle_error). An output approaching its final
// value vf with time constant tau, v - vf ~ exp(-t / tau), is integrated by the trapezoidal rule with step h at the
// rate (1 + (h / tau)^2 / 12) / tau, so its settling time comes out (h / tau)^2 / 12 short, relatively. Each
// output's tau is the smaller of |v' / v''| and |v - vf| / |v'| (divided differences over the last three
// accepted points): both are tau for such an approach, and for an output that rings one of them is short at
// every phase (the first near a peak, the second near a crossing of vf). The cap is kappa min(tau) over every
// layer's outputs not yet within a tenth of the band, kappa = sqrt(12 eps). It lengthens the steps beyond
// FastTranOptions::step_factor's largest step. Where the two estimates of an output agree within kAgree (an
// exponential approach, not a ring or a kink), kappa tau also shortens the steps below that largest step, down to
// a quarter of the engine's step: the charges' truncation error does not see such a phase error, and on the
// LM358 board the settling times came out up to 7.5e-3 early without it.
//
// The approach (FastTranOptions::approach_order): where the steps are those of the exponential approaches (the
// last step at least 0.9 kappa tau_s, tau_s their shortest tau) and every other output not yet near its final
// value moves on a time scale of at least kSlower tau_s (the smaller of its two estimates; |v' / v''| only where
// v'' is resolved: a change of slope over a step above 10x the solves' voltage tolerance, as Newton's noise
// otherwise makes it short), the steps are the BDF's, at kappa_k tau_s for order k (the step at which its rate
// error is settle_error, bdf_step_for_rate_error: 0.20 tau at order 4 against the trapezoidal rule's 0.077 tau
// for 5e-4), from kApproachPoints such points in a row until the last layer is inside its band. Measured
// (2026-11-25, 200 images against tight runs of the trapezoidal rule): accepting a ring or a kink on the approach
// (every other output ignored) put the integrated design 1.0e-3 and the board 6.0e-4 off (kSlower 1: 5.2e-4 and
// 5.5e-4); with the condition above 3.5e-4 and 5.3e-4, the trapezoidal rule alone 3.0e-4 and 3.3e-4; on the
// shipped network 9.6e-5 (1.4e-4) for 35% fewer attempts.
void LaneStepper::output_cap(Lane& ln) {
  const Work& ws = ln.w;
  int k = 0;
  std::rotate(ln.yo, ln.yo + 2, ln.yo + 3);  // yo[0] <- the new point
  std::vector<double>& y0 = ln.yo[0];
  y0.clear();
  for (int l = 0; l < L; ++l)
    for (int j = 0; j < lr[l].C; ++j)
      y0.push_back(ws.x[l][static_cast<size_t>(j) * lr[l].n + I.layers[l].kernel.L.y]);
  ln.tau = 0;
  ln.tau_s = INFINITY;
  ln.approach = false;
  const size_t np = ln.T.size();  // t = 0 and the accepted points, this one last
  if (np < 4 || ln.t <= tr) return;
  const double h0 = ln.T[np - 1] - ln.T[np - 2], h1 = ln.T[np - 2] - ln.T[np - 3];
  double tau = INFINITY, tau_s = INFINITY, tau_other = INFINITY;
  for (int l = 0; l < L; ++l)
    for (int j = 0; j < lr[l].C; ++j, ++k) {
      const double vf = ln.wfin.x[l][static_cast<size_t>(j) * lr[l].n + I.layers[l].kernel.L.y];
      if (std::fabs(y0[k] - vf) <= 0.1 * band) continue;
      const double d1 = (y0[k] - ln.yo[1][k]) / h0, d2 = (ln.yo[1][k] - ln.yo[2][k]) / h1;
      const double v2 = 2 * (d1 - d2) / (h0 + h1), v1 = d1 + 0.5 * h0 * v2;
      const double t1 = std::fabs(v2) > 0 ? std::fabs(v1 / v2) : INFINITY;
      const double t2 = std::fabs(v1) > 0 ? std::fabs((y0[k] - vf) / v1) : INFINITY;
      tau = std::min(tau, std::min(t1, t2));
      if (std::isfinite(t1) && std::isfinite(t2) && std::max(t1, t2) <= kAgree * std::min(t1, t2)) {
        tau_s = std::min(tau_s, std::min(t1, t2));
      } else {
        const bool resolved = std::fabs(d1 - d2) * std::min(h0, h1) >
                              v_resolved + 10 * to_.newton_reltol * std::fabs(y0[k]);
        tau_other = std::min(tau_other, std::min(resolved ? t1 : INFINITY, t2));
      }
    }
  ln.tau = std::isfinite(tau) ? tau : 0;
  ln.tau_s = tau_s;
  ln.approach = std::isfinite(tau_s) && tau_other >= kSlower * tau_s && (ln.bdf || h0 >= 0.9 * kappa * tau_s);
}

// Every layer's outputs within tol [V] of the target.
bool LaneStepper::near_final(const Lane& ln, double tol) const {
  const Work &ws = ln.w, &wf = ln.wfin;
  for (int l = 0; l < L; ++l) {
    const Layout& Lo = I.layers[l].kernel.L;
    for (int j = 0; j < lr[l].C; ++j) {
      const size_t base = static_cast<size_t>(j) * lr[l].n;
      if (std::fabs(ws.x[l][base + Lo.y] - wf.x[l][base + Lo.y]) > tol) return false;
      if (Lo.h >= 0 && (std::fabs(ws.x[l][base + Lo.h] - wf.x[l][base + Lo.h]) > tol ||
                        std::fabs(ws.x[l][base + Lo.hn] - wf.x[l][base + Lo.hn]) > tol))
        return false;
    }
  }
  return true;
}

void LaneStepper::record(Lane& ln, double t, const double* e) {
  ln.T.push_back(t);
  for (int j = 0; j < nout; ++j) ln.Y.push_back(ln.w.x[L - 1][out_index(j)]);
  ln.E.insert(ln.E.end(), e, e + kNumEnergyParts);
}

// Starts item k in slot ln: the DAC rows before and after the step, the DAC layers' products with them, the DC
// states before (t = 0) and after (the target), the integrators from the first, the first point recorded.
Status LaneStepper::start(Lane& ln, int k) {
  ln = Lane{};
  ln.clock0 = Clock::now();
  ln.item = k;
  const LayerCodes& codes = *items[k].codes;
  const LayerCodes& from = *items[k].from;
  ln.sample = items[k].sample;
  ln.v0.resize(L);
  ln.v1.resize(L);
  ln.dv.resize(L);
  ln.dl.resize(L);
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = I.layers[l];
    ln.v0[l] = VectorXd::Zero(f.P);
    ln.v1[l] = VectorXd::Zero(f.P);
    if (f.m->dac_rows) {
      if (static_cast<int>(codes.size()) <= l || static_cast<int>(codes[l].size()) != f.m->inputs)
        return Status::fail(ErrorKind::Other, fmt::format("network transient: layer {} needs {} DAC codes", l,
                                                          f.m->inputs));
      const bool have_from = opt.from_previous && static_cast<int>(from.size()) > l &&
                             static_cast<int>(from[l].size()) == f.m->inputs;
      const std::vector<long> c0 = have_from ? from[l] : std::vector<long>(f.m->inputs, 0L);
      I.dac_voltages(f, c0.data(), ln.v0[l].data());
      I.dac_voltages(f, codes[l].data(), ln.v1[l].data());
    } else {
      for (int p = f.first_dac; p < f.P; ++p) ln.v0[l][p] = ln.v1[l][p] = f.dac[p - f.first_dac][f.dac_max];
    }
  }
  const bool reuse = last_start.valid && !I.noise && same_rows(ln.v0, last_start.v0);
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = I.layers[l];
    ln.dv[l] = ln.v1[l] - ln.v0[l];
    if (f.m->dac_rows) {
      DacLayer& d = ln.dl[l];
      if (reuse) {
        const DacLayer& c = last_start.dl[l];
        d.w0 = c.w0;
        d.z0 = c.z0;
        d.u0 = c.u0;
        d.a0 = c.a0;
      } else {
        const std::vector<int> nz0 = nonzeros(ln.v0[l]);
        d.w0 = sparse_mv(f.Ycx, ln.v0[l], nz0);
        d.z0 = sparse_mv(f.C1cx, ln.v0[l], nz0);
        d.u0 = block_mv(f.Yxx, f.m->row_blocks, ln.v0[l], nz0);
        d.a0 = ln.v0[l].dot(d.u0);
      }
      const std::vector<int> nz = nonzeros(ln.dv[l]);
      d.w1 = sparse_mv(f.Ycx, ln.dv[l], nz);
      d.z1 = sparse_mv(f.C1cx, ln.dv[l], nz);
      d.u1 = block_mv(f.Yxx, f.m->row_blocks, ln.dv[l], nz);
      d.uc1 = block_mv(f.C1xx, f.m->row_blocks, ln.dv[l], nz);
      d.a1 = ln.v0[l].dot(d.u1) + ln.dv[l].dot(d.u0);
      d.a2 = ln.dv[l].dot(d.u1);
      d.b0 = ln.v0[l].dot(d.uc1);
      d.b1 = ln.dv[l].dot(d.uc1);
    }
  }
  auto dc_state = [&](Work& w, const std::vector<VectorXd>& v) {
    I.init_work(w);
    for (int l = 0; l < L; ++l) {
      if (I.layers[l].m->dac_rows) std::copy(v[l].data(), v[l].data() + v[l].size(), w.vx[l].begin());
      I.start_layer(w, l, nullptr);
    }
    I.sweep(w, 0, L, ln.sample);
    return !w.failed;
  };
  bool ok = dc_state(ln.wfin, ln.v1);
  if (ok && reuse) {
    ln.w = last_start.w;
  } else if (ok) {
    ok = dc_state(ln.w, ln.v0);
    if (ok && !I.noise) {
      last_start.valid = true;
      last_start.v0 = ln.v0;
      last_start.dl = ln.dl;
      last_start.w = ln.w;
    }
  }
  if (!ok)
    return Status::numerical(fmt::format("network transient of sample {}: the operating point did not converge",
                                         ln.sample));
  const int max_order = std::max(2, kbdf);
  ln.integ = Integrator(n_states, max_order);
  ln.integ.set_charge_floor(qfloor);
  ln.aux = Integrator(n_aux, max_order);
  ln.energy = Integrator(kNumEnergyParts, max_order);
  ln.ctx.mode = LoadContext::Mode::Tran;
  ln.actx.mode = LoadContext::Mode::Tran;
  ln.ectx.mode = LoadContext::Mode::Tran;
  ln.pr0.resize(L);
  ln.pv.resize(L);
  ln.iaux.assign(n_aux, 0.0);
  ln.ctx.q = ln.integ.q0().data();
  ln.actx.q = ln.aux.q0().data();
  ln.ectx.q = ln.energy.q0().data();
  ln.rr = 0.0;
  port_products({&ln}, true, &Products::qc, &Products::qx);
  neurons({&ln}, true);
  charges(ln, 0.0, ln.ctx.q, ln.actx.q);
  ln.integ.start_from_dc(ln.ctx);
  ln.aux.start_from_dc(ln.actx);
  ln.energy.start_from_dc(ln.ectx);  // E = 0 at t = 0
  port_products({&ln}, false, &Products::gc, &Products::gx);  // the conductive products, directly at t = 0
  ln.pr1 = ln.pr0;
  ln.pr2 = ln.pr0;
  Work& w = ln.w;
  w.ipole.assign(L, {});
  for (int l = 0; l < L; ++l) w.ipole[l].assign(static_cast<size_t>(lr[l].C) * 3, 0.0);
  if (!batched)  // the one-image sweeps read the companion admittances through the Work
    for (int l = 0; l < L; ++l) {
      w.Ycc[l] = &lr[l].Ecc;
      if (!lr[l].dac) {
        w.Ycx[l] = &lr[l].Ecx;
        w.Yxc[l] = &lr[l].Exc;
        for (size_t b = 0; b < lr[l].Exx.size(); ++b) w.Yxx[l][b] = &lr[l].Exx[b];
      }
    }
  const double e0[kNumEnergyParts] = {};
  record(ln, 0.0, e0);
  ln.x1 = w.x;
  ln.x2 = w.x;
  ln.lim1 = w.lim;
  ln.sc.delta = std::min(tstop_nominal / 100, tmax) / 10;
  ln.sc.save_delta = tstop_nominal / 50;
  ln.bp = cfg.dac_tr;
  ln.active = true;
  return {};
}


// ---- settling time, energies there, classes (as energy.cpp reads the engine's waveforms) ----
void LaneStepper::finish(Lane& ln) {
  ImageTransient& out = outs[ln.item];
  const std::vector<double>&T = ln.T, &Y = ln.Y, &E = ln.E;
  const size_t np = T.size();
  double settle = 0;
  for (int j = 0; j < nout; ++j) {
    // The final value: the DC solution of the new input (the engine takes the value at its last time point, at
    // least twice the settling time; the run here stops nearer, so its last point is a poorer stand-in).
    const double fin = ln.wfin.x[L - 1][out_index(j)];
    settle = std::max(settle, last_band_entry(T, Y.data() + j, nout, fin, band));
  }
  out.settle_s = settle;
  out.tstop_s = ln.t;
  out.timepoints = ln.accepted;
  for (int p = 0; p < kNumEnergyParts; ++p) {
    out.energy_parts_j[p] = interp(T, E.data() + p, kNumEnergyParts, settle);
    out.energy_j += out.energy_parts_j[p];
  }
  auto class_at = [&](double ts) {
    int best = 0;
    long best_code = -1;
    for (int j = 0; j < nout; ++j) {
      const long kc = adc_code(hw, L - 1, j, interp(T, Y.data() + j, nout, ts));
      if (kc > best_code) {
        best_code = kc;
        best = j;
      }
    }
    return best;
  };
  out.cls = class_at(ln.t);
  for (double ts : sample_times) out.cls_at.push_back(class_at(ts));
  for (size_t q = 0; q < np; ++q) {
    const int c = class_at(T[q]);
    if (out.class_v.empty() || c != out.class_v.back()) {
      out.class_t.push_back(T[q]);
      out.class_v.push_back(c);
    }
  }
  if (opt.keep_waveforms) {
    out.t = T;
    out.y.assign(nout, std::vector<double>(np));
    for (size_t q = 0; q < np; ++q)
      for (int j = 0; j < nout; ++j) out.y[j][q] = Y[q * nout + j];
  }
  // Wall time from the image's start (in a block, shared with the other slots' images).
  out.seconds = std::chrono::duration<double>(Clock::now() - ln.clock0).count();
}

// Slots take the items in order; a slot whose image fails or ends takes the next one.
void LaneStepper::refill(Lane& ln) {
  ln.active = false;
  while (next < n_items) {
    const int k = next++;
    if (Status st = start(ln, k); !st) {
      status[k] = st;
      ln.active = false;
      continue;
    }
    return;
  }
}

// The lane's next attempt (a new step, or the retry of a rejected one), up to the sweeps: the step, the rules'
// coefficients, the companion admittances, the predictor and the array currents there.
void LaneStepper::attempt(Lane& ln) {
  StepControl& sc = ln.sc;
  if (ln.new_step) {
    const double kap = ln.bdf ? kappa_k[std::max(sc.order, 1)] : kappa;
    const double cap = kap * ln.tau, shrink = kap * ln.tau_s;
    const double hmax = ln.inside ? to_.tail_factor * tmax
                                  : std::max(h_fine / 4, std::min(std::max(tmax, cap), shrink));
    ln.hits_break = sc.propose(ln.t, ln.bp, hmax);
    ln.new_step = false;
  }
  const double delta = sc.delta;
  const Integration rule = ln.bdf ? Integration::Gear : Integration::Trapezoidal;
  ln.tn = ln.hits_break ? ln.bp : ln.t + delta;
  ln.integ.prepare(ln.ctx, rule, sc.order, delta);
  ln.aux.prepare(ln.actx, rule, sc.order, delta);
  ln.energy.prepare(ln.ectx, rule, sc.order, delta);
  const double ag0 = ln.ctx.ag0;
  ln.ag0 = ag0;
  ln.rr = ramp(ln.tn);
  const double rr = ln.rr;
  if (!batched && ag0 != last_ag0) {  // the one-image sweeps' companion admittances (when the step changed)
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
  Work& w = ln.w;
  // The pole capacitors' history.
  w.ag0 = ag0;
  w.gpole = ag0 * opamp_model::kCpole;
  for (int l = 0; l < L; ++l)
    if (lr[l].level2)
      for (int j = 0; j < lr[l].C; ++j)
        for (int q = 0; q < lr[l].nops; ++q)
          w.ipole[l][j * 3 + q] = -ln.ctx.hist[lr[l].pole_off + j * lr[l].nops + q];
  // Predictor (the engine's: linear extrapolation from the last two accepted points), and the array products
  // there: the same extrapolation of the stored ones (xf = 0: the last accepted point).
  const double xf = !sc.first && ln.h1 > 0 ? delta / ln.h1 : 0.0;
  if (xf != 0)
    for (int l = 0; l < L; ++l)
      for (size_t u = 0; u < w.x[l].size(); ++u) w.x[l][u] = ln.x1[l][u] + xf * (ln.x1[l][u] - ln.x2[l][u]);
  // Array currents at the predicted voltages: G v + ag0 C1 v + history (the sweeps keep them up to date).
  for (int l = 0; l < L; ++l) {
    const LayerRun& r = lr[l];
    const Products &p1 = ln.pr1[l], &p2 = ln.pr2[l];
    Eigen::Map<VectorXd> ic(w.ic[l].data(), r.C);
    ic = (1 + xf) * (p1.gc + ag0 * p1.qc) - xf * (p2.gc + ag0 * p2.qc) +
         Eigen::Map<const VectorXd>(ln.ctx.hist + r.qc_off, r.C);
    if (r.dac) {
      const DacLayer& d = ln.dl[l];
      ic += d.w0 + rr * d.w1 + ag0 * (d.z0 + rr * d.z1);
    } else {
      Eigen::Map<VectorXd>(w.ix[l].data(), r.P) = (1 + xf) * (p1.gx + ag0 * p1.qx) - xf * (p2.gx + ag0 * p2.qx) +
                                                  Eigen::Map<const VectorXd>(ln.ctx.hist + r.qx_off, r.P);
      const VectorXd vx = row_volts(ln, w, l, rr);  // (a DAC layer's rows are not the sweeps')
      std::copy(vx.data(), vx.data() + r.P, w.vx[l].begin());
    }
  }
  w.failed = false;
  w.tol_scale = step_tol_scale;
}

// Accepts or rejects the lane's attempt after the sweeps (as run() for one image); a finished or failed image
// gives its slot the next one.
void LaneStepper::conclude(Lane& ln) {
  StepControl& sc = ln.sc;
  Work& w = ln.w;
  const double delta = sc.delta, rr = ln.rr, ag0 = ln.ag0;
  double newdelta = delta;
  bool ok = !w.failed;
  if (!ok) {
    newdelta = delta / 8;
    sc.order = 1;
  } else {
    charges(ln, rr, ln.ctx.q, ln.actx.q);
    ln.integ.finish(ln.ctx);
    ln.aux.finish(ln.actx);
    conductive(ln, rr, ag0, ln.ctx.hist);
    // The energies at this point: its powers integrated with the step's rule (E = (P - hist) / ag0).
    for (int q = 0; q < n_aux; ++q) ln.iaux[q] = ln.actx.ag0 * ln.actx.q[q] + ln.actx.hist[q];
    powers(ln, rr, ln.iaux.data(), ln.pw);
    for (int p = 0; p < kNumEnergyParts; ++p) ln.ectx.q[p] = (ln.pw[p] - ln.ectx.hist[p]) / ln.ectx.ag0;
    ln.energy.finish(ln.ectx);
    if (!sc.first) {
      // The energies' truncation error too, at trtol 1 (a step's energy within reltol of the power times the
      // step, as SPICE's charge test). Measured (24-8-4, 20 images against the engine): 2.8e-4 -> 2.1e-4 for
      // one more time point; at the engine's trtol, 7, no gain.
      const Integration rule = ln.bdf ? Integration::Gear : Integration::Trapezoidal;
      const double he = ln.energy.lte_step(o_energy, rule, sc.order);
      ok = sc.judge(ln.integ, o, rule, newdelta, ln.bdf ? bdf_step_growth(sc.order) : 2.0);
      ok = sc.bound(he, newdelta) && ok;
    }
  }
  if (!ok) {
    w.x = ln.x1;
    w.lim = ln.lim1;
    ln.hits_break = false;
    if (!sc.retry(newdelta, hmin)) {
      status[ln.item] = Status::numerical(fmt::format("network transient of sample {}: time step too small at "
                                                      "{:.6g} s{}", ln.sample, ln.t,
                                                      w.failed ? " (the step's sweeps did not converge)" : ""));
      refill(ln);
    }
    return;
  }
  sc.delta = newdelta;
  ln.new_step = true;
  const double step = ln.tn - ln.t;
  ln.t = ln.tn;
  double e[kNumEnergyParts];
  std::copy(ln.ectx.q, ln.ectx.q + kNumEnergyParts, e);
  ln.integ.accept();
  ln.energy.accept();
  ln.aux.accept();
  std::swap(ln.pr2, ln.pr1);
  std::swap(ln.pr1, ln.pr0);
  std::swap(ln.x2, ln.x1);  // (x2's buffers reused)
  ln.x1 = w.x;
  ln.lim1 = w.lim;
  ln.h1 = step;
  sc.first = false;
  ++ln.accepted;
  record(ln, ln.t, e);
  output_cap(ln);
  sc.at_break = ln.t >= ln.bp;
  if (sc.at_break) ln.bp = std::numeric_limits<double>::infinity();
  // Done when every layer's outputs have stayed within a tenth of the band of their final (DC) values for
  // kSettledPoints points in a row (the engine's run instead goes on to twice the settling time).
  ln.settled_points = near_final(ln, 0.1 * band) ? ln.settled_points + 1 : 0;
  ln.inside = true;
  for (int j = 0; j < nout && ln.inside; ++j)
    ln.inside = std::fabs(w.x[L - 1][out_index(j)] - ln.wfin.x[L - 1][out_index(j)]) <= band;
  // The rule for the next step: the BDF on the approach (its order rising by one per step up to kbdf), else
  // the trapezoidal rule (order 2 at most; the history the BDF leaves is its own).
  ln.approach_points = ln.approach ? ln.approach_points + 1 : 0;
  ln.bdf = kbdf > 2 && !ln.inside && ln.approach_points >= kApproachPoints;
  if (ln.bdf)
    sc.order = std::min(kbdf, sc.order + 1);
  else
    sc.order = std::min(sc.order, 2);
  if (ln.t >= tr && ln.settled_points >= kSettledPoints) {
    finish(ln);
    refill(ln);
  } else if (ln.t > t_limit || ln.accepted >= to_.max_points) {
    status[ln.item] = Status::numerical(fmt::format("network transient of sample {}: the outputs have not "
                                                    "settled by {:.4g} s ({} time points)", ln.sample, ln.t,
                                                    ln.accepted));
    refill(ln);
  }
}

void LaneStepper::run() {
  for (Lane& ln : lanes) refill(ln);

  // The block's sweeps: one image through the one-image sweeps, several side by side (nn/fast_batch.cpp), each
  // lane at its own time step.
  auto batch = batched ? I.new_batch() : std::unique_ptr<FastEvaluator::Impl::Batch, FastEvaluator::Impl::BatchFree>();
  std::vector<Work*> ptrs;
  std::vector<std::uint64_t> samples;
  std::vector<Lane*> group;
  for (;;) {
    // Every active slot: its next attempt (a new step, or the retry of a rejected one), up to the sweeps.
    ptrs.clear();
    samples.clear();
    for (Lane& ln : lanes) {
      if (!ln.active) continue;
      attempt(ln);
      ptrs.push_back(&ln.w);
      samples.push_back(ln.sample);
    }
    if (ptrs.empty()) break;
    if (!batched) {
      I.sweep(lanes[0].w, 0, L, lanes[0].sample, true);
    } else {
      I.load_block(*batch, ptrs, samples);
      I.sweep_block(*batch, 0, L, true);
      I.store_block(*batch, ptrs);
    }
    // The charges of the converged attempts (one product per relation for all of them).
    group.clear();
    for (Lane& ln : lanes)
      if (ln.active && !ln.w.failed) group.push_back(&ln);
    if (!group.empty()) {
      port_products(group, true, &Products::qc, &Products::qx);
      neurons(group, false);
    }
    // Every slot: accept or reject its attempt, as run() for one image.
    for (Lane& ln : lanes) {
      if (!ln.active) continue;
      conclude(ln);
    }
  }
}

}  // namespace anasim::nn::fast_tran
