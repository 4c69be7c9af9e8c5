// The network transient's fast path (fast_tran.hpp) inside: the state of a block of lanes, each stepping one image
// on its own time grid, and the stepper that runs them. Private to fast_tran.cpp (the stepping) and
// fast_tran_circuit.cpp (the circuit's quantities at a lane's state); compiled with the fast files' -march=native
// (kLanes, Vd).
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
#include "engine/integrator.hpp"
#include "nn/fast_eval_impl.hpp"
#include "nn/fast_tran.hpp"

namespace anasim::nn::fast_tran {

using namespace fast;
using Eigen::MatrixXd;
using Eigen::VectorXd;
using Work = FastEvaluator::Impl::Work;

// Per layer: layout and states (shared by the lanes), companion admittances.
struct LayerRun {
  int n = 0, C = 0, P = 0, nops = 0;
  bool dac = false, level2 = false;
  int pole_off = -1, qc_off = 0, qx_off = -1;  // state indices (qx: free rows only)
  int aux_off = -1;                            // DAC layers: the ramp and column voltages in `aux`
  MatrixXd Ecc, Ecx, Exc;                     // companion admittances G + ag0 C1
  std::vector<MatrixXd> Exx;
};

// The array products that depend on the unknowns, per layer: charges C1 v and conductive currents G v at the
// columns (qc, gc) and free rows (qx, gx), without a DAC layer's fixed-row terms (z0 + rr z1, w0 + rr w1). Kept at
// the last two accepted points: the predictor's are their linear extrapolation (the products are linear), so a
// step costs one set of C1 products (the new charges); G v follows from the currents the sweeps keep up to date.
struct Products {
  VectorXd qc, gc, qx, gx;
};

// A DAC layer's products with its rows before the step (v0) and with the step (dv).
struct DacLayer {
  VectorXd w0, w1, z0, z1;  // C: Ycx v0, Ycx dv, C1cx v0, C1cx dv
  VectorXd u0, u1, uc1;     // P: Yxx v0, Yxx dv, C1xx dv
  // vx.(u0 + rr u1) = a0 + rr a1 + rr^2 a2 and vx.uc1 = b0 + rr b1 for vx = v0 + rr dv (the rows' powers)
  double a0 = 0, a1 = 0, a2 = 0, b0 = 0, b1 = 0;
};

// One slot of the block: the image it is stepping (its own time grid and step control, as run() for one image),
// or none (active false). Per image: the DAC rows before and after the step, the DAC layers' products with them,
// the DC states before (t = 0) and after (the target), the integrators, the recorded waveforms.
struct Lane {
  int item = -1;
  bool active = false;
  std::uint64_t sample = 0;
  std::vector<VectorXd> v0, v1, dv;
  std::vector<DacLayer> dl;
  Work w, wfin;
  // The states (charges), the DAC layers' auxiliary states, the energies by part (q = E [J], dq/dt = power [W]):
  // all integrated with the step's rule; the truncation error of the first and the last sets the steps.
  Integrator integ{0}, aux{0}, energy{0};
  LoadContext ctx, actx, ectx;
  std::vector<Products> pr0, pr1, pr2;  // the point being solved, the last accepted, the one before
  std::vector<std::vector<double>> pv;  // pole voltages per layer (C x nops)
  double pwn[kNumEnergyParts] = {};     // the neurons' absorbed powers [W] by part (neurons(), with pv)
  std::vector<double> T, Y, E;          // per accepted point: time, last-layer outputs, cumulative energies
  double pw[kNumEnergyParts] = {};  // [W] by part at the point being solved
  std::vector<std::vector<double>> x1, x2, lim1;  // accepted solutions (predictor, rejected steps)
  std::vector<double> iaux;
  int settled_points = 0;
  // Every layer's outputs (y) at the last three accepted points (their times: the end of T), for their time
  // constants (output_cap()).
  std::vector<double> yo[3];
  // From output_cap(): [s] the outputs' shortest time constant (0: none yet) and the shortest of their exponential
  // approaches' (inf: none); approach: the network is on its approach (see output_cap), at approach_points
  // accepted points in a row. bdf: the next step is the BDF's (FastTranOptions::approach_order).
  double tau = 0, tau_s = INFINITY;
  bool approach = false, bdf = false;
  int approach_points = 0;
  bool inside = false;  // every last-layer output within its band at the last accepted point
  // Time stepping: the engine's .tran step control, the time t of the last accepted point, the step h1 that led
  // there, the next breakpoint, accepted points; the step being tried (new: a step to propose; tn, its end; rr,
  // the ramp there; ag0, its companion coefficient).
  StepControl sc;
  double t = 0, h1 = 0, bp = 0, tn = 0, rr = 0, ag0 = 0;
  long accepted = 0;
  bool new_step = true, hits_break = false;
  std::chrono::steady_clock::time_point clock0;
};

// The last start's DAC rows before the step, their products and operating point: from reset every image starts
// there (input code 0), so it is solved once per block and copied, unless read noise makes it the sample's own.
struct Start {
  bool valid = false;
  std::vector<VectorXd> v0;
  std::vector<DacLayer> dl;  // w0, z0, u0, a0
  Work w;
};

// FastTransient::run_lanes: the items through a block of lanes (one: the one-image sweeps), results and statuses
// per item.
class LaneStepper {
 public:
  LaneStepper(const FastEvaluator::Impl& impl, const HardwareInstance& hw, const FastTranOptions& to, int slots,
              const std::vector<FastTransient::Item>& items, const TransientOptions& opt,
              const std::vector<double>& sample_times, std::vector<ImageTransient>& outs,
              std::vector<Status>& status);
  void run();

