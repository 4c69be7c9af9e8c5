// Internal to the fast evaluator (nn/fast_eval.hpp): the prepared per-layer data (port admittances, DAC tables,
// periphery kernels) and the per-image state, shared by the preparation (nn/fast_prepare.cpp) and the sweeps
// (nn/fast_sweeps.cpp). Not for use outside those files.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>
#include <Eigen/Dense>
#include "nn/fast_eval.hpp"
#include "nn/periphery_kernel.hpp"
#include "nn/port_reduction.hpp"

namespace anasim::nn::fast {

// The 2x2 block of S at rows and columns (r, r + 1): a rectifier's row pair (h, hn) in the next layer's row block.
inline void row_pair(const Eigen::MatrixXd& S, int r, double& hh, double& hhn, double& hnh, double& hnhn) {
  hh = S(r, r);
  hhn = S(r, r + 1);
  hnh = S(r + 1, r);
  hnhn = S(r + 1, r + 1);
}

// One layer, prepared for a trial.
struct FastLayer {
  const LayerMapping* m = nullptr;
  const LayerInstance* li = nullptr;
  int C = 0, P = 0;
  Kernel kernel;
  Eigen::MatrixXd Ycx;                  // C x P: column currents per row-port volt
  Eigen::MatrixXd Yxc;                  // P x C: the transpose (contiguous columns)
  Eigen::MatrixXd Ycc;                  // C x C
  std::vector<Eigen::MatrixXd> Yxx;     // per row block (analog layers)
  std::vector<int> block_of_row;        // physical row -> row block
  std::vector<std::vector<double>> dac; // per physical DAC row: signed row voltage per code
  int first_dac = 0;                    // first physical row driven by a DAC
  long dac_max = 0;
  // Hybrid mode, every layer but the last: the DAC code layer l+1 receives per ADC code of this layer (relu_code:
  // the digital ReLU and requantization), indexed 0 .. the ADC's largest code.
  std::vector<long> next_code;
  std::vector<double> ic_bias;          // C: column currents of the bias rows (analog layers)
  std::vector<double> ix_bias;          // P: row currents of the bias rows (analog layers)
  // With FastOptions::moments: the first moments of the port admittances (Y(s) = Y + s C1 + O(s^2)), i.e. the
  // capacitance matrices [F] the wire capacitances present at the ports when the arrays' interior follows the ports
  // quasi-statically (exact to first order in frequency); same shapes as Ycx, Yxc, Ycc, Yxx.
  Eigen::MatrixXd C1cx, C1xc, C1cc;
  std::vector<Eigen::MatrixXd> C1xx;
  // The direct evaluation (FastEvaluator::Impl::direct), made by its first use after a prepare: when every DAC row
  // pair drives exactly opposite voltages (+v, -v for every code), Yd (C x P/2) = Ycx(:, 2i) - Ycx(:, 2i+1) takes
  // the pair's v; pairs = P/2 then, 0 when the rows are not antisymmetric, -1 before the first use.
  Eigen::MatrixXd Yd;
  int pairs = -1;
  // Also made by the direct evaluation's first use: the pairs' (+v) voltage [V] of row pair i for code k at
  // dac_pairs[k * pairs + i] (code-major: the common codes' voltages are contiguous), and the TIA feedback
  // resistances [ohm] per column.
  std::vector<double> dac_pairs, rf;
};

}  // namespace anasim::nn::fast

namespace anasim::nn {

struct FastEvaluator::Impl {
  using FastLayer = fast::FastLayer;
  using Layout = fast::Layout;
  using NeuronIn = fast::NeuronIn;
  const HardwareInstance* hw = nullptr;
  FastOptions opt;
  bool noise = false;  // read noise on
  std::vector<FastLayer> layers;
  std::vector<std::vector<std::unique_ptr<fast::SchurSolver>>> solvers;  // per layer, per row block
  // Per layer and row block, the network of the last prepare and its port matrices: a trial whose draw leaves a
  // block's elements unchanged (no conductance variation, faults elsewhere) reuses them.
  struct BlockCache {
    fast::PortNetwork net;  // as built, before the moments' shunts
    bool moments = false;
    Eigen::MatrixXd Y, Y1;
  };
  std::vector<std::vector<BlockCache>> cache;

  // Per-image working state (one per thread). Per layer and neuron: the unknowns x, limiting states, and the
  // last Newton point (xn, the lagged port currents it saw, the LU factors of its Jacobian) for linear-response
  // updates; per layer the lagged currents into the array at the column ports (ic) and free row ports (ix).
  struct Work {
    std::vector<std::vector<double>> x, lim, ic, ix, vx, xn, lagn, lagu, sens, bound, lu;
    std::vector<std::vector<int>> piv;
    std::vector<std::vector<char>> state;  // 0 unsolved (guess), 1 Newton solution, 2 linear update
    std::vector<double> old;
    long sweeps = 0, newton = 0;
    bool failed = false;
    // Multiplies the kernel's tolerance (reltol |x| + vntol) in the sweeps and local Newton solves: 1 at DC; a
    // transient step's solve uses a looser one (FastTranOptions::newton_reltol).
    double tol_scale = 1;
    // The port relations the sweeps see, per layer: the DC admittances of FastLayer (init_work), or a transient
    // step's companion admittances G + ag0 C (nn/fast_tran.cpp).
    std::vector<const Eigen::MatrixXd*> Ycc, Ycx, Yxc;
    std::vector<std::vector<const Eigen::MatrixXd*>> Yxx;
    // Transient step only (else 0 / empty): pole companion conductance [S] and per layer, neuron and op-amp the
    // pole capacitors' history currents [A] (C x 3).
    double gpole = 0;
    double ag0 = 0;  // [1/s] the step's companion coefficient (gpole = ag0 kCpole; the batched sweeps' Y + ag0 C1)
    std::vector<std::vector<double>> ipole;
  };

