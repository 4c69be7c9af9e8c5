// Hardware configuration (parameter table, YAML reader), the mapping of an Mlp onto crossbar tiles and
// periphery, and the per-trial mismatch draws (see hardware.hpp).
#include "nn/hardware.hpp"
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include "devices/random.hpp"
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/expr.hpp"
#include "engine/parse.hpp"
#include "nn/analyses.hpp"
#include "nn/program.hpp"

namespace anasim::nn {

namespace {

// Seeds of device parameters are doubles in netlists: keep them below 2^53 (and nonzero).
std::uint64_t netlist_seed(std::uint64_t s) { return (s & ((std::uint64_t(1) << 52) - 1)) | 1; }

double normal_draw(std::uint64_t seed, int trial, const std::string& owner, const char* what) {
  return rnd::normal(variation_seed(seed, trial, owner, what), 0, 0);
}

const DeviceType& opamp_type() { return *builtin_catalog().find("opamp"); }

Status resolve_part(HardwareConfig& c, const SourceLoc& loc) {
  c.opamp_model = default_params(opamp_type().model_params);
  if (c.opamp_part.empty()) return {};
  if (!opamp_type().builtin_model(c.opamp_part, c.opamp_model))
    return Status::input(fmt::format("unknown op-amp part '{}'; expected one of: {}", c.opamp_part,
                                     fmt::join(opamp_type().builtin_model_names(), ", ")),
                         loc);
  return {};
}

// Where parameter `name` was given in p (an unlocated loc without p or if it was not given).
SourceLoc given_at(const ParamValues* p, const char* name) {
  if (!p) return {};
  const int i = p->index_of(name);
  return i >= 0 && p->has(i) ? p->loc(i) : SourceLoc{};
}

// The location of the first of `names` given in p.
SourceLoc given_at(const ParamValues* p, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (SourceLoc l = given_at(p, n); l.valid() || !l.file().empty()) return l;
  return {};
}

// Checks relations the table ranges cannot express; errors located at the offending key when `p` (the parsed
// values) says where it was written.
Status check(const HardwareConfig& c, const ParamValues* p = nullptr) {
  if (!(c.gmax > c.gmin))
    return Status::input(fmt::format("hardware: gmax ({}) must exceed gmin ({})", c.gmax, c.gmin),
                         given_at(p, {"gmax", "gmin"}));
  if (!(c.vread_max > c.vread_min))
    return Status::input(fmt::format("hardware: vread_max ({}) must exceed vread_min ({})", c.vread_max, c.vread_min),
                         given_at(p, {"vread_max", "vread_min"}));
  if (c.levels == 1) return Status::input("hardware: levels must be 0 (analog) or at least 2", given_at(p, "levels"));
  if (c.series != CellSeries::None && c.levels != 0)
    return Status::input("hardware: series and levels exclude each other (the series sets the values)",
                         given_at(p, {"levels", "series"}));
  if (c.series != CellSeries::None && !(c.series_rmax * c.gmax > 1))
    return Status::input(fmt::format("hardware: series_rmax ({} ohm) must exceed 1/gmax ({} ohm)", c.series_rmax,
                                     1 / c.gmax),
                         given_at(p, {"series_rmax", "gmax"}));
  if (c.stuck_on + c.stuck_off > 1)
    return Status::input("hardware: stuck_on + stuck_off must not exceed 1", given_at(p, {"stuck_off", "stuck_on"}));
  double vhi, vlo;
  opamp_swing(c, vhi, vlo);
  if (!(vhi > 0 && vlo < 0))
    return Status::input(fmt::format("hardware: the op-amp output swing {} .. {} V must include 0 V", vlo, vhi));
  const double level = opamp_param(c, "level");
  if (level > 0 && !(opamp_param(c, "rout") > 0)) return Status::input("hardware: op-amp rout must be > 0 at level 1, 2");
  return {};
}

// Top-level params of a parsed file, evaluated in order on top of `scope`.
Status evaluate_params(const std::vector<ParamAssign>& params, Scope& scope) {
  for (const ParamAssign& pa : params) {
    if (pa.values.size() != 1) return Status::input(fmt::format("parameter {} takes a single value", pa.name), pa.loc);
    double v = 0;
    if (Status st = evaluate_expr(pa.values[0].text, pa.values[0].loc, scope, v); !st) return st;
    scope.set(pa.name, v);
  }
  return {};
}

}  // namespace

// One line per `hardware:` key; the struct member each sets is bound here (test_param.cpp checks every line
// against HardwareConfig). The tile size's lower bound 2 is one differential row pair.
const ParamTable& hardware_params() {
  using H = HardwareConfig;
  using P = ParamDecl;
  static const ParamTable t = {
      P("gmin").unit("S").def(1e-6).range(0, kInf).doc("lowest programmable conductance").bind<&H::gmin>(),
      P("gmax").unit("S").def(100e-6).above(0).doc("highest programmable conductance").bind<&H::gmax>(),
      P("levels").def(0).range(0, 1e6).doc("conductance levels in [gmin, gmax] (0 = analog)").bind<&H::levels>(),
      P("program").choices("ideal|compensated").def(0)
          .doc("target conductances: ideal formula, or compensated for the arrays' IR drop (exact port transfer)")
          .bind<&H::program>(),
      P("series").choices("none|e96").def(0)
          .doc("cells, rf and rectifier r2 as fixed resistors of a standard series (e96: 1% parts, 96 per decade)")
          .bind<&H::series>(),
      P("series_rmax").unit("ohm").def(1e6).above(0)
          .doc("largest fitted series resistor; cells below half its conductance are left open")
          .bind<&H::series_rmax>(),
      P("vread_min").unit("V").def(0).range(-10, 10).doc("row voltage of input 0 (DAC code 0)")
          .bind<&H::vread_min>(),
      P("vread_max").unit("V").def(0.2).range(-10, 10)
          .doc("row voltage of input 1 (DAC full scale) and of the bias rows").bind<&H::vread_max>(),
      P("dac_bits").def(8).range(1, 24).doc("DAC resolution").bind<&H::dac_bits>(),
      P("dac_rout").unit("ohm").def(0).range(0, kInf).doc("DAC output resistance").bind<&H::dac_rout>(),
      P("dac_tr").unit("s").def(1e-9).above(0).doc("DAC output edge of an input step (network transient)")
          .bind<&H::dac_tr>(),
      P("tile_rows").def(256).range(2, 1e6).doc("physical rows per crossbar tile (at most)").bind<&H::tile_rows>(),
      P("tile_cols").def(256).range(1, 1e6).doc("columns per crossbar tile (at most)").bind<&H::tile_cols>(),
      P("rwire").unit("ohm").def(1).range(0, kInf).doc("wire resistance per segment, rows and columns"),
      P("rwire_row").unit("ohm").def(1).range(0, kInf).fallback("rwire")
          .doc("row wire resistance per segment (overrides rwire)").bind<&H::rwire_row>(),
      P("rwire_col").unit("ohm").def(1).range(0, kInf).fallback("rwire")
          .doc("column wire resistance per segment (overrides rwire)").bind<&H::rwire_col>(),
      P("rdriver").unit("ohm").def(10).range(0, kInf).doc("row driver resistance (in each tile)").bind<&H::rdriver>(),
      P("rsink").unit("ohm").def(10).range(0, kInf).doc("column sink resistance (in each tile)").bind<&H::rsink>(),
      P("cwire").unit("F").def(0.2e-15).range(0, kInf)
          .doc("wire capacitance per crossbar segment to ground (network transient)").bind<&H::cwire>(),
      P("mode").choices("analog|hybrid").def(0)
          .doc("analog (precision-rectifier ReLU) or hybrid (ADC -> digital ReLU -> DAC)").bind<&H::mode>(),
      P("adc_bits").def(8).range(1, 30).doc("ADC resolution").bind<&H::adc_bits>(),
      P("adc_rin").unit("ohm").def(1e9).above(0).doc("ADC input resistance").bind<&H::adc_rin>(),
      P("headroom").def(0.5).above(0, 1)
          .doc("calibrated |pre-activation| percentile -> this fraction of the op-amp swing").bind<&H::headroom>(),
      P("calib_percentile").unit("%").def(99.9).above(0, 100).doc("calibration percentile of |pre-activation|")
          .bind<&H::calib_percentile>(),
      P("calib_samples").def(2000).range(1, 1e9).doc("training images used for calibration")
          .bind<&H::calib_samples>(),
      P("rect_r1").unit("ohm").def(10e3).above(0).doc("rectifier input resistor").bind<&H::rect_r1>(),
      P("rect_rl").unit("ohm").def(100e3).above(0).doc("rectifier output load to ground").bind<&H::rect_rl>(),
      P("inv_r").unit("ohm").def(10e3).above(0).doc("inverter input and feedback resistors").bind<&H::inv_r>(),
      P("diode_is").unit("A").def(1e-14).above(0).doc("rectifier diode saturation current").bind<&H::diode_is>(),
      P("diode_n").def(1).above(0).doc("rectifier diode emission coefficient").bind<&H::diode_n>(),
      P("diode_rs").unit("ohm").def(0).range(0, kInf).doc("rectifier diode series resistance").bind<&H::diode_rs>(),
      P("sigma_g").def(0).range(0, 10).doc("relative conductance programming variation (std)").bind<&H::sigma_g>(),
      P("sigma_g_abs").unit("S").def(0).range(0, kInf).doc("absolute conductance programming variation (std)")
          .bind<&H::sigma_g_abs>(),
      P("stuck_on").def(0).range(0, 1).doc("fraction of cells stuck at gmax").bind<&H::stuck_on>(),
      P("stuck_off").def(0).range(0, 1).doc("fraction of cells stuck at gmin").bind<&H::stuck_off>(),
      P("rf_tol").def(0).range(0, 0.5)
          .doc("relative std of every periphery resistor (TIA feedback, rectifier, inverter)").bind<&H::rf_tol>(),
      P("vos_sigma").unit("V").def(0).range(0, kInf).doc("op-amp offset voltage std (added to the part's vos)")
          .bind<&H::vos_sigma>(),
      P("dac_inl_sigma").unit("LSB").def(0).range(0, kInf).doc("random per-code DAC INL (std)")
          .bind<&H::dac_inl_sigma>(),
      P("adc_inl_sigma").unit("LSB").def(0).range(0, kInf).doc("random per-code ADC INL (std of the code thresholds)")
          .bind<&H::adc_inl_sigma>(),
      P("read_noise").unit("A").def(0).range(0, kInf).doc("noise current at every TIA summing node, per sample (std)")
          .bind<&H::read_noise>(),
      P("seed").def(1).range(0, 9007199254740992.0).doc("seed of the static mismatch draws (nn eval)")
          .bind<&H::seed>(),
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

Status hardware_from_section(const ParsedSection& sec, const Scope& scope, HardwareConfig& cfg) {
  cfg = default_hardware_config();
  std::vector<ParamAssign> assigns, op_assigns;
  Status st;
  for (const ParamAssign& e : sec.entries) {
    if (e.name.empty()) {
      st.merge(Status::input(fmt::format("expected '{}' to be a mapping of parameter: value", sec.name), e.loc));
      continue;
    }
    if (e.name == "opamp") {
      st.merge(Status::input("expected 'opamp' to be a mapping {model: part, parameter: value}", e.values.empty() ? e.loc : e.values[0].loc));
      continue;
    }
    if (const ValueExpr* tol = e.tol()) {
      st.merge(Status::input(fmt::format("hardware: '{}' takes no tolerance (mismatch: sigma_g, rf_tol, vos_sigma, ...)",
                                         e.name), tol->loc));
      continue;
    }
    if (e.name.rfind("opamp.", 0) == 0) {
      ParamAssign pa = e;
      pa.name = e.name.substr(6);
      if (pa.name != "model") {
        op_assigns.push_back(std::move(pa));
        continue;
      }
      if (e.values.size() != 1) {
        st.merge(Status::input("expected a part name for opamp model", e.loc));
        continue;
      }
      cfg.opamp_part = to_lower(e.values[0].text);
      if (Status s = resolve_part(cfg, e.values[0].loc); !s) st.merge(s);
      continue;
    }
    assigns.push_back(e);
  }
  if (!st) return st;
  ParamValues p = default_params(hardware_params());
  if (Status s = assign_params(p, assigns, scope, "hardware"); !s) return s;
  if (Status s = apply_params(p, cfg, "hardware"); !s) return s;
  if (Status s = assign_params(cfg.opamp_inst, op_assigns, scope, "hardware opamp"); !s) return s;
  return check(cfg, &p);
}

Status parse_hardware_config(const std::string& text, const std::string& pseudo_name, HardwareConfig& cfg,
                             const Scope* parent) {
  ParsedNetlist pn;
  // A netlist that carries the hardware: section beside its nn analyses (data/examples/mnist_analog.yaml) is a
  // config file too: its analyses are parsed (and checked) but not run.
  AnalysisCatalog analyses;
  add_analyses(analyses, "");
  if (Status st = parse_yaml_string(text, pseudo_name, builtin_catalog(), pn, &analyses); !st) return st;
  Scope scope(parent);
  if (Status st = evaluate_params(pn.params, scope); !st) return st;
  if (const ParsedSection* hw = pn.section("hardware")) return hardware_from_section(*hw, scope, cfg);
  // A file of bare keys (no hardware: section): every other section is a key, a mapping one (opamp:) a prefix.
  ParsedSection whole;
  whole.name = "hardware";
  for (const ParsedSection& s : pn.sections)
    for (ParamAssign e : s.entries) {
      e.name = e.name.empty() ? s.name : s.name + "." + e.name;
      if (e.name == s.name && !e.loc.valid()) e.loc = s.loc;
      whole.entries.push_back(std::move(e));
    }
  return hardware_from_section(whole, scope, cfg);
}

Status load_hardware_config(const std::string& path, HardwareConfig& cfg, const Scope* parent) {
  std::string text, why;
  if (!detail::read_text_file(path, text, why))
    return Status::input(fmt::format("cannot open the hardware config: {}", why), SourceLoc::whole(path));
  return parse_hardware_config(text, path, cfg, parent);
}

Status set_hardware_param(HardwareConfig& cfg, const std::string& name_in, const std::string& value,
                          const Scope& scope) {
  const std::string name = to_lower(name_in);
  ValueExpr e;
  e.text = value;
  if (name.rfind("opamp.", 0) == 0) {
    const std::string sub = name.substr(6);
    if (sub == "model") {
      cfg.opamp_part = to_lower(value);
      if (Status s = resolve_part(cfg, {}); !s) return s;
      return check(cfg);
    }
    ParamAssign pa;
    pa.name = sub;
    pa.values.push_back(e);
    if (Status s = assign_params(cfg.opamp_inst, {pa}, scope, "hardware opamp"); !s) return s;
    return check(cfg);
  }
  if (Status s = set_param(hardware_params(), cfg, name, e, scope, "hardware"); !s) return s;
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
  const bool compensate = cfg.program == ProgramMode::Compensated;
  std::vector<LayerInputs> layer_inputs;  // compensated programming: every layer's calibration inputs
  for (int l = 0; l < L; ++l) {
    const DenseLayer& dl = net.layers[l];
    if (compensate)
      layer_inputs.push_back({static_cast<int>(a.rows()), static_cast<int>(a.cols()),
                              std::vector<double>(a.data(), a.data() + a.size())});
    // On one thread: Eigen's own OpenMP product chooses its blocking, hence its rounding, by the thread count, and
    // the percentiles below set the next layer's v_unit and bias conductances, so every result would depend on
    // OMP_NUM_THREADS (it did: ~1e-9 relative in nn energy between 1 and 2 threads, issue 16).
    MatrixRd z(a.rows(), dl.weight.rows());
    const int eigen_threads = Eigen::nbThreads();
    Eigen::setNbThreads(1);
    z.noalias() = a * dl.weight.transpose();
    Eigen::setNbThreads(eigen_threads);
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
  if (compensate) return compensate_targets(out, layer_inputs);
  return {};
}

namespace {

// IEC 60063 E96 values of one decade (x100).
constexpr int kE96[96] = {
    100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158,
    162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255,
    261, 267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412,
    422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665,
    681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976};

// E96 value k [ohm]: kE96[k mod 96] * 10^(floor(k / 96) - 2), k any integer.
double e96_value(long k) {
  const long d = k >= 0 ? k / 96 : -((-k + 95) / 96);
  return kE96[k - 96 * d] * std::pow(10.0, static_cast<double>(d - 2));
}

// Index of the E96 value nearest to r (in log R); the values lie within a rounding of 10^(k/96).
long e96_index(double r) {
  const long k0 = std::lround(96.0 * std::log10(r));
  long best = k0;
  for (long k = k0 - 2; k <= k0 + 2; ++k)
    if (std::fabs(std::log(e96_value(k) / r)) < std::fabs(std::log(e96_value(best) / r))) best = k;
  return best;
}

}  // namespace

double e96_nearest(double r) {
  // (a value with no E96 neighbour, such as the rectifier's r2 of a layer without one, 0, is returned as it is)
  return r > 0 && std::isfinite(r) ? e96_value(e96_index(r)) : r;
}

double series_conductance(const HardwareConfig& cfg, double g) {
  if (cfg.series == CellSeries::None) return g;
  if (g < 0.5 / cfg.series_rmax) return 0.0;
  long k = e96_index(1.0 / std::max(g, 1.0 / cfg.series_rmax));
  while (1.0 / e96_value(k) > cfg.gmax) ++k;       // below the lowest fitted resistance 1/gmax: one value up
  while (e96_value(k) > cfg.series_rmax) --k;      // above series_rmax: one value down
  return 1.0 / e96_value(k);
}

double series_resistance(const HardwareConfig& cfg, double r) {
  return cfg.series == CellSeries::None ? r : e96_nearest(r);
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
                series_conductance(c, m.g_target[static_cast<size_t>(t.row0 + i) * m.outputs + t.col0 + j]);
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
    const double nominal[kNumPeripheryRes] = {series_resistance(c, m.rf), c.rect_r1, series_resistance(c, m.rect_r2),
                                              c.rect_rl, c.inv_r, c.inv_r};
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

}  // namespace anasim::nn