 private:
  using Clock = std::chrono::steady_clock;
  // The circuit (fast_tran_circuit.cpp).
  // Port voltages of layer l in work state ws at ramp position rr (0..1 along the DAC edge).
  VectorXd col_volts(const Work& ws, int l) const;
  VectorXd row_volts(const Lane& ln, const Work& ws, int l, double rr) const;
  void port_products(const std::vector<Lane*>& group, bool moments, VectorXd Products::*oc, VectorXd Products::*ox);
  void neurons(const std::vector<Lane*>& g, bool dc);
  void charges(Lane& ln, double rr, double* q, double* a) const;
  void conductive(Lane& ln, double rr, double ag0, const double* hist) const;
  void powers(const Lane& ln, double rr, const double* iaux, double* pw) const;
  // The stepping (fast_tran.cpp).
  double ramp(double t) const { return std::clamp(t / tr, 0.0, 1.0); }
  size_t out_index(int j) const { return static_cast<size_t>(j) * lr[L - 1].n + fl.kernel.L.y; }
  void output_cap(Lane& ln);
  bool near_final(const Lane& ln, double tol) const;
  void record(Lane& ln, double t, const double* e);
  Status start(Lane& ln, int k);
  void finish(Lane& ln);
  void refill(Lane& ln);
  void attempt(Lane& ln);
  void conclude(Lane& ln);

  const FastEvaluator::Impl& I;
  const HardwareInstance& hw;
  const HardwareConfig& cfg;
  const FastTranOptions& to_;
  const std::vector<FastTransient::Item>& items;
  const TransientOptions& opt;
  const std::vector<double>& sample_times;
  std::vector<ImageTransient>& outs;
  std::vector<Status>& status;
  const int n_items, L;
  // Lanes (slots > 1: even for one item, so that an image's result does not depend on how many come with it) or the
  // one-image sweeps.
  const bool batched;
  std::vector<LayerRun> lr;
  int n_states = 0, n_aux = 0;
  std::vector<Lane> lanes;
  const double tr;  // [s] the DAC edge
  std::vector<std::vector<Vd>> Vc, Vx, Oc, Ox;  // port_products' lanes
  double iq = 0;  // [A] the level-2 op-amps' quiescent current
  // The settling band [V] and the last layer's outputs.
  const FastLayer& fl;
  double band = 0;
  int nout = 0;
  // The steps on the outputs' approach (output_cap).
  static constexpr double kAgree = 2, kSlower = 2;
  static constexpr int kApproachPoints = 2;
  double kappa = 0;
  int kbdf = 0;
  double kappa_k[Integrator::kMaxOrder + 1] = {};
  double step_tol_scale = 1, v_resolved = 0;
  // Integration set-up.
  Options o, o_energy;
  std::vector<double> qfloor;
  double tstop_nominal = 0, h_fine = 0, tmax = 0, hmin = 0, t_limit = 0;
  static constexpr int kSettledPoints = 3;
  Start last_start;
  int next = 0;  // the next item a slot takes
  double last_ag0 = std::numeric_limits<double>::quiet_NaN();  // of the companion admittances in lr (one slot)
};

}  // namespace anasim::nn::fast_tran
