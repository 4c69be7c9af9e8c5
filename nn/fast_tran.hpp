// The network transient's fast path (issue 12): the mapped circuit of one input stepped in time on the port-reduced
// arrays instead of the full netlist, for settling time, energy by component and classes over a whole test set.
//
// Model. Each row block of crossbar tiles (cells, wires, driver/sink and DAC output resistances, wire capacitance
// cwire per segment) is the multiport i = Y v + C1 dv/dt at its ports (DAC sources, free rows, columns): Y the exact
// DC port admittance and C1 = dY/ds at s = 0, the exact first moment, computed by the same CHOLMOD port reduction
// (nn/port_reduction.hpp). It treats the arrays' interior as following their ports quasi-statically, which is exact
// to first order in frequency: the error is of the order of the lines' own RC delay (at most ~0.5 ns for a 1,570-row
// column of 1-ohm, 0.2-fF segments) against the op-amps' settling (tens of ns and more). The periphery is the DC
// path's kernel (nn/periphery_kernel.hpp) with the level-2 pole capacitors as states; the DACs are the PWL edges of
// build_netlist's TranSpec (0 -> dac_tr, from the previous or reset codes to the sample's codes).
//
// Integration. The engine's own Integrator (engine/integrator.hpp: trapezoidal with backward-Euler starts, the SPICE
// charge LTE, the same step control as the engine's .tran: breakpoint at dac_tr, order rise, rejection by 8) over
// the states: pole charges, column and row port charges C1 v; on the outputs' exponential approach the
// variable-step BDF of FastTranOptions::approach_order instead. Each step is solved by the DC path's Gauss-Seidel
// sweeps (nn/fast_sweeps.cpp) warm-started from the predictor, with the companion admittances Y + ag0 C1 in place
// of Y. Energies are the components' absorbed powers (the same grouping as energy.hpp), integrated with the
// integrator's rule. The run ends when every layer's outputs are within a tenth of the last layer's half-LSB band
// of the DC solution of the new input at three accepted points in a row.
#pragma once
#include <cstdint>
#include <vector>
#include "nn/energy.hpp"
#include "nn/fast_eval.hpp"