  void init_work(Work& w) const;
  // Row voltages of a DAC layer from its input codes (bias rows at full scale).
  void dac_voltages(const FastLayer& f, const long* codes, double* v) const;
  // Resets layer l of an image: unknowns unsolved, free rows at 0 V, lagged currents of the fixed rows.
  // For DAC layers `ic0` (size C) holds Ycx * vx when given (the batched GEMM), else it is computed here.
  void start_layer(Work& w, int l, const double* ic0) const;
  // What neuron j of layer l sees of the arrays (l1: end of the coupled layer range).
  NeuronIn inputs(const Work& w, int l, int j, int l1, std::uint64_t sample) const;
  // Passes the port-voltage changes of neuron j of layer l (x against w.old) into the lagged currents.
  void propagate(Work& w, int l, int j, int l1) const;
  // True if linear updates moved x so little from the Newton point xn that the linearisation error (second order
  // in the move) is far below the tolerance (times tol_scale, Work::tol_scale): no check needed.
  static bool tiny_linear(const Layout& Lo, const double* x, const double* xn, double tol_scale);
  // Gauss-Seidel sweeps over layers [l0, l1) of one image until nothing moves. First every neuron gets its
  // ideal-circuit guess (so that each one then sees estimates of all the others), then Newton solves; a neuron
  // whose lagged currents changed only a little since its last Newton solve is updated by linear response
  // (its stored LU factors), and once nothing moves every such neuron is checked by a real Newton iteration.
  // warm: every neuron starts from its x and limiting states (a transient step) instead of the ideal guess.
  void sweep(Work& w, int l0, int l1, std::uint64_t sample, bool warm = false) const;
  // The last layer's ADC codes of an image and its class; hybrid layers pass codes on via `codes`.
  int classify(const Work& w, long* out_codes) const;
  // Requantized DAC codes for layer l+1 from the ADC codes of hybrid layer l.
  void next_codes(const Work& w, int l, std::vector<long>& codes) const;
  // Every layer's periphery ideal and linear (hybrid mode, level-0 op-amps): classify() evaluates a chunk of images
  // by products alone (classify_direct: V0, the chunk's layer-0 row voltages, P (or pairs) x images; classes and
  // codes, when given, receive the chunk's results).
  bool direct() const;
  // A thread's buffers for classify_direct (reused from chunk to chunk): the next layers' row voltages (two, in
  // turn), the column currents, the ADC and DAC codes of one image.
  struct DirectScratch {
    Eigen::MatrixXd V[2], IC;
    std::vector<long> code, next;
  };
  void classify_direct(const Eigen::MatrixXd& V0, DirectScratch& s, std::uint64_t sample0, int* classes,
                       long* codes) const;
  // Makes FastLayer::Yd and pairs of every layer (before the images' threads start).
  void prepare_direct();
  // Row voltages for the direct evaluation: the pairs' (+v) when f.pairs > 0 (P/2 of them), else dac_voltages.
  void direct_voltages(const FastLayer& f, const long* codes, double* v) const;
  // The batched path (nn/fast_batch.cpp): kLanes images of a chunk side by side, one per SIMD lane. Batch is a
  // thread's state for one block (new_batch); classify_batch evaluates images col0 .. col0 + nb - 1 (nb <= kLanes)
  // of a chunk whose layer-0 column currents are IC's columns, sample numbers sample0 + lane, into classes[0, nb)
  // and codes (optional, nb x outputs), adding the lanes' sweeps, Newton iterations and failures.
  struct Batch;
  struct BatchFree {
    void operator()(Batch* b) const;
  };
  std::unique_ptr<Batch, BatchFree> new_batch() const;
  bool batched() const;
  void classify_batch(Batch& w, const Eigen::MatrixXd& IC, int col0, int nb, std::uint64_t sample0, int* classes,
                      long* codes, long& sweeps, long& newton, long& failures) const;
  void start_block_layer(Batch& w, int l, const double* ic0, int ld) const;
  // sweep() for a block; warm: a transient step's solve (every lane from its x, as sweep(..., warm = true)), with
  // the port relations, pole terms and tolerance of the lanes' Works (load_block).
  void sweep_block(Batch& w, int l0, int l1, bool warm = false) const;
  // The network transient's lanes (nn/fast_tran.cpp): load_block copies what a warm sweep reads from up to kLanes
  // Works (null: an empty lane) into the block: unknowns, limiting states, lagged currents, row voltages, the pole
  // companion terms, tol_scale; each lane's companion coefficient Work::ag0 (its port relations are Y + ag0 C1,
  // whatever the Work's pointers say); samples[b]: lane b's sample number (read noise). store_block copies the results back (unknowns, limiting states, currents, row
  // voltages, failure), adding each lane's sweeps and Newton iterations to its Work.
  void load_block(Batch& b, const std::vector<Work*>& lanes, const std::vector<std::uint64_t>& samples) const;
  void store_block(const Batch& b, const std::vector<Work*>& lanes) const;
  // Full evaluation of one image whose first-layer column currents are ic0 (Ycx * vx of layer 0).
  void run_image(Work& w, const std::vector<long>& codes0, const double* ic0, std::uint64_t sample,
                 LayerCodes* all_codes) const;
};

}  // namespace anasim::nn
