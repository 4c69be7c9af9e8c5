// Hardware of an analog MLP accelerator (the `hardware:` section of a YAML file) and the mapping of a trained
// Mlp onto it: signed weights as differential conductance pairs on crossbar tiles, TIA feedback resistors
// calibrated on training data, precision-rectifier ReLUs (analog mode) or ADC -> digital ReLU -> DAC (hybrid
// mode), and per-trial mismatch draws (HardwareInstance) shared by the netlist builder and the fast evaluator.
//
// Signed weights: differential rows. Every input i drives two physical rows, 2i at +v_i and 2i+1 at -v_i, and
// each neuron has ONE column summing (G+ - G-) v_i into ONE transimpedance amplifier (TIA). The alternative, two
// columns per neuron (G+ and G- into two TIAs and a difference amplifier), needs 3 op-amps per neuron instead of
// one. Differential rows need -v_i: free for DAC-driven layers (a second DAC connected with swapped pins) and
// one inverter per hidden neuron in analog mode. For 784-128-10: analog 128 TIA + 128 rectifier + 128 inverter +
// 10 TIA = 394 op-amps (two columns: 256 + 128 + 128 + 20 + 10 = 542); hybrid 138 op-amps (two columns: 276).
//
// Per layer, with z = W a + b the pre-activation in network units and a the layer input:
//   row voltage      v_i = v_offset + v_unit * a_i  (DAC rows; analog rows: v_offset = 0), bias rows v_bias;
//   conductances     G+ = gmin + scale * max(w, 0), G- = gmin + scale * max(-w, 0) on the (+, -) row pair,
//                    scale = (gmax - gmin) / max|w| (w includes the bias column, rescaled to v_bias);
//   column current   I = scale * v_unit * z  (into the array from the TIA's summing node, up to the sign below);
//   TIA output       y = polarity * rf * scale * v_unit * z, rf chosen so the calibrated |z| percentile lands at
//                    headroom * (op-amp output swing);
//   analog hidden    h = relu_inv(y) = (r2/r1) max(-y, 0) = v_unit(next) * max(z, 0), hn = -h (inverter);
//   ADC layers       codes over [-swing, swing] (last layer) or [0, y(a_cal)] (hybrid hidden: the ADC clips the
//                    negative half, the digital ReLU is max(code, 0), requantized to the next DAC's bits).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>
#include "devices/adc.hpp"
#include "devices/crossbar.hpp"
#include "devices/dac.hpp"
#include "engine/param.hpp"
#include "nn/mlp.hpp"

