// Hardware configuration (parameter table, YAML reader), the mapping of an Mlp onto crossbar tiles and
// periphery, and the per-trial mismatch draws (see hardware.hpp).
#include "nn/hardware.hpp"
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include "devices/random.hpp"
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/expr.hpp"

namespace anasim::nn {

namespace {

enum {
  kGmin, kGmax, kLevels, kVreadMin, kVreadMax, kDacBits, kDacRout, kTileRows, kTileCols, kRwire, kRwireRow,
  kRwireCol, kRdriver, kRsink, kMode, kAdcBits, kAdcRin, kHeadroom, kCalibPercentile, kCalibSamples, kRectR1,
  kRectRl, kInvR, kDiodeIs, kDiodeN, kDiodeRs, kSigmaG, kSigmaGAbs, kStuckOn, kStuckOff, kRfTol, kVosSigma,
  kDacInlSigma, kAdcInlSigma, kReadNoise, kSeed, kNumHw
};

// Seeds of device parameters are doubles in netlists: keep them below 2^53 (and nonzero).
std::uint64_t netlist_seed(std::uint64_t s) { return (s & ((std::uint64_t(1) << 52) - 1)) | 1; }

double normal_draw(std::uint64_t seed, int trial, const std::string& owner, const char* what) {
  return rnd::normal(variation_seed(seed, trial, owner, what), 0, 0);
}

const DeviceType& opamp_type() { return *builtin_catalog().find("opamp"); }

// Copies table values into the struct (after parsing or a sweep assignment).
void apply(const ParamValues& p, HardwareConfig& c) {
  c.gmin = p[kGmin];
  c.gmax = p[kGmax];
  c.levels = static_cast<int>(p[kLevels]);
  c.vread_min = p[kVreadMin];
  c.vread_max = p[kVreadMax];
  c.dac_bits = static_cast<int>(p[kDacBits]);
  c.dac_rout = p[kDacRout];
  c.tile_rows = static_cast<int>(p[kTileRows]);
  c.tile_cols = static_cast<int>(p[kTileCols]);
  c.rwire_row = p.has(kRwireRow) ? p[kRwireRow] : p[kRwire];
  c.rwire_col = p.has(kRwireCol) ? p[kRwireCol] : p[kRwire];
  c.rdriver = p[kRdriver];
  c.rsink = p[kRsink];
  c.mode = p.text()[kMode] == "hybrid" ? MappingMode::Hybrid : MappingMode::Analog;
  c.adc_bits = static_cast<int>(p[kAdcBits]);
  c.adc_rin = p[kAdcRin];
  c.headroom = p[kHeadroom];
  c.calib_percentile = p[kCalibPercentile];
  c.calib_samples = static_cast<int>(p[kCalibSamples]);
  c.rect_r1 = p[kRectR1];
  c.rect_rl = p[kRectRl];
  c.inv_r = p[kInvR];
  c.diode_is = p[kDiodeIs];
  c.diode_n = p[kDiodeN];
  c.diode_rs = p[kDiodeRs];
  c.sigma_g = p[kSigmaG];
  c.sigma_g_abs = p[kSigmaGAbs];
  c.stuck_on = p[kStuckOn];
  c.stuck_off = p[kStuckOff];
  c.rf_tol = p[kRfTol];
  c.vos_sigma = p[kVosSigma];
  c.dac_inl_sigma = p[kDacInlSigma];
  c.adc_inl_sigma = p[kAdcInlSigma];
  c.read_noise = p[kReadNoise];
  c.seed = static_cast<std::uint64_t>(p[kSeed]);
}

// Table values from the struct (so a parsed config can be modified by name and re-applied).
ParamValues values_of(const HardwareConfig& c) {
  ParamValues p = default_params(hardware_params());
  auto set = [&p](int i, double v) { p.value[i] = v; };
  set(kGmin, c.gmin); set(kGmax, c.gmax); set(kLevels, c.levels); set(kVreadMin, c.vread_min);
  set(kVreadMax, c.vread_max); set(kDacBits, c.dac_bits); set(kDacRout, c.dac_rout); set(kTileRows, c.tile_rows);
  set(kTileCols, c.tile_cols); set(kRwireRow, c.rwire_row); set(kRwireCol, c.rwire_col);
  p.given[kRwireRow] = p.given[kRwireCol] = 1;
  set(kRdriver, c.rdriver); set(kRsink, c.rsink);
  p.text()[kMode] = mode_name(c.mode);
  set(kAdcBits, c.adc_bits); set(kAdcRin, c.adc_rin); set(kHeadroom, c.headroom);
  set(kCalibPercentile, c.calib_percentile); set(kCalibSamples, c.calib_samples); set(kRectR1, c.rect_r1);
  set(kRectRl, c.rect_rl); set(kInvR, c.inv_r); set(kDiodeIs, c.diode_is); set(kDiodeN, c.diode_n);
  set(kDiodeRs, c.diode_rs); set(kSigmaG, c.sigma_g); set(kSigmaGAbs, c.sigma_g_abs); set(kStuckOn, c.stuck_on);
  set(kStuckOff, c.stuck_off); set(kRfTol, c.rf_tol); set(kVosSigma, c.vos_sigma);
  set(kDacInlSigma, c.dac_inl_sigma); set(kAdcInlSigma, c.adc_inl_sigma); set(kReadNoise, c.read_noise);
  set(kSeed, static_cast<double>(c.seed));
  return p;
}

Status resolve_part(HardwareConfig& c, const SourceLoc& loc) {
  c.opamp_model = default_params(opamp_type().model_params);
  if (c.opamp_part.empty()) return {};
  if (!opamp_type().builtin_model(c.opamp_part, c.opamp_model))
    return Status::input(fmt::format("unknown op-amp part '{}'; expected one of: {}", c.opamp_part,
                                     fmt::join(opamp_type().builtin_model_names(), ", ")),
                         loc);
  return {};
}

// Checks relations the table ranges cannot express.
Status check(const HardwareConfig& c) {
  if (!(c.gmax > c.gmin)) return Status::input(fmt::format("hardware: gmax ({}) must exceed gmin ({})", c.gmax, c.gmin));
  if (!(c.vread_max > c.vread_min))
    return Status::input(fmt::format("hardware: vread_max ({}) must exceed vread_min ({})", c.vread_max, c.vread_min));
  if (c.levels == 1) return Status::input("hardware: levels must be 0 (analog) or at least 2");
  if (c.stuck_on + c.stuck_off > 1) return Status::input("hardware: stuck_on + stuck_off must not exceed 1");
  if (c.tile_rows < 2) return Status::input("hardware: tile_rows must be at least 2 (one differential row pair)");
  double vhi, vlo;
  opamp_swing(c, vhi, vlo);
  if (!(vhi > 0 && vlo < 0))
    return Status::input(fmt::format("hardware: the op-amp output swing {} .. {} V must include 0 V", vlo, vhi));
  const double level = opamp_param(c, "level");
  if (level > 0 && !(opamp_param(c, "rout") > 0)) return Status::input("hardware: op-amp rout must be > 0 at level 1, 2");
  return {};
}

// ---- YAML ----

struct YamlText {
  const SourceFile* src = nullptr;  // the registered text
  SourceLoc loc(const YAML::Mark& m) const {
    if (m.is_null() || m.line < 0) return SourceLoc(src, 0, 0);
    return SourceLoc(src, m.line + 1, m.column + 1);
  }
};

Status scalar_assign(const YamlText& yt, const std::string& key, const YAML::Node& k, const YAML::Node& v,
                     ParamAssign& pa) {
  pa.name = to_lower(key);
  pa.loc = yt.loc(k.Mark());
  if (!v.IsScalar())
    return Status::input(fmt::format("hardware: expected a value for '{}'", key), yt.loc(v.Mark()));
  ValueExpr e;
  e.text = v.Scalar();
  e.loc = yt.loc(v.Mark());
  pa.values.push_back(std::move(e));
  return {};
}

}  // namespace

const ParamTable& hardware_params() {
  static const ParamTable t = {
      {"gmin", "S", 1e-6, 0, kInf, "lowest programmable conductance"},
      {"gmax", "S", 100e-6, 0, kInf, "highest programmable conductance", ParamKind::Real, true},
      {"levels", "", 0, 0, 1e6, "conductance levels in [gmin, gmax] (0 = analog)"},
      {"vread_min", "V", 0, -10, 10, "row voltage of input 0 (DAC code 0)"},
      {"vread_max", "V", 0.2, -10, 10, "row voltage of input 1 (DAC full scale) and of the bias rows"},
      {"dac_bits", "", 8, 1, 24, "DAC resolution"},
      {"dac_rout", "ohm", 0, 0, kInf, "DAC output resistance"},
      {"tile_rows", "", 256, 2, 1e6, "physical rows per crossbar tile (at most)"},
      {"tile_cols", "", 256, 1, 1e6, "columns per crossbar tile (at most)"},
      {"rwire", "ohm", 1, 0, kInf, "wire resistance per segment, rows and columns"},
      {"rwire_row", "ohm", 1, 0, kInf, "row wire resistance per segment (overrides rwire)"},
      {"rwire_col", "ohm", 1, 0, kInf, "column wire resistance per segment (overrides rwire)"},
      {"rdriver", "ohm", 10, 0, kInf, "row driver resistance (in each tile)"},
      {"rsink", "ohm", 10, 0, kInf, "column sink resistance (in each tile)"},
      {"mode", "", 0, 0, 0, "analog (precision-rectifier ReLU) or hybrid (ADC -> digital ReLU -> DAC)",
       ParamKind::Text},
      {"adc_bits", "", 8, 1, 30, "ADC resolution"},
      {"adc_rin", "ohm", 1e9, 0, kInf, "ADC input resistance", ParamKind::Real, true},
      {"headroom", "", 0.5, 0, 1, "calibrated |pre-activation| percentile -> this fraction of the op-amp swing",
       ParamKind::Real, true},
      {"calib_percentile", "%", 99.9, 0, 100, "calibration percentile of |pre-activation|", ParamKind::Real, true},
      {"calib_samples", "", 2000, 1, 1e9, "training images used for calibration"},
      {"rect_r1", "ohm", 10e3, 0, kInf, "rectifier input resistor", ParamKind::Real, true},
      {"rect_rl", "ohm", 100e3, 0, kInf, "rectifier output load to ground", ParamKind::Real, true},
      {"inv_r", "ohm", 10e3, 0, kInf, "inverter input and feedback resistors", ParamKind::Real, true},
      {"diode_is", "A", 1e-14, 0, kInf, "rectifier diode saturation current", ParamKind::Real, true},
      {"diode_n", "", 1, 0, kInf, "rectifier diode emission coefficient", ParamKind::Real, true},
      {"diode_rs", "ohm", 0, 0, kInf, "rectifier diode series resistance"},
      {"sigma_g", "", 0, 0, 10, "relative conductance programming variation (std)"},
      {"sigma_g_abs", "S", 0, 0, kInf, "absolute conductance programming variation (std)"},
      {"stuck_on", "", 0, 0, 1, "fraction of cells stuck at gmax"},
      {"stuck_off", "", 0, 0, 1, "fraction of cells stuck at gmin"},
      {"rf_tol", "", 0, 0, 0.5, "relative std of every periphery resistor (TIA feedback, rectifier, inverter)"},
      {"vos_sigma", "V", 0, 0, kInf, "op-amp offset voltage std (added to the part's vos)"},
      {"dac_inl_sigma", "LSB", 0, 0, kInf, "random per-code DAC INL (std)"},
      {"adc_inl_sigma", "LSB", 0, 0, kInf, "random per-code ADC INL (std of the code thresholds)"},
      {"read_noise", "A", 0, 0, kInf, "noise current at every TIA summing node, per sample (std)"},
      {"seed", "", 1, 0, 9007199254740992.0, "seed of the static mismatch draws (nn eval)"},
  };
  return t;
}

const char* mode_name(MappingMode m) { return m == MappingMode::Hybrid ? "hybrid" : "analog"; }

HardwareConfig default_hardware_config() {
  HardwareConfig c;
  c.opamp_inst = default_params(opamp_type().params);
  resolve_part(c, {});
  return c;
}

double opamp_param(const HardwareConfig& cfg, const char* name) {
  const int i = cfg.opamp_inst.index_of(name);
  if (i < 0) return std::nan("");
  if (cfg.opamp_inst.has(i)) return cfg.opamp_inst[i];
  return cfg.opamp_model.table ? cfg.opamp_model[i] : cfg.opamp_inst[i];
}

void opamp_swing(const HardwareConfig& cfg, double& vhi, double& vlo) {
  vhi = opamp_param(cfg, "vpos") - opamp_param(cfg, "headroom_hi");
  vlo = opamp_param(cfg, "vneg") + opamp_param(cfg, "headroom_lo");
}

Status parse_hardware_config(const std::string& text, const std::string& pseudo_name, HardwareConfig& cfg) {
  cfg = default_hardware_config();
  YamlText yt;
  yt.src = SourceFile::add(pseudo_name, text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::input(fmt::format("hardware config: {}", e.msg), yt.loc(e.mark));
  }
  const SourceLoc file_loc(yt.src, 0, 0);  // the config as a whole
  if (!root.IsMap()) return Status::input("hardware config: expected a YAML mapping", file_loc);
  YAML::Node hw = root["hardware"];
  if (!hw.IsDefined()) hw = root;
  else if (!hw.IsMap())
    return Status::input("expected 'hardware' to be a mapping of parameter: value", yt.loc(hw.Mark()));

  std::vector<ParamAssign> assigns, op_assigns;
  Status st;
  try {
    for (auto it = hw.begin(); it != hw.end(); ++it) {
      const std::string key = to_lower(it->first.as<std::string>());
      if (key == "opamp") {
        // A copy (a node is a handle): it->second lives in the iterator's proxy, a temporary of this statement.
        const YAML::Node om = it->second;
        if (!om.IsMap()) {
          st.merge(Status::input("expected 'opamp' to be a mapping {model: part, parameter: value}",
                                 yt.loc(om.Mark())));
          continue;
        }
        for (auto jt = om.begin(); jt != om.end(); ++jt) {
          const std::string ok = to_lower(jt->first.as<std::string>());
          if (ok == "model") {
            if (!jt->second.IsScalar()) {
              st.merge(Status::input("expected a part name for opamp model", yt.loc(jt->second.Mark())));
              continue;
            }
            cfg.opamp_part = to_lower(jt->second.Scalar());
            if (Status s = resolve_part(cfg, yt.loc(jt->second.Mark())); !s) st.merge(s);
            continue;
          }
          ParamAssign pa;
          if (Status s = scalar_assign(yt, ok, jt->first, jt->second, pa); !s) st.merge(s);
          else op_assigns.push_back(std::move(pa));
        }
        continue;
      }
      ParamAssign pa;
      if (Status s = scalar_assign(yt, key, it->first, it->second, pa); !s) st.merge(s);
      else assigns.push_back(std::move(pa));
    }
  } catch (const YAML::Exception& e) {
    return Status::input(fmt::format("hardware config: {}", e.msg), yt.loc(e.mark));
  }
  if (!st) return st;
  ParamValues p = default_params(hardware_params());
  p.text()[kMode] = "analog";
  const Scope scope;
  if (Status s = assign_params(p, assigns, scope, "hardware"); !s) return s;
  const std::string mode = to_lower(p.text()[kMode]);
  if (mode != "analog" && mode != "hybrid")
    return Status::input(fmt::format("hardware: mode must be analog or hybrid, got '{}'", p.text()[kMode]), p.loc[kMode]);
  p.text()[kMode] = mode;
  for (int i : {kLevels, kDacBits, kTileRows, kTileCols, kAdcBits, kCalibSamples, kSeed})
    if (p[i] != std::floor(p[i]))
      return Status::input(fmt::format("hardware: {} must be an integer, got {}", hardware_params()[i].name, p[i]),
                           p.loc[i]);
  apply(p, cfg);
  if (Status s = assign_params(cfg.opamp_inst, op_assigns, scope, "hardware opamp"); !s) return s;
  return check(cfg);
}

Status load_hardware_config(const std::string& path, HardwareConfig& cfg) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const SourceLoc l = SourceLoc::whole(path);
    return Status::input("cannot open the hardware config", l);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_hardware_config(ss.str(), path, cfg);
}

