// Per-image evaluation of the fast evaluator (nn/fast_eval.hpp): Gauss-Seidel sweeps over the neurons of the
// coupled layers, each neuron solved by the periphery kernel (nn/periphery_kernel.hpp) against the lagged currents of
// the other ports, or moved by linear response; then the ADC codes and the class. Contract: the sweeps end when no
// unknown moves by more than its tolerance and every neuron sits at a Newton solution of the final currents, i.e.
// at the solution of the full circuit's equations; each image runs on one thread (results do not depend on the
// thread count).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <omp.h>
#include "nn/fast_eval_impl.hpp"

namespace anasim::nn {

using namespace fast;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Largest relative change (against |x| + 1 mV) applied by linear response instead of Newton; the verification sweep
// (a Newton iteration for every such neuron) makes the result exact whatever this value.
constexpr double kLinearMax = 1e-3;
// Linear moves below this (relative to |x| + 1 mV) need no verifying check: the second-order error, ~ (move /
// thermal voltage)^2 for the diodes, stays below 1e-13 (at the DC tolerance; see tiny_linear for looser ones).
constexpr double kNoCheck = 1e-7;
// Tolerance multiplier of the Newton solves between verifications (against the DC tolerance, 1e-12: a 1e-8 relative
// stop). Never applied on top of a looser solve's own scale (Work::tol_scale, a transient step's 1e8): the solution a
// loose solve leaves counts as a Newton solution, which the verification does not check again, so its stop has to
// stay where the Newton step just taken makes the remaining error negligible (quadratically smaller).
constexpr double kLooseTol = 1e4;

}  // namespace

void FastEvaluator::Impl::init_work(Work& w) const {
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
  w.Ycc.resize(L);
  w.Ycx.resize(L);
  w.Yxc.resize(L);
  w.Yxx.resize(L);
  for (size_t l = 0; l < L; ++l) {
    w.Ycc[l] = &layers[l].Ycc;
    w.Ycx[l] = &layers[l].Ycx;
    w.Yxc[l] = &layers[l].Yxc;
    w.Yxx[l].clear();
    for (const auto& S : layers[l].Yxx) w.Yxx[l].push_back(&S);
  }
}

// Row voltages of a DAC layer from its input codes (bias rows at full scale).
void FastEvaluator::Impl::dac_voltages(const FastLayer& f, const long* codes, double* v) const {
  for (int p = f.first_dac; p < f.P; ++p) {
    const int i = p / 2;
    const long code = i < f.m->inputs ? codes[i] : f.dac_max;
    v[p] = f.dac[p - f.first_dac][code];
  }
}

