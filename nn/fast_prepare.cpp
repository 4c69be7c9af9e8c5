// Preparation of the fast evaluator (nn/fast_eval.hpp) for one trial: per layer the periphery kernel, per row
// block the port network (DAC output resistances and the tiles' elements) reduced to its port admittance on
// CHOLMOD (nn/port_reduction.hpp), the blocks summed into each layer's dense port relations, and the DAC tables.
// Contract: after prepare, Ycc, Ycx and Yxx are the exact admittances of the layer's arrays at the column and row
// ports; dac[p][code] is the voltage the DAC device of row p drives for that code (devices/dac.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <omp.h>
#include "nn/block_network.hpp"
#include "nn/fast_eval_impl.hpp"

namespace anasim::nn {

using namespace fast;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

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
  I.cache.resize(L);

  // Every (layer, row block) network, then all of them factorized in parallel.
  struct Job {
    int l, b;
    PortNetwork net;
    std::vector<int> port_row;  // per port: physical row (rows) or -1 - column (columns)
    Eigen::MatrixXd Y, Y1;
    // The block's port matrices for the gather below: Y, Y1 when computed now, else the cache's (not copied).
    const Eigen::MatrixXd* Yp = nullptr;
    const Eigen::MatrixXd* Y1p = nullptr;
    std::vector<double> cap;  // [F] per network node (moments)
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
    f.kernel = make_kernel(cfg, m, opt);
    if (f.kernel.L.n > kMaxLocal) return Status::fail(ErrorKind::Other, "periphery has too many unknowns");
    const int nrb = static_cast<int>(m.row_blocks.size()) - 1, ncb = static_cast<int>(m.col_blocks.size()) - 1;
    f.block_of_row.resize(f.P);
    for (int b = 0; b < nrb; ++b)
      for (int p = m.row_blocks[b]; p < m.row_blocks[b + 1]; ++p) f.block_of_row[p] = b;
    if (static_cast<int>(I.solvers[l].size()) != nrb) {
      I.solvers[l].clear();
      for (int b = 0; b < nrb; ++b) I.solvers[l].push_back(std::make_unique<SchurSolver>());
      I.cache[l].assign(nrb, Impl::BlockCache{});
    }
    for (int b = 0; b < nrb; ++b) {
      Job job;
      job.l = l;
      job.b = b;
      const int r0 = m.row_blocks[b], r1 = m.row_blocks[b + 1], nr = r1 - r0;
      std::vector<CrossbarSpec> specs(ncb);
      std::vector<BlockTile> tiles(ncb);
      for (int cb = 0; cb < ncb; ++cb) {
        const TileInstance& t = li.tiles[static_cast<size_t>(b) * ncb + cb];
        specs[cb] = t.spec;
        if (opt.moments) specs[cb].cwire = cfg.cwire;  // as build_netlist's transient circuit has them
        tiles[cb] = {&specs[cb], &t.g, t.col0};
      }
      job.net = row_block_network(cfg, r0, r1, f.first_dac, f.C, tiles, opt.moments ? &job.cap : nullptr);
      for (int i = 0; i < nr; ++i) job.port_row.push_back(r0 + i);
      for (int j = 0; j < f.C; ++j) job.port_row.push_back(-1 - j);
      jobs.push_back(std::move(job));
    }
  }
  if (opt.moments)  // every node's capacitance (also the trailing ones without any)
    for (Job& j : jobs) j.cap.resize(j.net.n_int + j.net.n_port, 0.0);
  if (opt.trace) fmt::print(stderr, "prepare: networks built in {:.3f} s\n", since(t0));
  {
    // CHOLMOD 3 opens its own OpenMP regions with a fixed team of 4 (CHOLMOD_OMP_NUM_THREADS), which on a busy
    // 2-core machine spins for most of the factorization time: blocks run in parallel here instead, and CHOLMOD's
    // regions are kept inactive (nested beyond the active levels allowed).
    const int saved_levels = omp_get_max_active_levels();
    omp_set_max_active_levels(omp_get_max_threads() > 1 ? 1 : 0);
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < static_cast<int>(jobs.size()); ++k) {
      Job& j = jobs[k];
      Impl::BlockCache& bc = I.cache[j.l][j.b];
      if (bc.moments == opt.moments && bc.Y.size() > 0 && bc.net.n_int == j.net.n_int &&
          bc.net.n_port == j.net.n_port && bc.net.ea == j.net.ea && bc.net.eb == j.net.eb && bc.net.eg == j.net.eg &&
          (!opt.moments || bc.net.shunt == j.cap)) {
        j.Yp = &bc.Y;  // the same elements as the last trial's: the same port matrices
        j.Y1p = &bc.Y1;
        continue;
      }
      bc.Y.resize(0, 0);
      j.st = I.solvers[j.l][j.b]->compute(j.net, j.Y, opt.trace);
      if (!j.st || !opt.moments) continue;
      // C1 = dY/ds at s = 0 by a forward difference: the same network with a conductance sigma * C from every
      // capacitive node to ground. sigma [rad/s] is far below the interior's time constants (the second-order
      // term is ~sigma * tau ~ 1e-5 relative for tau ~ 1 ns) and far above rounding (the shift moves Y by
      // ~1e-10 relative, so C1 keeps ~6 digits where |C1| is smallest against Y).
      constexpr double kSigma = 1e4;
      if (j.cap.empty() || *std::max_element(j.cap.begin(), j.cap.end()) == 0) {
        j.Y1 = Eigen::MatrixXd::Zero(j.Y.rows(), j.Y.cols());
        continue;
      }
      j.cap.resize(j.net.n_int + j.net.n_port, 0.0);
      j.net.shunt.resize(j.cap.size());
      for (size_t i = 0; i < j.cap.size(); ++i) j.net.shunt[i] = kSigma * j.cap[i];
      Eigen::MatrixXd Ys;
      j.st = I.solvers[j.l][j.b]->compute(j.net, Ys, opt.trace);
      j.Y1 = (Ys - j.Y) / kSigma;
    }
    for (Job& j : jobs) {  // remember what was computed (reused blocks are unchanged)
      Impl::BlockCache& bc = I.cache[j.l][j.b];
      if (!j.st || j.Yp) continue;
      bc.moments = opt.moments;
      bc.Y = std::move(j.Y);
      bc.Y1 = std::move(j.Y1);
      j.Yp = &bc.Y;
      j.Y1p = &bc.Y1;
      bc.net.n_int = j.net.n_int;
      bc.net.n_port = j.net.n_port;
      bc.net.ea = j.net.ea;
      bc.net.eb = j.net.eb;
      bc.net.eg = j.net.eg;
      bc.net.shunt = j.cap;  // the capacitances the moments were computed with
    }
    omp_set_max_active_levels(saved_levels);
  }
  for (auto& j : jobs)
    if (!j.st) return j.st;
  if (opt.trace) fmt::print(stderr, "prepare: factorized at {:.3f} s\n", since(t0));

  for (int l = 0; l < L; ++l) {
    FastLayer& f = I.layers[l];
    const LayerMapping& m = map.layers[l];
    const LayerInstance& li = hw.layers[l];
    // The row blocks' port matrices (admittances Y, or capacitance moments Y1) summed into the layer's relations.
    auto gather = [&](const Eigen::MatrixXd* Job::*Y, Eigen::MatrixXd& cx, Eigen::MatrixXd& cc, Eigen::MatrixXd& xc,
                      std::vector<Eigen::MatrixXd>& xx) {
      cx = Eigen::MatrixXd::Zero(f.C, f.P);
      cc = Eigen::MatrixXd::Zero(f.C, f.C);
      xx.assign(m.row_blocks.size() - 1, Eigen::MatrixXd());
      for (auto& j : jobs) {
        if (j.l != l) continue;
        const int r0 = m.row_blocks[j.b], nr = m.row_blocks[j.b + 1] - r0;
        const Eigen::MatrixXd& Yb = *(j.*Y);
        cx.middleCols(r0, nr) += Yb.block(nr, 0, f.C, nr);
        cc += Yb.block(nr, nr, f.C, f.C);
        xx[j.b] = Yb.block(0, 0, nr, nr);
      }
      xc = cx.transpose();
    };
    gather(&Job::Yp, f.Ycx, f.Ycc, f.Yxc, f.Yxx);
    if (opt.moments) gather(&Job::Y1p, f.C1cx, f.C1cc, f.C1xc, f.C1xx);
    // DAC tables: signed row voltage per code (odd rows are driven by the DAC with swapped pins).
    f.dac.clear();
    for (int p = f.first_dac; p < f.P; ++p) {
      const DacSpec& d = li.dac_of_row(p, m.inputs);
      const long nc = dac_max_code(d) + 1;
      std::vector<double> tab(nc);
      const double sign = p % 2 == 0 ? 1.0 : -1.0;
      const bool only_full = p / 2 >= m.inputs;  // bias rows use the full-scale code only
      for (long k = 0; k < nc; ++k)
        tab[k] = (only_full && k != nc - 1) ? 0.0 : sign * dac_voltage(d, k);
      f.dac.push_back(std::move(tab));
      f.dac_max = nc - 1;
    }
    f.next_code.clear();
    if (cfg.mode == MappingMode::Hybrid && l + 1 < static_cast<int>(map.layers.size()))
      for (long k = 0; k <= adc_max_code(m.adc_spec); ++k) f.next_code.push_back(relu_code(m, map.layers[l + 1], k));
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

int fast_eval_eigen_alignment() { return 1000 * EIGEN_DEFAULT_ALIGN_BYTES + EIGEN_MAX_STATIC_ALIGN_BYTES; }

}  // namespace anasim::nn