namespace anasim::nn {

enum class MappingMode { Analog, Hybrid };
// How the target conductances are chosen: ideal = the formula below (the array's parasitics ignored);
// compensated = the exact port transfer of every row block made equal to the intended weights (nn/program.hpp).
enum class ProgramMode { Ideal, Compensated };
// Cells built from fixed resistors of a standard series (a discrete board): none = the conductances as mapped
// (levels, if any); e96 = 1% resistors of the IEC 60063 E96 series, 96 values per decade (steps of 2.4%: uniform
// in log R, so the conductance steps are nonuniform). See series_conductance.
enum class CellSeries { None, E96 };

// The parameter table of the `hardware:` section: names, units, defaults, ranges, descriptions and the
// HardwareConfig member each key sets (one line per key; adding a key is that line plus the member).
const ParamTable& hardware_params();

struct HardwareConfig {
  // Conductances and programming.
  double gmin = 1e-6;             // [S] lowest programmable conductance
  double gmax = 100e-6;           // [S] highest programmable conductance
  int levels = 0;                 // conductance levels in [gmin, gmax], 0 = analog
  ProgramMode program = ProgramMode::Ideal;  // IR-drop compensation of the targets (nn/program.hpp)
  CellSeries series = CellSeries::None;      // cells are fixed resistors of this standard series (realize)
  double series_rmax = 1e6;       // [ohm] largest fitted series resistor (series != none)
  // Inputs.
  double vread_min = 0.0;         // [V] row voltage of input 0 (DAC code 0)
  double vread_max = 0.2;         // [V] row voltage of input 1 (DAC full scale); also the bias row voltage
  int dac_bits = 8;
  double dac_rout = 0.0;          // [ohm] DAC output resistance
  double dac_tr = 1e-9;           // [s] DAC output edge (linear ramp) of an input step (network transient only)
  // Array.
  int tile_rows = 256;            // physical rows per crossbar tile (at most)
  int tile_cols = 256;            // columns per tile (at most)
  double rwire_row = 1.0;         // [ohm] per row-wire segment
  double rwire_col = 1.0;         // [ohm] per column-wire segment
  double rdriver = 10.0;          // [ohm] row driver resistance (inside each tile)
  double rsink = 10.0;            // [ohm] column sink resistance (inside each tile)
  double cwire = 0.2e-15;         // [F] wire capacitance per crossbar segment to ground (network transient only)
  // Periphery.
  MappingMode mode = MappingMode::Analog;
  int adc_bits = 8;
  double adc_rin = 1e9;           // [ohm] ADC input resistance
  double headroom = 0.5;          // calibrated |z| percentile -> this fraction of the op-amp output swing
  double calib_percentile = 99.9; // [%]
  int calib_samples = 2000;       // training images used for calibration
  double rect_r1 = 10e3;          // [ohm] rectifier input resistor (r2 follows from the gain)
  double rect_rl = 100e3;         // [ohm] rectifier output load to ground
  double inv_r = 10e3;            // [ohm] inverter input and feedback resistors
  double diode_is = 1e-14;        // [A] rectifier diodes: saturation current
  double diode_n = 1.0;           //     emission coefficient
  double diode_rs = 0.0;          // [ohm] series resistance
  // Op-amps: the devices/opamp.cpp model. opamp_inst holds instance overrides (level, a0, ...) on the op-amp
  // instance table, opamp_model the part's values (model table); an instance value wins.
  std::string opamp_part = "opa1611";
  ParamValues opamp_inst;
  ParamValues opamp_model;
  // Static mismatch (per trial) and read noise (per sample).
  double sigma_g = 0.0;           // relative conductance programming variation (std)
  double sigma_g_abs = 0.0;       // [S] absolute conductance programming variation (std)
  double stuck_on = 0.0;          // fraction of cells stuck at gmax
  double stuck_off = 0.0;         // fraction of cells stuck at gmin
  double rf_tol = 0.0;            // relative std of every periphery resistor (TIA feedback, rectifier, inverter)
  double vos_sigma = 0.0;         // [V] op-amp offset std (added to the part's vos)
  double dac_inl_sigma = 0.0;     // [LSB] random per-code DAC INL
  double adc_inl_sigma = 0.0;     // [LSB] random per-code ADC INL (threshold shifts, applied by nn/)
  double read_noise = 0.0;        // [A] per-sample noise current at every TIA summing node (std)
  std::uint64_t seed = 1;         // seed of the static draws (`nn eval`; `nn mc` takes --seed)
};

// A config with every default (op-amp part resolved).
HardwareConfig default_hardware_config();

// Reads a `hardware:` section as the engine's netlist reader keeps it (ParsedSection, parse tree of the
// netlist): keys are the table names; `opamp:` is a sub-map {model: <part>, <op-amp parameter>: value, ...}
// (entries "opamp.model", "opamp.<name>"). Values are expressions in `scope` (the netlist's top-level params:
// `gmax: "{gmax_p}"`) and take SPICE suffixes. Errors are located (file:line:col) Input errors.
Status hardware_from_section(const ParsedSection& section, const Scope& scope, HardwareConfig& cfg);

// Reads a YAML file through the engine's netlist reader (parse_yaml): its `hardware:` section, or the whole
// file when it has none, with the file's own `params:` evaluated on top of `parent` (may be null).
Status load_hardware_config(const std::string& path, HardwareConfig& cfg, const Scope* parent = nullptr);
Status parse_hardware_config(const std::string& yaml_text, const std::string& pseudo_name, HardwareConfig& cfg,
                             const Scope* parent = nullptr);

// Sets one parameter from text (an expression in `scope`): a table name ("sigma_g", "mode"), or
// "opamp.<name>" / "opamp.model".
Status set_hardware_param(HardwareConfig& cfg, const std::string& name, const std::string& value,
                          const Scope& scope = Scope());

// An op-amp parameter as the device sees it (instance override, else the part's value), by table name.
double opamp_param(const HardwareConfig& cfg, const char* name);
// Output swing limits of the op-amps [V]: vhi = vpos - headroom_hi, vlo = vneg + headroom_lo.
void opamp_swing(const HardwareConfig& cfg, double& vhi, double& vlo);

const char* mode_name(MappingMode m);

// One layer mapped onto hardware (nominal values; mismatch comes in HardwareInstance).
struct LayerMapping {
  int inputs = 0;                 // network inputs a_i (without the bias)
  int outputs = 0;                // neurons = columns = TIAs
  bool dac_rows = false;          // rows driven by DACs (first layer; every layer in hybrid mode)
  bool rectifier = false;         // analog hidden layer: precision rectifier + inverter per neuron
  bool adc = false;               // outputs digitized (last layer; hidden layers in hybrid mode)
  bool last = false;
  int polarity = 1;               // y = polarity * rf * scale * v_unit * z
  MatrixRd w;                     // outputs x (inputs + 1): weights and bias column, mapped to row voltages
  double scale = 0;               // [S per unit of w]
  double v_unit = 0;              // [V] row voltage per unit of input
  double v_offset = 0;            // [V] row voltage at input 0
  double v_bias = 0;              // [V] bias row voltage
  double z_cal = 0;               // calibrated |z| percentile (network units)
  double a_cal = 0;               // calibrated relu(z) percentile (hidden layers)
  double rf = 0;                  // [ohm] TIA feedback resistor
  double rect_r2 = 0;             // [ohm] rectifier feedback resistor (rectifier layers)
  DacSpec dac;                    // row DACs (dac_rows; also the bias rows of analog layers); seed set per instance
  AdcSpec adc_spec;               // output ADCs (adc)
  std::vector<int> row_blocks;    // physical-row offsets of the row tiles, size (row tiles + 1); rows = 2*(inputs+1)
  std::vector<int> col_blocks;    // column offsets of the column tiles, size (column tiles + 1)
  std::vector<double> g_target;   // target conductances [S], physical rows x outputs, row-major
  int physical_rows() const { return 2 * (inputs + 1); }
};

// What compensated programming (program: compensated, nn/program.hpp) achieved on one layer.
struct LayerProgram {
  double residual = 0;            // max |W_eff - W| / max |W| over the layer's weights and bias (after clipping
                                  // to [gmin, gmax] and rounding to the levels), W_eff the exact port transfer
  double residual_out = 0;        // rms over the calibration images and neurons of the column-current error
                                  // (W_eff - W) u, relative to the rms of the ideal W u (u: row voltages)
  double scale_factor = 1;        // factor applied to the layer's scale (< 1 when the window needed it; rf / it)
  int iterations = 0;             // exact port solves of the layer
  double seconds = 0;
};

struct MappedNetwork {
  HardwareConfig cfg;
  std::vector<int> sizes;         // network layer sizes
  std::vector<LayerMapping> layers;
  double vhi = 0, vlo = 0;        // [V] op-amp output swing limits
  std::vector<LayerProgram> program;  // per layer with program: compensated, else empty
  int opamps() const;             // op-amps of the mapped circuit
};

// Maps `net` onto `cfg`. `calib` holds calibration images (one per row; the first cfg.calib_samples are used).
Status map_network(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, MappedNetwork& out);

// Periphery element slots of a neuron (resistors and op-amps), in the order used by the netlist and evaluator.
enum PeripheryResistor { kResRf, kResR1, kResR2, kResRl, kResInv1, kResInv2, kNumPeripheryRes };
enum PeripheryOpamp { kOpTia, kOpRect, kOpInv, kNumPeripheryOps };

// One crossbar tile of one trial.
struct TileInstance {
  std::string name;               // "xb<layer>_<row tile>_<col tile>"
  int row0 = 0, col0 = 0;         // first physical row / column of the layer it covers
  CrossbarSpec spec;              // rows x cols, target conductances, wires, mismatch, seed
  std::vector<double> g;          // programmed conductances [S] (program_crossbar(spec))
};

// One layer of one trial: tiles and periphery values with mismatch drawn.
struct LayerInstance {
  std::vector<TileInstance> tiles;
  std::vector<DacSpec> row_dacs;  // per physical row (DAC layers) or the 2 bias rows (analog layers, rows 0, 1 =
                                  // physical rows 2*inputs, 2*inputs+1); seed per DAC
  std::vector<double> res;        // outputs x kNumPeripheryRes [ohm]
  std::vector<double> vos;        // outputs x kNumPeripheryOps [V] op-amp offsets (part vos + draw)
  std::vector<std::vector<double>> adc_inl;  // per neuron: per-code INL [LSB] (empty without adc_inl_sigma)
  std::uint64_t noise_seed = 0;   // read-noise stream
  // The DAC of physical row p (DAC layers: any row; analog layers: bias rows only).
  const DacSpec& dac_of_row(int p, int inputs) const {
    return row_dacs.size() == 2 ? row_dacs[p - 2 * inputs] : row_dacs[p];
  }
};

struct HardwareInstance {
  const MappedNetwork* map = nullptr;
  std::uint64_t seed = 0;
  int trial = 0;
  std::vector<LayerInstance> layers;
};

// Draws trial `trial` of seed `seed`: conductance programming (sigma_g, stuck cells; levels; the series'
// values, which also replace the computed rf and rect_r2), periphery resistor tolerances, op-amp offsets, DAC
// and ADC INL. Every draw depends only on (seed, trial, element name, quantity).
void realize(const MappedNetwork& map, std::uint64_t seed, int trial, HardwareInstance& out);

// Read-noise current [A] of neuron j of layer l for sample k (0 without read_noise).
double read_noise_current(const HardwareInstance& hw, int l, int j, std::uint64_t sample);

// ADC code of neuron j of layer l for input voltage v (the ADC transfer plus the INL threshold shifts).
inline long adc_code(const HardwareInstance& hw, int l, int j, double v) {
  const auto& inl = hw.layers[l].adc_inl;
  return adc_convert(hw.map->layers[l].adc_spec, v, 0, j, inl.empty() ? nullptr : inl[j].data());
}
// adc_code of neurons 0 .. n-1 of layer l for input voltages v[0 .. n-1] into codes (a vectorized loop when the
// layer's ADCs have no INL and no comparator noise).
inline void adc_codes(const HardwareInstance& hw, int l, const double* v, int n, long* codes) {
  const AdcSpec s = hw.map->layers[l].adc_spec;
  if (hw.layers[l].adc_inl.empty() && !(s.noise > 0)) {
#pragma omp simd
    for (int j = 0; j < n; ++j) codes[j] = adc_quantize(s, adc_input(s, v[j]));
    return;
  }
  for (int j = 0; j < n; ++j) codes[j] = adc_code(hw, l, j, v[j]);
}

// The E96 resistance nearest to r > 0 [ohm] (nearest in log R: the ratio closest to 1); r itself if it is not a
// finite positive value.
double e96_nearest(double r);
// Target conductance g [S] as the fitted resistor of cfg.series: with series e96, 0 (open, no part) for
// g < 1 / (2 series_rmax), else 1 / R with R the E96 value nearest to 1/g, held within [1/gmax, series_rmax]
// (the next E96 value inward when the nearest falls outside). With series none, g unchanged.
double series_conductance(const HardwareConfig& cfg, double g);
// A computed periphery resistance r [ohm] (TIA feedback, rectifier r2) as fitted: the nearest E96 value with
// series e96, else r.
double series_resistance(const HardwareConfig& cfg, double r);

// DAC input code of a network input a of layer l (x = clip((a - 0) / in_range, 0, 1) -> round(x * max code)).
// Inline: it runs for every pixel of every image.
inline long input_code(const DacSpec& s, double x) { return dac_quantize(s, s.vmin + x * (s.vmax - s.vmin)); }
inline long input_code(const LayerMapping& lm, double x) { return input_code(lm.dac, x); }
// input_code of inputs x[0 .. lm.inputs-1] into codes (a loop that vectorizes: the quantizer is branch-free).
inline void input_codes(const LayerMapping& lm, const float* x, long* codes) {
#pragma omp simd
  for (int i = 0; i < lm.inputs; ++i) codes[i] = input_code(lm, static_cast<double>(x[i]));
}

// Hybrid mode: the DAC code that layer `to` receives for ADC code `adc` of the layer before it, `from`: the digital
// ReLU (negative codes to 0), requantized to the DAC.
inline long relu_code(const LayerMapping& from, const LayerMapping& to, long adc) {
  return input_code(to, std::max(0.0, static_cast<double>(adc)) / static_cast<double>(adc_max_code(from.adc_spec)));
}

}  // namespace anasim::nn
