// IR-drop-aware programming: the targets of every layer compensated against the exact port transfer of its row
// blocks (see program.hpp).
#include "nn/program.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <memory>
#include <fmt/format.h>
#include <omp.h>
#include "nn/block_network.hpp"
#include "nn/port_reduction.hpp"

namespace anasim::nn {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr double kTolerance = 1e-10;  // max |W_eff - W| / max |W| that ends the iteration
constexpr int kMaxSolves = 400;       // exact port solves per layer at most
constexpr double kFit = 0.995;        // a lowered scale leaves this fraction of the window to the largest cell
constexpr double kGrowAt = 1e-3;      // residual at which a scale lowered too far is raised again,
constexpr double kGrowBelow = 0.5;    // when the largest cell is below this fraction of the window,
constexpr double kGrowTo = 0.8;       // aiming at this fraction,
constexpr int kMaxGrows = 6;          // at most this many times
constexpr int kAndersonDepth = 6;     // iterates the acceleration combines, besides the current one

// The port network of row block b of layer m programmed with g (physical rows x outputs): the evaluator's network
// (nn/block_network.hpp) with the tiles' conductances taken from g.
fast::PortNetwork block_network(const HardwareConfig& cfg, const LayerMapping& m, int b, const std::vector<double>& g) {
  const int r0 = m.row_blocks[b], r1 = m.row_blocks[b + 1], nr = r1 - r0, C = m.outputs;
  const int ncb = static_cast<int>(m.col_blocks.size()) - 1;
  std::vector<CrossbarSpec> specs(ncb);
  std::vector<std::vector<double>> tg(ncb);
  std::vector<fast::BlockTile> tiles(ncb);
  for (int cb = 0; cb < ncb; ++cb) {
    CrossbarSpec& s = specs[cb];
    const int c0 = m.col_blocks[cb];
    s.rows = nr;
    s.cols = m.col_blocks[cb + 1] - c0;
    s.rwire_row = cfg.rwire_row;
    s.rwire_col = cfg.rwire_col;
    s.rdriver = cfg.rdriver;
    s.rsink = cfg.rsink;
    tg[cb].resize(static_cast<size_t>(s.rows) * s.cols);
    for (int i = 0; i < s.rows; ++i)
      for (int j = 0; j < s.cols; ++j)
        tg[cb][static_cast<size_t>(i) * s.cols + j] = g[static_cast<size_t>(r0 + i) * C + c0 + j];
    tiles[cb] = {&specs[cb], &tg[cb], c0};
  }
  return fast::row_block_network(cfg, r0, r1, m.dac_rows ? 0 : m.physical_rows() - 2, C, tiles);
}

// geff (outputs x physical rows) of every row block of layer l, one solver per block (symbolic analyses kept).
Status transfer(const MappedNetwork& map, int l, const std::vector<double>& g,
                std::vector<std::unique_ptr<fast::SchurSolver>>& solvers, std::vector<double>& geff) {
  const LayerMapping& m = map.layers[l];
  const int nb = static_cast<int>(m.row_blocks.size()) - 1, C = m.outputs, P = m.physical_rows();
  while (static_cast<int>(solvers.size()) < nb) solvers.push_back(std::make_unique<fast::SchurSolver>());
  geff.assign(static_cast<size_t>(C) * P, 0.0);
  std::vector<Status> st(nb);
  // As in nn/fast_prepare.cpp: blocks in parallel, CHOLMOD's own OpenMP regions kept inactive.
  const int saved_levels = omp_get_max_active_levels();
  omp_set_max_active_levels(omp_get_max_threads() > 1 ? 1 : 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int b = 0; b < nb; ++b) {
    const fast::PortNetwork net = block_network(map.cfg, m, b, g);
    const int r0 = m.row_blocks[b], nr = m.row_blocks[b + 1] - r0;
    Eigen::MatrixXd Ycx;  // only the columns-by-rows block: C x nr
    st[b] = solvers[b]->compute(net, Ycx, false, nr);
    if (!st[b]) continue;
    for (int j = 0; j < C; ++j)
      for (int i = 0; i < nr; ++i) geff[static_cast<size_t>(j) * P + r0 + i] = -Ycx(j, i);
  }
  omp_set_max_active_levels(saved_levels);
  for (const Status& s : st)
    if (!s) return s;
  return {};
}

// Anderson acceleration (type II, depth m; Walker and Ni, SIAM J. Numer. Anal. 49, 2011) of the fixed-point
// iteration u <- u + s(u), s the diagonal Newton step: the next iterate combines the last m + 1 iterates so that
// their steps cancel best in least squares. Without history it is the plain step. Deterministic.
class Anderson {
 public:
  explicit Anderson(int depth) : depth_(depth) {}
  // Forgets the history (the iterates before a change of the scale are not comparable).
  void clear() {
    df_.clear();
    dg_.clear();
    have_ = false;
  }
  // u: the current iterate, s its step (same size); u becomes the next iterate.
  void next(std::vector<double>& u, const std::vector<double>& s) {
    const Eigen::Index n = static_cast<Eigen::Index>(u.size());
    Eigen::Map<Eigen::VectorXd> x(u.data(), n);
    const Eigen::Map<const Eigen::VectorXd> f(s.data(), n);
    Eigen::VectorXd g = x + f;
    if (have_) {
      df_.push_back(f - f_prev_);
      dg_.push_back(g - g_prev_);
      if (static_cast<int>(df_.size()) > depth_) {
        df_.pop_front();
        dg_.pop_front();
      }
    }
    f_prev_ = f;
    g_prev_ = g;
    have_ = true;
    if (!df_.empty()) {
      Eigen::MatrixXd F(n, static_cast<Eigen::Index>(df_.size()));
      for (size_t i = 0; i < df_.size(); ++i) F.col(static_cast<Eigen::Index>(i)) = df_[i];
      const Eigen::VectorXd gamma = F.colPivHouseholderQr().solve(f);
      for (size_t i = 0; i < dg_.size(); ++i) g -= gamma(static_cast<Eigen::Index>(i)) * dg_[i];
    }
    x = g;
  }