Status set_hardware_param(HardwareConfig& cfg, const std::string& name_in, const std::string& value) {
  const std::string name = to_lower(name_in);
  ParamAssign pa;
  ValueExpr e;
  e.text = value;
  pa.values.push_back(e);
  const Scope scope;
  if (name.rfind("opamp.", 0) == 0) {
    const std::string sub = name.substr(6);
    if (sub == "model") {
      cfg.opamp_part = to_lower(value);
      if (Status s = resolve_part(cfg, {}); !s) return s;
      return check(cfg);
    }
    pa.name = sub;
    if (Status s = assign_params(cfg.opamp_inst, {pa}, scope, "hardware opamp"); !s) return s;
    return check(cfg);
  }
  ParamValues p = values_of(cfg);
  pa.name = name;
  if (name == "rwire") p.given[kRwireRow] = p.given[kRwireCol] = 0;
  if (Status s = assign_params(p, {pa}, scope, "hardware"); !s) return s;
  const std::string mode = to_lower(p.text()[kMode]);
  if (mode != "analog" && mode != "hybrid")
    return Status::input(fmt::format("hardware: mode must be analog or hybrid, got '{}'", value));
  p.text()[kMode] = mode;
  apply(p, cfg);
  return check(cfg);
}

// ---- mapping ----

