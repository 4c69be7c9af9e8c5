// Drivers of the hardware evaluation of an MLP: accuracy through the mapped circuit (`nn eval`), comparison of
// the fast evaluator with the full MNA solve of the same circuit (`--reference N`), and Monte Carlo over
// mismatch draws with parameter sweeps (`nn mc`). Options and reports only; the numerics are in fast_eval and
// the engine.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>
#include "engine/checkpoint.hpp"
#include "nn/dataset.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/mlp.hpp"

namespace anasim::nn {

// Largest differences between the fast evaluator and the MNA reference over the compared samples.
struct ReferenceReport {
  int samples = 0;
  double max_rel = 0;             // max |fast - mna| / max(|mna|, 1 mV) over every layer output
  double max_abs = 0;             // [V] max |fast - mna|
  std::string worst;              // node of max_rel, e.g. "y0_17 (sample 3)"
  int saturated = 0;              // samples with at least one op-amp output beyond 98% of its swing
  // Samples whose ADC codes from the MNA voltages differ from the fast ones: the codes a hybrid layer passes on
  // (one-image path) and the last layer's codes as classify() gives them (the batched path); counted once each.
  int code_mismatches = 0;
  double seconds_per_sample = 0;  // MNA operating point per sample [s]
  int unknowns = 0;               // MNA unknowns of the full circuit
  long newton_iterations = 0;     // MNA Newton iterations over all samples
  bool warm_start = false;
};

// The fast path's periphery voltages of one input (FastEvaluator::evaluate_one) as (circuit node name, value [V]) of
// build_netlist's circuit: TIA summing nodes and outputs, rectifier and inverter nodes, diode series-resistance
// nodes, level-2 op-amp pole nodes ("utia0_3#p"). The starting point of a warm-started MNA Newton (compare_reference;
// the network transient's initial operating point, FlatNetlist::guess); the crossbar nodes are linear and need none.
std::vector<std::pair<std::string, double>> periphery_node_voltages(const MappedNetwork& map,
                                                                    const std::vector<LayerVoltages>& fv);

// Compares `fast` (prepared for `hw`) with NewtonSolver::operating_point on build_netlist's circuit for test
// images rows [0, n) of `x` (the circuit is built once; DAC codes are changed per sample and re-solved).
// Compared: TIA outputs y, rectifier outputs h, inverter outputs hn of every layer (the last layer's y are the
// pre-ADC voltages). `progress` (may be empty) is called after every sample.
// warm_start = false: every sample is solved by the engine's full operating-point strategy (junctions
// initialised, gmin and source stepping if needed), independently of the fast path. warm_start = true: Newton
// (no junction initialisation) starts from the fast path's voltages at the nonlinear devices' nodes (the
// crossbar nodes are linear and need none): the MNA iteration then only confirms a solution, 2-3 refactorizations
// of the full matrix per sample instead of tens; it falls back to the full strategy if Newton does not converge.
Status compare_reference(const HardwareInstance& hw, FastEvaluator& fast, const MatrixRf& x, int n,
                         ReferenceReport& rep, bool warm_start = false,
                         const std::function<void(int)>& progress = {});

struct EvalReport {
  int samples = 0;
  double digital_accuracy = 0;    // float network
  double analog_accuracy = 0;     // mapped circuit (argmax of the last ADC codes)
  double agreement = 0;           // fraction of samples where both predict the same class
  double seconds = 0;             // fast path: preparation + evaluation [s]
  double seconds_prepare = 0;
  FastStats stats;
  int opamps = 0;
  bool has_reference = false;
  ReferenceReport reference;
  std::vector<int> digital_class;  // per evaluated sample: class predicted by the float network
  std::vector<int> analog_class;   // per evaluated sample: class read from the mapped circuit's ADC codes
  std::vector<LayerProgram> program;  // per layer with program: compensated (residual weight error), else empty
};

// What the hardware drivers need: model, hardware, test split and calibration images.
struct EvalSetup {
  Mlp net;
  HardwareConfig cfg;
  Dataset test;
  Dataset train;                  // empty when the data directory has no training split
  std::string dir;                // data directory used
  // Calibration images: the training split, else the test split.
  const MatrixRf& calib() const { return train.size() > 0 ? train.images : test.images; }
};

// Loads the model (anasim-mlp-1, or Keras when `keras`) and the test split of `kind` from the first data
// directory of data_dir_candidates(kind, data_dir) (--data, else $ANASIM_DATA, else the defaults; the error lists
// every place searched), plus the training split for calibration when present (else a warning in the returned
// Status). s.cfg is left as the caller set it. Input errors for missing files and size mismatches.
Status load_eval_setup(const std::string& model, bool keras, DatasetKind kind, const std::string& data_dir,
                       EvalSetup& s);

// Maps `net` with `cfg` (calibrated on `calib`), draws the static mismatch of cfg.seed (trial 0), evaluates the
// first `samples` test images (0 = all) through the fast evaluator and, with reference > 0, compares the first
// `reference` images with the MNA solve (warm-started from the fast path when `warm_reference`).
Status run_eval(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, const Dataset& test, int samples,
                int reference, EvalReport& rep, bool warm_reference = false);

// One Monte Carlo sweep point: accuracy per trial.
struct McPoint {
  std::string param;              // swept parameter ("" without --sweep)
  std::string value;              // its value as given
  std::vector<double> accuracy;   // per trial
  double mean = 0, std = 0, min = 0, p5 = 0;
  double seconds = 0;             // [s] the run's time divided by the number of points (trials of all points
                                  // are interleaved over the ranks)
  std::vector<LayerProgram> program;  // per layer with program: compensated (the point's targets, compensated
                                      // once before every trial's draw), else empty
};

struct McOptions {
  int trials = 10;
  std::uint64_t seed = 1;
  int samples = 0;                // test images per trial (0 = all)
  std::string sweep_param;        // --sweep PARAM=v1,v2,...
  std::vector<std::string> sweep_values;
  std::string checkpoint;         // --checkpoint FILE: rewritten after every round of trials ("" = none)
  RunIdentity identity;           // the caller's part of the checkpoint identity (the hardware file and mode);
                                  // run_mc adds the arguments, the model's weights, the images and the version
};

struct McReport {
  double digital_accuracy = 0;
  int samples = 0;
  std::vector<McPoint> points;
  double seconds = 0;
  double seconds_per_trial = 0;
  long resumed = 0;               // trials taken from the checkpoint instead of being run
};

// Parses a sweep "PARAM=v1,v2,..." into opt.sweep_param / opt.sweep_values and checks every value against
// `cfg` (set_hardware_param on a copy), so a long run does not stop at its last point. Input errors.
Status parse_mc_sweep(const std::string& text, const HardwareConfig& cfg, McOptions& opt);

// Runs trials x sweep points, spread over MPI ranks when started by mpirun (engine/distribute.hpp; progress on
// stderr as dist::set_progress says) with the same accuracies for any number of ranks and threads: a trial's
// draws depend only on the seed and the trial number. Collective under MPI: every rank calls it and receives the
// full report. With opt.checkpoint, trials already in the checkpoint are not run again.
Status run_mc(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, const Dataset& test,
              const McOptions& opt, McReport& rep);

// Adds the "model" (sizes and a digest of the weights) and "data" (the first n test images and labels and the
// calibration images, digested) fields of a checkpoint identity (engine/checkpoint.hpp).
void add_model_and_data(RunIdentity& id, const Mlp& net, const MatrixRf& calib, const Dataset& test, int n);

// Writes a Monte Carlo report to HDF5: /mc/accuracy (points x trials), per-point datasets and attributes.
Status write_mc_hdf5(const std::string& path, const McReport& rep, const McOptions& opt);

}  // namespace anasim::nn