// Resets layer l of an image: unknowns unsolved, free rows at 0 V, lagged currents of the fixed rows.
// For DAC layers `ic0` (size C) holds Ycx * vx when given (the batched GEMM), else it is computed here.
void FastEvaluator::Impl::start_layer(Work& w, int l, const double* ic0) const {
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
NeuronIn FastEvaluator::Impl::inputs(const Work& w, int l, int j, int l1, std::uint64_t sample) const {
  const FastLayer& f = layers[l];
  const Layout& Lo = f.kernel.L;
  const double* x = &w.x[l][static_cast<size_t>(j) * Lo.n];
  NeuronIn in;
  in.r = &f.li->res[static_cast<size_t>(j) * kNumPeripheryRes];
  in.vos = &f.li->vos[static_cast<size_t>(j) * kNumPeripheryOps];
  in.y_cc = (*w.Ycc[l])(j, j);
  in.lag_c = w.ic[l][j] - in.y_cc * x[Lo.c];
  if (noise) in.lag_c -= read_noise_current(*hw, l, j, sample);
  if (!w.ipole.empty()) {
    in.gpole = w.gpole;
    std::copy_n(&w.ipole[l][static_cast<size_t>(j) * 3], 3, in.ipole);
  }
  if (f.m->rectifier && l + 1 < l1) {
    const FastLayer& nx = layers[l + 1];
    const int p = 2 * j, b = nx.block_of_row[p], off = nx.m->row_blocks[b];
    const Eigen::MatrixXd& S = *w.Yxx[l + 1][b];
    row_pair(S, p - off, in.y_hh, in.y_hhn, in.y_hnh, in.y_hnhn);
    in.lag_h = w.ix[l + 1][p] - in.y_hh * x[Lo.h] - in.y_hhn * x[Lo.hn];
    in.lag_hn = w.ix[l + 1][p + 1] - in.y_hnh * x[Lo.h] - in.y_hnhn * x[Lo.hn];
  }
  return in;
}

// Passes the port-voltage changes of neuron j of layer l (x against w.old) into the lagged currents.
void FastEvaluator::Impl::propagate(Work& w, int l, int j, int l1) const {
  const FastLayer& f = layers[l];
  const Layout& Lo = f.kernel.L;
  const double* x = &w.x[l][static_cast<size_t>(j) * Lo.n];
  const double dc = x[Lo.c] - w.old[Lo.c];
  if (dc != 0) {
    Eigen::Map<Eigen::VectorXd>(w.ic[l].data(), f.C) += w.Ycc[l]->col(j) * dc;
    if (!f.m->dac_rows) Eigen::Map<Eigen::VectorXd>(w.ix[l].data(), f.P) += w.Yxc[l]->col(j) * dc;
  }
  if (!(f.m->rectifier && l + 1 < l1)) return;
  const FastLayer& nx = layers[l + 1];
  const int p = 2 * j, b = nx.block_of_row[p], off = nx.m->row_blocks[b];
  const Eigen::MatrixXd& S = *w.Yxx[l + 1][b];
  const Eigen::MatrixXd& Ycx = *w.Ycx[l + 1];
  Eigen::Map<Eigen::VectorXd> ixb(w.ix[l + 1].data() + off, S.rows());
  Eigen::Map<Eigen::VectorXd> ic(w.ic[l + 1].data(), nx.C);
  const double dh = x[Lo.h] - w.old[Lo.h], dhn = x[Lo.hn] - w.old[Lo.hn];
  if (dh != 0) {
    ixb += S.col(p - off) * dh;
    ic += Ycx.col(p) * dh;
  }
  if (dhn != 0) {
    ixb += S.col(p + 1 - off) * dhn;
    ic += Ycx.col(p + 1) * dhn;
  }
  w.vx[l + 1][p] = x[Lo.h];
  w.vx[l + 1][p + 1] = x[Lo.hn];
}

// True if linear updates moved x so little from the Newton point xn that the linearisation error (second order
// in the move) is far below the tolerance: no check needed.
bool FastEvaluator::Impl::tiny_linear(const Layout& Lo, const double* x, const double* xn, double tol_scale) {
  // The error is second order in the move and the tolerance scales with tol_scale: the threshold with its root
  // (a transient step's looser solve, tol_scale 1e8, needs no check below 1e-3; measured 2026-11-25 on the shipped
  // network, 200 images: 1e-5 instead moves settling times and energies by at most 4e-7).
  const double lim = kNoCheck * std::sqrt(tol_scale);
  for (int k = 0; k < Lo.n; ++k)
    if (std::fabs(x[k] - xn[k]) > lim * (std::fabs(xn[k]) + (Lo.is_current[k] ? 1e-9 : 1e-3))) return false;
  return true;
}

// Gauss-Seidel sweeps over layers [l0, l1) of one image until nothing moves. First every neuron gets its
// ideal-circuit guess (so that each one then sees estimates of all the others), then Newton solves; a neuron
// whose lagged currents changed only a little since its last Newton solve is updated by linear response
// (its stored LU factors), and once nothing moves every such neuron is checked by a real Newton iteration.
void FastEvaluator::Impl::sweep(Work& w, int l0, int l1, std::uint64_t sample, bool warm) const {
  const FastOptions& o = opt;
  for (int l = l0; l < l1; ++l)
    for (int j = 0; j < layers[l].C; ++j) {
      if (warm) {
        w.state[l][j] = 3;  // warm start: a Newton solve from x in the first sweep
        continue;
      }
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
        if (verify && state == 2 && tiny_linear(Lo, x, xn, w.tol_scale)) state = 1;  // accurate as it is
        bool newton = state == 0 || state == 3 || (verify && state == 2);
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
        if (newton && verify && state == 2 && K.check(in, x, lim, J, piv, w.tol_scale)) {
          newton = false;  // the linear updates landed on the solution
          state = 1;
          std::copy(x, x + n, xn);
          std::copy(lag, lag + 3, lagn);
          std::copy(lag, lag + 3, lagu);
        }
        if (newton) {
          const bool warm = state != 0;
          // Outside verification a looser stop (1e-8 relative, kLooseTol) suffices: the Newton step just taken
          // makes the error quadratically smaller.
          ++n_newton;
          int it = K.solve(in, x, lim, warm, 0.0, 0.0, J, piv, verify ? w.tol_scale : std::max(kLooseTol, w.tol_scale));
          if (it < 0) it = K.robust_solve(in, x, lim, warm && state != 3 ? xn : w.old.data(), warm, it, J, piv);
          if (it < 0) {
            w.failed = true;
            if (o.debug)
              fmt::print(stderr, "newton fail sweep {} layer {} neuron {} warm {} lag_c {:.6g} lag_h {:.6g} x {}\n",
                         sw, l, j, warm, in.lag_c, in.lag_h, fmt::join(x, x + n, " "));
          }
          w.newton += std::abs(it);
          if (state == 0 || state == 3) worst = std::max(worst, 2.0);
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
          for (int k = 0; k < n; ++k) itol[k] = 1.0 / (w.tol_scale * K.tol(k, x[k], x[k]));
          for (int i = 0; i < 3; ++i) {
            bound[i] = 0;
            for (int k = 0; k < n && i < np; ++k) bound[i] = std::max(bound[i], std::fabs(sens[i * n + k]) * itol[k]);
          }
        }
        for (int k = 0; k < n; ++k) {
          const double dx = std::fabs(x[k] - w.old[k]), tk = w.tol_scale * K.tol(k, x[k], w.old[k]);
          if (dx <= tk * std::max(worst, 1e-3)) continue;
          const double d = dx / tk;
          if (d > worst && o.trace)
            fmt::print(stderr, "  sweep {} l {} j {} k {} old {:.12g} new {:.12g}\n", sw, l, j, k, w.old[k], x[k]);
          worst = std::max(worst, d);
        }
        propagate(w, l, j, l1);
      }
    }
    if (o.trace)
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
int FastEvaluator::Impl::classify(const Work& w, long* out_codes) const {
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
void FastEvaluator::Impl::next_codes(const Work& w, int l, std::vector<long>& codes) const {
  const FastLayer& f = layers[l];
  codes.resize(f.C);
  for (int j = 0; j < f.C; ++j)
    codes[j] = f.next_code[adc_code(*hw, l, j, w.x[l][static_cast<size_t>(j) * f.kernel.L.n + f.kernel.L.y])];
}

// True when every layer's periphery is ideal and linear: hybrid mode (each layer's outputs digitised, its inputs
// DAC rows) with level-0 op-amps. A nullor holds its column port at exactly 0 V, so the column currents are
// Ycx vx whatever the wires, and KCL at the column gives the TIA output y = Rf (Ycx vx - noise): the layer is one
// product, no sweeps (classify_direct).
bool FastEvaluator::Impl::direct() const {
  if (hw->map->cfg.mode != MappingMode::Hybrid) return false;
  for (const FastLayer& f : layers)
    if (f.kernel.op.level != 0 || f.m->rectifier || !f.m->dac_rows) return false;
  return true;
}

void FastEvaluator::Impl::prepare_direct() {
  for (FastLayer& f : layers) {
    if (f.pairs >= 0) continue;
    f.pairs = 0;
    f.rf.resize(f.C);
    for (int j = 0; j < f.C; ++j) f.rf[j] = f.li->res[static_cast<size_t>(j) * kNumPeripheryRes + kResRf];
    if (f.first_dac != 0 || f.P % 2 != 0) continue;
    bool anti = true;
    for (int p = 0; p < f.P && anti; p += 2)
      for (size_t k = 0; k < f.dac[p].size() && anti; ++k) anti = f.dac[p + 1][k] == -f.dac[p][k];
    if (!anti) continue;
    f.Yd.resize(f.C, f.P / 2);
    for (int i = 0; i < f.P / 2; ++i) f.Yd.col(i) = f.Ycx.col(2 * i) - f.Ycx.col(2 * i + 1);
    f.pairs = f.P / 2;
    f.dac_pairs.assign(static_cast<size_t>(f.dac_max + 1) * f.pairs, 0.0);
    for (long k = 0; k <= f.dac_max; ++k)
      for (int i = 0; i < f.pairs; ++i)
        f.dac_pairs[static_cast<size_t>(k) * f.pairs + i] = f.dac[2 * i][i < f.m->inputs ? k : f.dac_max];
  }
}

void FastEvaluator::Impl::direct_voltages(const FastLayer& f, const long* codes, double* v) const {
  if (f.pairs <= 0) return dac_voltages(f, codes, v);
  const double* t = f.dac_pairs.data();
  const int n = f.pairs, ni = f.m->inputs;
  for (int i = 0; i < ni; ++i) v[i] = t[static_cast<size_t>(codes[i]) * n + i];
  for (int i = ni; i < n; ++i) v[i] = t[i];  // bias pairs: every code's entry holds the full-scale voltage
}

// classify() for direct(): the images of one chunk layer by layer, V their layer-0 row voltages (direct_voltages:
// pairs x nb or P x nb).
void FastEvaluator::Impl::classify_direct(const Eigen::MatrixXd& V0, DirectScratch& s, std::uint64_t sample0,
                                          int* classes, long* codes) const {
  const int L = static_cast<int>(layers.size()), nb = static_cast<int>(V0.cols());
  Eigen::MatrixXd& IC = s.IC;
  std::vector<long>& code = s.code;
  std::vector<long>& next = s.next;
  for (int l = 0; l < L; ++l) {
    const FastLayer& f = layers[l];
    // Layer l's row voltages: the chunk's for layer 0, else s.V (written by layer l - 1 below).
    Eigen::MatrixXd& V = s.V[l % 2];
    const Eigen::MatrixXd& Vl = l == 0 ? V0 : s.V[(l + 1) % 2];
    if (f.pairs > 0) IC.noalias() = f.Yd * Vl;
    else IC.noalias() = f.Ycx * Vl;
    if (noise)
      for (int k = 0; k < nb; ++k)
        for (int j = 0; j < f.C; ++j) IC(j, k) -= read_noise_current(*hw, l, j, sample0 + static_cast<std::uint64_t>(k));
    // The TIA outputs y = Rf (ic - noise).
    IC.array().colwise() *= Eigen::Map<const Eigen::ArrayXd>(f.rf.data(), f.C);
    if (l + 1 < L) {
      const FastLayer& nf = layers[l + 1];
      V.resize(nf.pairs > 0 ? nf.pairs : nf.P, nb);  // a thread's buffers keep their size from chunk to chunk
      next.resize(f.C);
    }
    code.resize(f.C);
    for (int k = 0; k < nb; ++k) {
      adc_codes(*hw, l, IC.col(k).data(), f.C, code.data());
      if (l + 1 < L) {
        for (int j = 0; j < f.C; ++j) next[j] = f.next_code[code[j]];
        direct_voltages(layers[l + 1], next.data(), V.col(k).data());
        continue;
      }
      if (codes) std::copy(code.begin(), code.end(), codes + static_cast<size_t>(k) * f.C);
      classes[k] = static_cast<int>(std::max_element(code.begin(), code.end()) - code.begin());
    }
  }
}

// Full evaluation of one image whose first-layer column currents are ic0 (Ycx * vx of layer 0).
void FastEvaluator::Impl::run_image(Work& w, const std::vector<long>& codes0, const double* ic0, std::uint64_t sample,
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

Status FastEvaluator::classify(const MatrixRf& x, int first, int count, std::uint64_t sample0,
                               std::vector<int>& classes, std::vector<long>* codes) {
  const auto t0 = Clock::now();
  Impl& I = *impl_;
  if (!I.hw) return Status::fail(ErrorKind::Other, "FastEvaluator::classify before prepare");
  const FastLayer& f0 = I.layers[0];
  const int nout = I.layers.back().C;
  classes.assign(count, 0);
  if (codes) codes->assign(static_cast<size_t>(count) * nout, 0);
  const bool direct = I.opt.direct && I.direct();
  const bool batch = !direct && I.batched();
  // The direct and batched evaluations start with a product per chunk: chunks 4x larger pack the admittances less
  // often.
  const int chunk = std::max(1, I.opt.chunk) * (direct || batch ? 4 : 1);
  const int nchunks = (count + chunk - 1) / chunk;
  long sweeps = 0, newton = 0, failures = 0;
  // The pair form of layer 0's product (FastLayer::Yd: half the columns) for the direct and the batched paths.
  if (direct || batch) I.prepare_direct();
  const bool pairs = (direct || batch) && f0.pairs > 0;
#pragma omp parallel reduction(+ : sweeps, newton, failures)
  {
    Impl::Work w;
    I.init_work(w);
    Eigen::MatrixXd V, IC;
    Impl::DirectScratch ds;
    std::unique_ptr<Impl::Batch, Impl::BatchFree> bw;
    if (batch) bw = I.new_batch();
    std::vector<std::vector<long>> cc(chunk, std::vector<long>(f0.m->inputs));
#pragma omp for schedule(dynamic, 1)
    for (int ch = 0; ch < nchunks; ++ch) {
      const int a = ch * chunk, nb = std::min(chunk, count - a);
      V.resize(pairs ? f0.pairs : f0.P, nb);
      for (int k = 0; k < nb; ++k) {
        long* ci = cc[k].data();
        input_codes(*f0.m, x.row(first + a + k).data(), ci);
        if (pairs) I.direct_voltages(f0, ci, V.col(k).data());
        else I.dac_voltages(f0, ci, V.col(k).data());
      }
      if (direct) {
        I.classify_direct(V, ds, sample0 + static_cast<std::uint64_t>(first + a), classes.data() + a,
                          codes ? codes->data() + static_cast<size_t>(a) * nout : nullptr);
        continue;
      }
      if (pairs) IC.noalias() = f0.Yd * V;
      else IC.noalias() = f0.Ycx * V;
      if (batch) {
        for (int k = 0; k < nb; k += kLanes)
          I.classify_batch(*bw, IC, k, std::min(kLanes, nb - k), sample0 + static_cast<std::uint64_t>(first + a + k),
                           classes.data() + a + k, codes ? codes->data() + static_cast<size_t>(a + k) * nout : nullptr,
                           sweeps, newton, failures);
        continue;
      }
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

}  // namespace anasim::nn