namespace anasim::nn {

// Truncation-error control of the fast path (the engine's .options of the same names).
struct FastTranOptions {
  double reltol = 1e-3;   // relative LTE tolerance (SPICE's default; the engine's transient netlist has 1e-4)
  double abstol = 1e-15;  // [A]
  double chgtol = 1e-14;  // [C]
  double trtol = 7.0;
  long max_points = 1'000'000;  // accepted time points per image before giving up
  // Largest step, in units of the engine's (TransientOptions: tstop / points). (Where a last-layer output enters its
  // settling band the entry is interpolated on a parabola, band_entry in nn/energy.hpp, not on shorter steps.)
  // Measured against the engine (tests/test_nn_fast_tran.cpp, 24-8-4, 2026-11-25, before settle_error could also
  // shorten steps): 2 kept the settling times and energies within 2.9e-4 of the engine's, 3 within 6.6e-4, 4 only
  // 1.3e-3 (the trapezoidal rule's global error). Since settle_error also shortens steps (2026-11-25, later): 2, 4
  // and 8 give the same differences (24-8-4 against the engine 1.7e-4; 200 shipped images against a tight run
  // 1.4e-4, board 7.6-8.3e-4, integrated 2.9e-4), and 4 takes 7% fewer points than 2 on the shipped network (8 no
  // fewer than 4).
  double step_factor = 4;
  // The largest step also follows the outputs' approach to their final values: steps at which the trapezoidal rule's
  // phase error, (h / tau)^2 / 12 for an output settling with time constant tau, stays within settle_error of the
  // settling time. Beyond the step above where any output's approach is slower; below it (down to a quarter of the
  // engine's step) where an output approaches exponentially faster; on the approach the BDF's steps instead
  // (approach_order). Measured (2026-11-25, with the BDF), the worst difference in settling time and energy: 24-8-4
  // test network against the engine 1.5e-4 (5e-3: 7.0e-4; both paths' settling times from last_band_entry,
  // nn/energy.hpp); 200 images against a tight run of the fast path (trapezoidal rule, step factor 0.5, reltol
  // 1e-4, settle_error 1e-6, a floor of a 40th of the engine's step): shipped network 9.6e-5, LM358 board 5.3e-4,
  // integrated design 3.5e-4 (the trapezoidal rule throughout: 1.4e-4, 3.3e-4, 3.0e-4).
  double settle_error = 5e-4;
  // Order of the rule on the outputs' exponential approach (3..Integrator::kMaxOrder; 2 or less: the trapezoidal
  // rule throughout): where the steps follow the outputs' exponential approaches and no other output moves faster
  // (fast_tran.cpp, output_cap), until the last layer is inside its band, the steps are the variable-step BDF's of
  // this order, whose rate error, about (h / tau)^k / (k + 1), allows longer steps for the same settle_error than
  // the trapezoidal rule's (h / tau)^2 / 12: 2.6x at order 4. Order 5 (2026-11-25): 5% fewer attempts on the
  // shipped network than 4, but the LM358 board 8.5e-4 from a tight run (order 4: 5.3e-4).
  int approach_order = 4;
  // While every last-layer output is inside its band, the largest step is tail_factor times the above: the settling
  // time and the energy up to it are then decided (an output that leaves the band again brings the steps back), and
  // the run only has to confirm that nothing leaves the band.
  double tail_factor = 8;
  // Newton tolerance of each step's solve (the sweeps and the neurons' local Newton): reltol * |x| + vntol, as the
  // engine's transient Newton (SPICE: 1e-3, 1 uV). A tenth of the truncation tolerance: the step's solution error
  // stays below what the step control accepts. (The DC path's vntol, 1e-12 V, is scaled by the same factor:
  // 100 uV.) The DC states before and after the step keep the DC path's tolerance. Measured (2026-11-25): on the
  // shipped 784-128-10 network, 400 images, 1e-6 -> 1e-4 takes 23.4 -> 15.9 ms of wall time per image (2 threads;
  // 4.1 -> 2.7 sweeps per step) and moves settling times and energies by at most 5.5e-5; against the engine
  // (tests/test_nn_fast_tran.cpp, 24-8-4 analog, 20 images) the worst difference is 2.8e-4 (3e-4 and 1e-3 were
  // only 1.04x and 1.05x faster).
  double newton_reltol = 1e-4;
};

class FastTransient {
 public:
  // Per trial: the DC port admittances and the capacitance moments of every row block. `hw` must outlive use.
  Status prepare(const HardwareInstance& hw, const FastOptions& fo = {}, const FastTranOptions& to = {});

  // One input, as image_transient (energy.hpp) computes it through the engine: codes are the sample's DAC codes
  // (every DAC layer), from the codes before the step (used with opt.from_previous; else reset: input code 0).
  // opt.tstop (0 = default_tstop) / opt.points is the largest step. Thread-safe (const).
  Status run(const LayerCodes& codes, const LayerCodes& from, std::uint64_t sample, const TransientOptions& opt,
             const std::vector<double>& sample_times, ImageTransient& out) const;

  // Several inputs, up to kLanes at a time side by side (the batched sweeps' lanes, nn/fast_batch.cpp; nn/lanes.hpp:
  // 8 with AVX-512, 4 with AVX2): each image on its own time grid and step control exactly as run() steps it (the
  // lanes' sweeps solve every lane's own step together), a lane that finishes taking the next image. Results and
  // statuses per item, as run() gives them.
  struct Item {
    const LayerCodes* codes;
    const LayerCodes* from;
    std::uint64_t sample;
  };
  std::vector<Status> run_block(const std::vector<Item>& items, const TransientOptions& opt,
                                const std::vector<double>& sample_times, std::vector<ImageTransient>& outs) const;
  // Images run_block steps side by side (nn/lanes.hpp's kLanes, which depends on the fast files' -march=native).
  static int lanes();

  FastEvaluator& dc() { return fe_; }

 private:
  // The items through `slots` lanes (1: the one-image sweeps).
  std::vector<Status> run_lanes(const std::vector<Item>& items, int slots, const TransientOptions& opt,
                                const std::vector<double>& sample_times, std::vector<ImageTransient>& outs) const;
  FastEvaluator fe_;
  FastTranOptions to_;
  const HardwareInstance* hw_ = nullptr;
};

}  // namespace anasim::nn
