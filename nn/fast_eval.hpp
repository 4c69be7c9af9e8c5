// Exact batched evaluation of a mapped network (the same answer as a full MNA solve of build_netlist's circuit,
// to the Newton tolerance), fast enough for Monte Carlo over the whole MNIST test set.
//
// Method. The crossbar tiles (cells, wire segments, driver/sink resistances, DAC output resistances) are linear
// and symmetric positive definite once their ports are fixed, and the nonlinear periphery (op-amps, diodes, ADC
// inputs) touches them only at ports: DAC source nodes, free row inputs (analog layers), column outputs.
//  1. Per trial and per row block of a layer (the tiles sharing those rows), the exact port admittance
//     Y = A_pp - A_pi A_ii^{-1} A_ip: CHOLMOD supernodal Cholesky of the whole block network ordered with the
//     ports last (interior nodes by METIS/AMD), so that the trailing block of L gives Y = L_pp L_pp^T. The
//     symbolic analysis is done once per pattern and reused by every trial. Blocks are summed into per-layer
//     dense relations i_col = Ycc v_col + Ycx v_row and i_row = Yxx v_row + Ycx^T v_col (currents into the array).
//  2. Per batch of images, Ycx times the DAC voltages of the first layer as one GEMM.
//  3. Per image, Gauss-Seidel sweeps over the neurons of all coupled layers (all layers in analog mode, one layer
//     at a time in hybrid mode). Each neuron's periphery (TIA; analog hidden layers also the precision rectifier
//     and the inverter; level-0 branch currents, diode series-resistance nodes; the level-2 pole node is
//     eliminated exactly) is solved by Newton with its exact dense Jacobian, including the array's
//     self-admittance at its ports; the coupling to the other ports (the rest of Ycc, the next layer's row
//     loading Yxx and Ycx^T) is lagged and updated after every neuron by rank-1 updates. Every neuron first gets
//     a stage-by-stage guess (op-amp equations inverted), then one Newton solve; later sweeps move neurons by
//     linear response (dx/dlag from the stored LU factors) or skip them when that move is provably below a
//     twentieth of the tolerance; when nothing moves by more than 1e-12 relative (+1 pV), every neuron moved by
//     linear response is verified by a Newton step (a residual with its stored factors). The fixed point is the
//     exact solution of the full circuit equations. Images run in parallel (OpenMP) in fixed chunks, each image
//     on one thread: results do not depend on the thread count.
//  4. classify() runs the sweeps on blocks of 8 images side by side, one per SIMD lane (FastOptions::batch,
//     nn/fast_batch.cpp): every lane follows step 3's algorithm with its own neuron states and stopping sweep;
//     the neurons' Newton solves, checks and sensitivities are the kernel's lane-wise forms (one stamp template
//     for one image and for a block), and each coupling update passes an admittance column once for all lanes.
//     evaluate_one() and the network transient (nn/fast_tran.cpp) take the one-image path.
// The device equations come from devices/: op-amp levels 0-2 at DC (opamp_model.hpp), diode (diode_model.hpp), the
// crossbar's elements (crossbar.hpp, CrossbarTopology), DAC output and ADC transfer (dac.hpp, adc.hpp).
// Files: periphery_kernel.hpp (per-neuron stamps, Newton, guess; small_lu.hpp its dense LU; lanes.hpp the SIMD
// lanes), port_reduction.cpp (CHOLMOD Schur complement of the crossbar blocks), fast_prepare.cpp (per trial),
// fast_sweeps.cpp (per image), fast_batch.cpp (per block of images).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>
#include "nn/hardware.hpp"
#include "nn/netlist_builder.hpp"

namespace anasim::nn {

// Periphery voltages of one layer for one image (per neuron) [V].
struct LayerVoltages {
  std::vector<double> c, y;       // TIA summing node and output
  std::vector<double> h, hn;      // rectifier output and inverter output (rectifier layers)
  std::vector<double> s, a, t;    // rectifier summing node, rectifier op-amp output, inverter summing node
  std::vector<double> d1i, d2i;   // diode series-resistance nodes (diode_rs > 0)
  std::vector<double> p;          // level-2 op-amp pole nodes, kNumPeripheryOps per neuron (NaN where absent)
};

struct FastStats {
  long images = 0;
  long sweeps = 0;                // Gauss-Seidel sweeps, summed over images (and layers in hybrid mode)
  long newton = 0;                // local Newton iterations, summed over neurons and images
  long failures = 0;              // images where a local Newton or the sweeps did not converge
  double seconds_prepare = 0;     // Schur complements and tables
  double seconds_eval = 0;
};

struct FastOptions {
  double reltol = 1e-12;          // relative change that ends sweeps and local Newton iterations
  double vntol = 1e-12;           // [V] absolute part of the tolerance
  int max_sweeps = 200;
  int max_newton = 100;
  int chunk = 64;                 // images per GEMM chunk (fixed: results do not depend on threads)
  bool debug = false;             // report failing local Newton solves on stderr
  bool trace = false;             // report every sweep, the port reductions and the preparation phases on stderr
  bool moments = false;           // also the arrays' port capacitances (FastLayer::C1*: the network transient)
  // classify(): when every layer's periphery is ideal and linear (hybrid mode, level-0 op-amps), each layer of a chunk
  // is one product, without sweeps (the same equations solved in closed form); false: the sweeps as for any circuit.
  bool direct = true;
  // classify(): the images of a chunk in blocks of kLanes (nn/lanes.hpp: 8 with AVX-512, 4 with AVX2) side by side,
  // one per SIMD lane (nn/fast_batch.cpp), each following the one-image algorithm to the same tolerance; false: one
  // image at a time.
  bool batch = true;
};

class FastEvaluator {
 public:
  FastEvaluator();
  ~FastEvaluator();
  FastEvaluator(const FastEvaluator&) = delete;
  FastEvaluator& operator=(const FastEvaluator&) = delete;

  // Per trial: port admittances of every row block (reusing the symbolic analyses of an earlier call when the
  // pattern is the same), DAC tables, periphery coefficients. `hw` must outlive the evaluator's use.
  Status prepare(const HardwareInstance& hw, const FastOptions& opt = {});

  // Classes (argmax of the last layer's ADC codes) of images rows [first, first+count) of x (pixels in [0,1]).
  // Sample numbers (read noise) are sample0 + row index. `codes` (optional) receives count x outputs ADC codes.
  Status classify(const MatrixRf& x, int first, int count, std::uint64_t sample0, std::vector<int>& classes,
                  std::vector<long>* codes = nullptr);

  // One image with every layer's periphery voltages; `dac_codes` (optional) receives the DAC codes of every
  // layer as build_netlist takes them.
  Status evaluate_one(const float* x, std::uint64_t sample, std::vector<LayerVoltages>& out,
                      LayerCodes* dac_codes = nullptr);

  const FastStats& stats() const { return stats_; }
  void reset_stats() { stats_ = FastStats{}; }

  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
  FastStats stats_;
};

// Eigen's heap and static alignment [bytes] as the fast evaluator's files (built with -march=native under
// ANASIM_NATIVE) see them, 1000 * heap + static: every file must see the same, or Eigen's inline allocator and
// aligned loads differ between object files (see CMakeLists.txt).
int fast_eval_eigen_alignment();

}  // namespace anasim::nn