 private:
  int depth_;
  bool have_ = false;
  Eigen::VectorXd f_prev_, g_prev_;
  std::deque<Eigen::VectorXd> df_, dg_;  // differences of successive steps and of successive plain iterates
};

// Cells of the pair unknowns u (pairs x outputs): g+ = gmin + max(u, 0), g- = gmin + max(-u, 0).
void cells_of(const std::vector<double>& u, int C, double gmin, std::vector<double>& g) {
  g.resize(2 * u.size());
  for (size_t k = 0; k < u.size(); ++k) {
    const size_t i = k / C, j = k % C;
    g[2 * i * C + j] = gmin + std::max(u[k], 0.0);
    g[(2 * i + 1) * C + j] = gmin + std::max(-u[k], 0.0);
  }
}

// Differential transfer W_eff (pairs x outputs) from geff (outputs x physical rows).
void differential(const std::vector<double>& geff, int pairs, int C, std::vector<double>& w) {
  const size_t P = 2 * static_cast<size_t>(pairs);
  w.resize(static_cast<size_t>(pairs) * C);
  for (int i = 0; i < pairs; ++i)
    for (int j = 0; j < C; ++j) w[static_cast<size_t>(i) * C + j] = geff[j * P + 2 * i] - geff[j * P + 2 * i + 1];
}

// rms over the calibration images and neurons of (W_eff - W) v relative to that of W v, v the row voltages of
// the layer's inputs (bias row at v_bias).
double output_residual(const LayerMapping& m, const LayerInputs& in, const std::vector<double>& w_eff,
                       const std::vector<double>& w) {
  const int C = m.outputs, N = m.inputs;
  double se = 0, si = 0;
  std::vector<double> e(C), y(C);
  for (int n = 0; n < in.images; ++n) {
    std::fill(e.begin(), e.end(), 0.0);
    std::fill(y.begin(), y.end(), 0.0);
    for (int i = 0; i <= N; ++i) {
      const double v = i < N ? m.v_offset + m.v_unit * in.a[static_cast<size_t>(n) * in.inputs + i] : m.v_bias;
      if (v == 0) continue;
      const size_t k = static_cast<size_t>(i) * C;
      for (int j = 0; j < C; ++j) {
        e[j] += (w_eff[k + j] - w[k + j]) * v;
        y[j] += w[k + j] * v;
      }
    }
    for (int j = 0; j < C; ++j) {
      se += e[j] * e[j];
      si += y[j] * y[j];
    }
  }
  return si > 0 ? std::sqrt(se / si) : 0.0;
}

Status compensate_layer(MappedNetwork& map, int l, const LayerInputs& in, LayerProgram& rep) {
  const auto t0 = Clock::now();
  LayerMapping& m = map.layers[l];
  const HardwareConfig& cfg = map.cfg;
  const int C = m.outputs, pairs = m.inputs + 1;
  const size_t P = 2 * static_cast<size_t>(pairs);
  const double gmin = cfg.gmin, span = cfg.gmax - cfg.gmin;
  // Targets: the ideal mapping's differences (scale * w).
  std::vector<double> target(static_cast<size_t>(pairs) * C);
  for (int i = 0; i < pairs; ++i)
    for (int j = 0; j < C; ++j)
      target[static_cast<size_t>(i) * C + j] = m.g_target[2 * i * C + j] - m.g_target[(2 * i + 1) * C + j];
  double tmax = 0;
  for (double t : target) tmax = std::max(tmax, std::fabs(t));
  if (!(tmax > 0)) tmax = 1.0;

  std::vector<std::unique_ptr<fast::SchurSolver>> solvers;
  std::vector<double> u = target, g, geff, w_eff, err(target.size());
  double factor = 1.0;  // scale factor applied so far
  double res = 0;
  int solves = 0, grows = 0;
  double last_factor = 0, last_need = 0;  // the previous converged point of the scale search
  const bool trace = std::getenv("ANASIM_PROGRAM_TRACE") != nullptr;  // per port solve on stderr
  Anderson accel(kAndersonDepth);
  std::vector<double> step(u.size());
  double last_res = HUGE_VAL;
  for (;;) {
    cells_of(u, C, gmin, g);
    if (Status st = transfer(map, l, g, solvers, geff); !st) return st;
    ++solves;
    differential(geff, pairs, C, w_eff);
    res = 0;
    double need = 0;
    for (size_t k = 0; k < u.size(); ++k) {
      err[k] = factor * target[k] - w_eff[k];
      res = std::max(res, std::fabs(err[k]));
      need = std::max(need, std::fabs(u[k]));
    }
    res /= factor * tmax;
    need /= span;
    if (trace)
      fmt::print(stderr, "program layer {}: solve {} residual {:.3e} largest cell {:.4f} of the window, scale x{:.4f}, "
                 "{:.2f} s\n", l, solves, res, need, factor, since(t0));
    if (solves >= kMaxSolves) break;
    if (res <= kGrowAt && need < kGrowBelow && grows < kMaxGrows) {
      // Converged well inside the window (an early step overshot and lowered the scale too far): raise the scale
      // again, so that the signal currents stay as large as the window allows against the periphery's offsets.
      // The largest cell grows faster than the scale (more current, more IR drop): need ~ factor^power, the power
      // from the last two converged points (2 before there are two).
      double power = 2.0;
      if (last_factor > 0 && std::fabs(std::log(factor / last_factor)) > 1e-3)
        power = std::clamp(std::log(need / last_need) / std::log(factor / last_factor), 1.0, 4.0);
      last_factor = factor;
      last_need = need;
      const double f = std::min(std::pow(kGrowTo / need, 1.0 / power), 4.0);
      factor *= f;
      for (double& x : u) x *= f;
      ++grows;
      accel.clear();
      last_res = HUGE_VAL;
      continue;
    }
    if (res <= kTolerance) break;
    // Diagonal Newton step: the error over the attenuation of the pair's conducting cell. Where the step leaves
    // the window the scale is lowered (targets and step alike) until the largest cell fits again: lower currents
    // also mean less IR drop, so the fit only improves.
    // The steps are accelerated (Anderson); a step that raised the residual restarts the acceleration.
    if (res > last_res) accel.clear();
    last_res = res;
    for (size_t k = 0; k < u.size(); ++k) {
      const size_t i = k / C, j = k % C, p = u[k] >= 0 ? 2 * i : 2 * i + 1;
      const double gc = g[p * C + j];
      const double att = gc > 0 ? std::clamp(geff[j * P + p] / gc, 1e-3, 1.5) : 1.0;
      step[k] = err[k] / att;
    }
    accel.next(u, step);
    double next_need = 0;
    for (double x : u) next_need = std::max(next_need, std::fabs(x) / span);
    if (next_need > 1) {
      const double f = kFit / next_need;
      factor *= f;
      for (double& x : u) x *= f;
      accel.clear();
      last_res = HUGE_VAL;
    }
  }
  // Into the window and onto the levels, then the residual of what will be programmed.
  for (double& x : u) x = std::clamp(x, -span, span);
  cells_of(u, C, gmin, g);
  if (cfg.levels >= 2) {
    const double step = span / (cfg.levels - 1);
    for (double& x : g) x = gmin + std::round((x - gmin) / step) * step;
  }
  if (Status st = transfer(map, l, g, solvers, geff); !st) return st;
  ++solves;
  differential(geff, pairs, C, w_eff);
  for (double& t : target) t *= factor;
  res = 0;
  for (size_t k = 0; k < target.size(); ++k) res = std::max(res, std::fabs(w_eff[k] - target[k]));
  rep.residual = res / (factor * tmax);
  rep.residual_out = output_residual(m, in, w_eff, target);
  rep.scale_factor = factor;
  rep.iterations = solves;
  m.g_target = g;
  m.scale *= factor;
  m.rf /= factor;  // rf * scale (TIA gain per unit of z, rectifier r2, hybrid ADC range) unchanged
  rep.seconds = since(t0);
  return {};
}

}  // namespace

Status compensate_targets(MappedNetwork& map, const std::vector<LayerInputs>& inputs) {
  if (inputs.size() != map.layers.size())
    return Status::fail(ErrorKind::Other, "compensated programming: calibration inputs for every layer expected");
  map.program.assign(map.layers.size(), LayerProgram{});
  for (size_t l = 0; l < map.layers.size(); ++l)
    if (Status st = compensate_layer(map, static_cast<int>(l), inputs[l], map.program[l]); !st) return st;
  return {};
}

Status layer_transfer(const MappedNetwork& map, int l, const std::vector<double>& g, std::vector<double>& geff) {
  const LayerMapping& m = map.layers[l];
  if (g.size() != static_cast<size_t>(m.physical_rows()) * m.outputs)
    return Status::fail(ErrorKind::Other, "layer_transfer: conductances of the wrong size");
  std::vector<std::unique_ptr<fast::SchurSolver>> solvers;
  return transfer(map, l, g, solvers, geff);
}

}  // namespace anasim::nn
