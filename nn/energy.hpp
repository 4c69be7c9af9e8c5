// Network transient (issue 12): settling time, energy by component and class of one input from the engine's
// transient of the full mapped circuit (the reference path), and the `nn energy` summary over a test set.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "engine/checkpoint.hpp"
#include "nn/dataset.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/mlp.hpp"
#include "nn/netlist_builder.hpp"

namespace anasim::nn {

// Components of the energy breakdown (absorbed energy [J], by device name in the mapped netlist):
//   crossbar  xb*  cells, wires and wire capacitance
//   opamps    utia*, urect*, uinv*  what the op-amps absorb (from the rails, minus what they deliver)
//   activation d1*, d2*, r1*, r2*, rl*, ri1*, ri2*  the rectifier and inverter passives (analog mode)
//   dacs      rdac*  the DAC output resistances (the DAC sources themselves deliver: they are the supply)
//   adcs      adc*   ADC input resistance
//   other     rf*    TIA feedback resistors
// Their sum is the energy the sources (DAC outputs, op-amp rails, read-noise sources) deliver.
enum EnergyPart { kPartCrossbar, kPartOpamps, kPartActivation, kPartDacs, kPartAdcs, kPartOther, kNumEnergyParts };
const char* energy_part_name(int part);  // "crossbar", "opamps", "activation", "dacs", "adcs", "other_resistors"

// One input's transient.
struct ImageTransient {
  double settle_s = 0;            // [s] last time any last-layer output leaves +-0.5 ADC LSB of its final value
  double tstop_s = 0;             // [s] length of the run (final values are taken here)
  double energy_j = 0;            // [J] energy the sources deliver over [0, settle_s]
  double energy_parts_j[kNumEnergyParts] = {};  // [J] absorbed over [0, settle_s], see EnergyPart
  int cls = -1;                   // argmax of the last layer's ADC codes at tstop_s (first maximum)
  std::vector<int> cls_at;        // per sampling time given: the class from the outputs at that time
  std::vector<double> class_t;    // [s] the class at the time points, as changes: class_v[i] from class_t[i] on
  std::vector<int> class_v;       //     (class_t[0] = 0)
  long timepoints = 0;            // accepted time points of the run
  std::vector<double> t;          // [s] with TransientOptions::keep_waveforms: the time points
  std::vector<std::vector<double>> y;  // [V] and the last layer's outputs there (per neuron, per time point)
  double seconds = 0;             // [s] wall time of the engine run(s)
  SolverStats engine;             // image_transient: the engine's counts, summed over its runs (seconds: simulate())
  double seconds_build = 0;       // [s] image_transient: building the netlists (build_netlist)
};

struct TransientOptions {
  bool from_previous = false;     // step from the previous input's settled state (else from reset: input code 0)
  double tstop = 0;               // [s] run length; 0 = automatic (doubled until the settling time < tstop / 2)
  int points = 500;               // tstop / largest time step
  bool keep_waveforms = false;    // fill ImageTransient::t and y
  bool engine = false;            // run_energy: the engine's transient of the full netlist per image (the slow
                                  // reference) instead of the fast path (nn/fast_tran.hpp)
  std::string checkpoint;         // run_energy: --checkpoint FILE, rewritten after every round of images ("" = none)
  RunIdentity identity;           // run_energy: the caller's part of the checkpoint identity (hardware and mode);
                                  // run_energy adds the arguments, the model's weights, the images and the version
};

// The class an image's record (ImageTransient::class_t/v) gives at time ts [s].
int class_at_time(const ImageTransient& it, double ts);

// Waveforms as both transient paths record them: samples y[k * stride] at the time points t[k] [s].
// Linear interpolation at time x [s] (clamped to the ends).
double interp(const std::vector<double>& t, const double* y, size_t stride, double x);
// When an output enters its settling band between t0 and t1 [s]: the zero of its distance beyond the band edge, y0 >
// 0 at t0 and y1 <= 0 at t1, on the parabola through those and (ta, ya), the point before t0 (ta < t0). The
// parabola's error is third order in the step, the line's second (h^2 / (8 tau) late for an output approaching
// with time constant tau), so the entry needs no shorter steps than the approach. Where the parabola is not
// monotone between t0 and t1 (a ring, a kink), the line through the two points.
double band_entry(double ta, double ya, double t0, double y0, double t1, double y1);
// An output's settling time [s]: when it last enters the band |y - fin| <= band (band_entry between the last
// sample outside and the next; the line where no sample precedes); 0 if every sample is inside, t.back() if the
// last one is not.
double last_band_entry(const std::vector<double>& t, const double* y, size_t stride, double fin, double band);

// Runs the engine's transient of the full mapped netlist of one input (codes: the sample's DAC codes; from: the
// codes before the step, used when opt.from_previous) and reduces it to settling time, energy and classes at
// the sampling times `sample_times` [s] (outputs linearly interpolated between time points; after tstop: the
// final class). Errors: the engine's, or no settling within 2^6 doublings of the automatic tstop.
// start (optional): the fast DC path's periphery voltages of the state before the step (FastEvaluator::evaluate_one
// of the input whose codes `from` are, or of an all-zero input for the reset state), the initial operating point's
// Newton starting point (FlatNetlist::guess, as compare_reference's warm start): a few Newton iterations of the full
// matrix instead of the cold-start strategy; the solution is the engine's own either way. nullptr: a cold start.
// first_tstop [s]: without opt.tstop, the first run's length instead of default_tstop (at least that; doubled from
// there as before).
Status image_transient(const HardwareInstance& hw, const LayerCodes& codes, const LayerCodes& from,
                       std::uint64_t sample, const TransientOptions& opt, const std::vector<double>& sample_times,
                       ImageTransient& out, const std::vector<LayerVoltages>* start = nullptr,
                       double first_tstop = 0);

// First guess of the run length of hw's network [s]: per layer 30 closed-loop time constants of the op-amp
// (1 / (2 pi gbw) times a noise gain of 10) plus two full swings at the slew rate (level 2), at least
// 100 DAC edges.
double default_tstop(const HardwareConfig& cfg, int layers);

// Components of one realized mapping (a bill of materials; reference designs in the README).
struct ComponentCounts {
  long opamps = 0;                // TIAs, rectifiers and inverters
  long cells = 0;                 // crossbar cell positions: rows x columns of every tile
  long cells_open = 0;            //   of which programmed to 0 S (no device fitted: gmin 0 or series e96)
  long resistors = 0;             // periphery resistors: TIA feedback, rectifier r1 r2 rl, inverter pair
  long diodes = 0;                // rectifier diodes
  long dacs = 0;                  // DAC channels: one per DAC-driven physical row (+v and -v rows each)
  long adcs = 0;                  // ADC channels: one per digitized neuron
};
ComponentCounts component_counts(const HardwareInstance& hw);

// `nn energy` over the first `samples` test images (0 = all).
struct EnergyReport {
  ComponentCounts components;     // of the realized mapping (trial 0)
  int samples = 0;
  double accuracy = 0;            // fraction, settled classes
  double latency_mean_s = 0, latency_p99_s = 0;
  double energy_mean_j = 0, energy_p99_j = 0;
  double energy_parts_mean_j[kNumEnergyParts] = {};
  long macs = 0;                  // multiply-accumulates per inference (sum of in x out over layers)
  double tops = 0;                // 2 macs / latency_mean_s / 1e12
  double tops_per_w = 0;          // 2 macs / energy_mean_j / 1e12
  std::vector<double> sample_times_s;   // sampling-time table: times [s]
  std::vector<double> accuracy_at;      //   and the accuracy of the classes sampled there (fraction)
  double shortest_sample_time_s = 0;    // [s] earliest time from which on the accuracy stays within 0.1 points of
                                        // `accuracy` (exact, from the images' class changes; not a table time)
  std::vector<int> labels;
  std::vector<ImageTransient> images;   // per sample
  double seconds = 0;             // [s] wall time
  long resumed = 0;               // images taken from the checkpoint instead of being run
};

// Maps and realizes the network (trial 0, as nn eval), gets each image's DAC codes from the fast DC path
// (hybrid layers' codes too; in hybrid mode every layer's DACs step at t = 0) and runs the fast transient path
// (FastTransient::run; opt.engine: image_transient) on each, images in parallel (OpenMP; results do not depend on
// the thread count). The sampling-time table uses 20 times evenly spaced over (0, largest settling time] and the
// longest run, the classes there from each image's class record; the shortest sampling time comes from the class
// records' changes. With opt.checkpoint, images already in the checkpoint are not run
// again (a checkpoint of another run is refused, naming what differs), so a killed run resumes to the same results.
Status run_energy(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, const Dataset& test, int samples,
                  const TransientOptions& opt, EnergyReport& rep);

}  // namespace anasim::nn