int MappedNetwork::opamps() const {
  int n = 0;
  for (const auto& l : layers) n += l.outputs * (l.rectifier ? 3 : 1);
  return n;
}

namespace {

double percentile(std::vector<double>& v, double pct) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(std::llround(pct / 100.0 * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

std::vector<int> balanced_blocks(int n, int per_block_max, int unit) {
  // Blocks of whole units (row pairs), at most per_block_max elements each, sizes as equal as possible.
  const int units = n / unit;
  const int max_units = std::max(1, per_block_max / unit);
  const int nb = (units + max_units - 1) / max_units;
  std::vector<int> off{0};
  for (int b = 0; b < nb; ++b) {
    off.push_back(static_cast<int>(static_cast<long>(units) * (b + 1) / nb) * unit);
  }
  return off;
}

}  // namespace

Status map_network(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, MappedNetwork& out) {
  if (Status st = validate(net); !st) return st;
  if (Status st = check(cfg); !st) return st;
  out = MappedNetwork{};
  out.cfg = cfg;
  out.sizes = net.sizes();
  opamp_swing(cfg, out.vhi, out.vlo);
  const double swing = std::min(out.vhi, -out.vlo);
  const int L = static_cast<int>(net.layers.size());
  const bool hybrid = cfg.mode == MappingMode::Hybrid;

  // Calibration: float forward pass over the first calib_samples images.
  const int nc = std::min<int>(static_cast<int>(calib.rows()), cfg.calib_samples);
  if (nc < 1) return Status::input("hardware mapping needs at least one calibration image");
  if (calib.cols() != net.inputs())
    return Status::input(fmt::format("calibration images have {} pixels, the model {} inputs", calib.cols(),
                                     net.inputs()));
  MatrixRd a = calib.topRows(nc).cast<double>();
  std::vector<double> zcal(L), acal(L);
  for (int l = 0; l < L; ++l) {
    const DenseLayer& dl = net.layers[l];
    MatrixRd z = a * dl.weight.transpose();
    z.rowwise() += dl.bias.transpose();
    std::vector<double> absz(z.data(), z.data() + z.size());
    for (double& v : absz) v = std::fabs(v);
    zcal[l] = percentile(absz, cfg.calib_percentile);
    if (l + 1 < L) {
      a = z.cwiseMax(0.0);
      std::vector<double> av(a.data(), a.data() + a.size());
      acal[l] = percentile(av, cfg.calib_percentile);
      if (!(acal[l] > 0)) acal[l] = std::max(1e-12, a.maxCoeff());
    }
    if (!(zcal[l] > 0)) zcal[l] = 1.0;
  }

  const double span = cfg.vread_max - cfg.vread_min;
  for (int l = 0; l < L; ++l) {
    const DenseLayer& dl = net.layers[l];
    LayerMapping m;
    m.inputs = static_cast<int>(dl.weight.cols());
    m.outputs = static_cast<int>(dl.weight.rows());
    m.last = l + 1 == L;
    m.dac_rows = l == 0 || hybrid;
    m.rectifier = !m.last && !hybrid;
    m.adc = m.last || hybrid;
    m.polarity = m.rectifier ? -1 : 1;
    m.v_bias = cfg.vread_max;
    if (m.dac_rows) {
      // Input a = x * in_range with x in [0, 1] the DAC's fraction of full scale (pixels for layer 0).
      const double in_range = l == 0 ? 1.0 : acal[l - 1];
      m.v_unit = span / in_range;
      m.v_offset = cfg.vread_min;
    } else {
      m.v_unit = cfg.vread_max / acal[l - 1];
      m.v_offset = 0.0;
    }
    // I = scale * sum_i w_i v_i + scale * w_b v_bias = scale * v_unit * z  <=>  w = W, w_b = (v_unit b - v_offset
    // sum_i W_i) / v_bias; the polarity flips the sign (y = -rf I).
    m.w.resize(m.outputs, m.inputs + 1);
    m.w.leftCols(m.inputs) = dl.weight;
    for (int j = 0; j < m.outputs; ++j)
      m.w(j, m.inputs) = (m.v_unit * dl.bias(j) - m.v_offset * dl.weight.row(j).sum()) / m.v_bias;
    m.w *= -m.polarity;
    const double wmax = m.w.cwiseAbs().maxCoeff();
    m.scale = (cfg.gmax - cfg.gmin) / (wmax > 0 ? wmax : 1.0);
    m.z_cal = zcal[l];
    m.a_cal = m.last ? 0.0 : acal[l];
    m.rf = cfg.headroom * swing / (m.scale * m.v_unit * m.z_cal);
    if (m.rectifier) {
      const double v_unit_next = cfg.vread_max / acal[l];
      m.rect_r2 = cfg.rect_r1 * v_unit_next / (m.rf * m.scale * m.v_unit);
    }
    m.dac.bits = cfg.dac_bits;
    m.dac.vmin = cfg.vread_min;
    m.dac.vmax = cfg.vread_max;
    m.dac.rout = cfg.dac_rout;
    m.dac.inl_sigma = cfg.dac_inl_sigma;
    if (m.adc) {
      m.adc_spec.bits = cfg.adc_bits;
      m.adc_spec.rin = cfg.adc_rin;
      if (m.last) {
        m.adc_spec.vmin = -swing;
        m.adc_spec.vmax = swing;
      } else {
        m.adc_spec.vmin = 0.0;
        m.adc_spec.vmax = m.rf * m.scale * m.v_unit * m.a_cal;  // y at the activation percentile
      }
    }
    // Physical rows: 2i = +input i, 2i+1 = -input i (i = inputs: bias).
    const int P = m.physical_rows();
    m.g_target.resize(static_cast<size_t>(P) * m.outputs);
    for (int i = 0; i <= m.inputs; ++i)
      for (int j = 0; j < m.outputs; ++j) {
        const double w = m.w(j, i);
        m.g_target[static_cast<size_t>(2 * i) * m.outputs + j] = cfg.gmin + m.scale * std::max(w, 0.0);
        m.g_target[static_cast<size_t>(2 * i + 1) * m.outputs + j] = cfg.gmin + m.scale * std::max(-w, 0.0);
      }
    m.row_blocks = balanced_blocks(P, cfg.tile_rows, 2);
    m.col_blocks = balanced_blocks(m.outputs, cfg.tile_cols, 1);
    out.layers.push_back(std::move(m));
  }
  return {};
}

long input_code(const LayerMapping& lm, double x) {
  DacSpec s = lm.dac;
  return dac_quantize(s, s.vmin + x * (s.vmax - s.vmin));
}

void realize(const MappedNetwork& map, std::uint64_t seed, int trial, HardwareInstance& out) {
  const HardwareConfig& c = map.cfg;
  out.map = &map;
  out.seed = seed;
  out.trial = trial;
  out.layers.assign(map.layers.size(), LayerInstance{});
  const double vos0 = opamp_param(c, "vos");
  for (size_t l = 0; l < map.layers.size(); ++l) {
    const LayerMapping& m = map.layers[l];
    LayerInstance& li = out.layers[l];
    const int nrb = static_cast<int>(m.row_blocks.size()) - 1, ncb = static_cast<int>(m.col_blocks.size()) - 1;
    for (int rb = 0; rb < nrb; ++rb)
      for (int cb = 0; cb < ncb; ++cb) {
        TileInstance t;
        t.name = fmt::format("xb{}_{}_{}", l, rb, cb);
        t.row0 = m.row_blocks[rb];
        t.col0 = m.col_blocks[cb];
        CrossbarSpec& s = t.spec;
        s.rows = m.row_blocks[rb + 1] - m.row_blocks[rb];
        s.cols = m.col_blocks[cb + 1] - m.col_blocks[cb];
        s.g.resize(static_cast<size_t>(s.rows) * s.cols);
        for (int i = 0; i < s.rows; ++i)
          for (int j = 0; j < s.cols; ++j)
            s.g[static_cast<size_t>(i) * s.cols + j] =
                m.g_target[static_cast<size_t>(t.row0 + i) * m.outputs + t.col0 + j];
        s.rwire_row = c.rwire_row;
        s.rwire_col = c.rwire_col;
        s.rdriver = c.rdriver;
        s.rsink = c.rsink;
        s.gmin = c.gmin;
        s.gmax = c.gmax;
        s.levels = c.levels;
        s.sigma_rel = c.sigma_g;
        s.sigma_abs = c.sigma_g_abs;
        s.stuck_on = c.stuck_on;
        s.stuck_off = c.stuck_off;
        s.seed = netlist_seed(variation_seed(seed, trial, t.name, "program"));
        t.g = program_crossbar(s);
        li.tiles.push_back(std::move(t));
      }
    // DACs: every physical row of a DAC layer, else the two bias rows.
    const int P = m.physical_rows();
    const int first_dac_row = m.dac_rows ? 0 : P - 2;
    for (int p = first_dac_row; p < P; ++p) {
      DacSpec d = m.dac;
      d.seed = netlist_seed(variation_seed(seed, trial, fmt::format("dac{}_{}", l, p), "inl"));
      li.row_dacs.push_back(d);
    }
    // Periphery.
    li.res.assign(static_cast<size_t>(m.outputs) * kNumPeripheryRes, 0.0);
    li.vos.assign(static_cast<size_t>(m.outputs) * kNumPeripheryOps, vos0);
    const double nominal[kNumPeripheryRes] = {m.rf, c.rect_r1, m.rect_r2, c.rect_rl, c.inv_r, c.inv_r};
    static const char* const res_names[kNumPeripheryRes] = {"rf", "r1", "r2", "rl", "ri1", "ri2"};
    static const char* const op_names[kNumPeripheryOps] = {"utia", "urect", "uinv"};
    const int nres = m.rectifier ? kNumPeripheryRes : 1, nops = m.rectifier ? kNumPeripheryOps : 1;
    for (int j = 0; j < m.outputs; ++j) {
      const std::string owner = fmt::format("n{}_{}", l, j);
      for (int k = 0; k < nres; ++k) {
        double r = nominal[k];
        if (c.rf_tol > 0) r *= 1.0 + c.rf_tol * normal_draw(seed, trial, owner, res_names[k]);
        li.res[static_cast<size_t>(j) * kNumPeripheryRes + k] = r;
      }
      for (int k = 0; k < nops; ++k)
        if (c.vos_sigma > 0)
          li.vos[static_cast<size_t>(j) * kNumPeripheryOps + k] =
              vos0 + c.vos_sigma * normal_draw(seed, trial, owner, op_names[k]);
    }
    if (m.adc && c.adc_inl_sigma > 0) {
      const long codes = adc_max_code(m.adc_spec) + 1;
      li.adc_inl.resize(m.outputs);
      for (int j = 0; j < m.outputs; ++j) {
        const std::uint64_t s = variation_seed(seed, trial, fmt::format("adc{}_{}", l, j), "inl");
        li.adc_inl[j].resize(codes);
        for (long k = 0; k < codes; ++k) li.adc_inl[j][k] = c.adc_inl_sigma * rnd::normal(s, rnd::kInl, k);
      }
    }
    li.noise_seed = variation_seed(seed, trial, fmt::format("layer{}", l), "read_noise");
  }
}

double read_noise_current(const HardwareInstance& hw, int l, int j, std::uint64_t sample) {
  const double sigma = hw.map->cfg.read_noise;
  if (!(sigma > 0)) return 0.0;
  const std::uint64_t n = static_cast<std::uint64_t>(hw.map->layers[l].outputs);
  return sigma * rnd::normal(hw.layers[l].noise_seed, 9, sample * n + static_cast<std::uint64_t>(j));
}

long adc_code(const HardwareInstance& hw, int l, int j, double v) {
  const auto& inl = hw.layers[l].adc_inl;
  return adc_convert(hw.map->layers[l].adc_spec, v, 0, j, inl.empty() ? nullptr : inl[j].data());
}

}  // namespace anasim::nn
