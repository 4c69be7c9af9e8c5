// Builds the mapped circuit of one input as a FlatNetlist of catalog devices (see netlist_builder.hpp), and
// writes a FlatNetlist as anasim YAML.
#include "nn/netlist_builder.hpp"
#include <cmath>
#include <map>
#include <unordered_map>
#include <fmt/format.h>
#include "devices/dac.hpp"
#include "devices/registry.hpp"

namespace anasim::nn {

namespace {

// Assembles a FlatNetlist: node names to ids, devices with parameters set by name.
class Builder {
 public:
  explicit Builder(FlatNetlist& fn) : fn_(fn) {
    fn_.node_names = {"0"};
    ids_["0"] = 0;
  }
  NodeId node(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return NodeId(it->second);
    const int id = static_cast<int>(fn_.node_names.size());
    fn_.node_names.push_back(name);
    ids_.emplace(name, id);
    return NodeId(id);
  }
  FlatDevice& add(const char* key, const std::string& name, const std::vector<std::string>& nodes) {
    FlatDevice fd;
    fd.name = name;
    fd.type = builtin_catalog().find(key);
    for (const auto& n : nodes) fd.nodes.push_back(node(n));
    fd.params = default_params(fd.type->params);
    if (!fd.type->model_type.empty()) fd.model = default_params(fd.type->model_params);
    fn_.devices.push_back(std::move(fd));
    return fn_.devices.back();
  }
  static void set(ParamValues& p, const char* name, double v) {
    const int i = p.index_of(name);
    p.value[i] = v;
    p.given[i] = 1;
  }
  void resistor(const std::string& name, const std::string& a, const std::string& b, double r) {
    set(add("r", name, {a, b}).params, "r", r);
  }

 private:
  FlatNetlist& fn_;
  std::unordered_map<std::string, int> ids_;
};

std::string nm(const char* prefix, size_t l, int j) { return fmt::format("{}{}_{}", prefix, l, j); }

}  // namespace

std::vector<long> input_codes(const LayerMapping& lm, const float* x) {
  std::vector<long> codes(lm.inputs);
  input_codes(lm, x, codes.data());
  return codes;
}

Status build_netlist(const HardwareInstance& hw, const LayerCodes& codes, std::uint64_t sample, FlatNetlist& fn,
                     NetlistNames& names, const TranSpec* tran) {
  const MappedNetwork& map = *hw.map;
  const HardwareConfig& cfg = map.cfg;
  fn = FlatNetlist{};
  fn.title = fmt::format("anasim nn: {} mapped in {} mode (trial {})", fmt::join(map.sizes, "-"), mode_name(cfg.mode),
                         hw.trial);
  fn.file = "nn";
  fn.options.reltol = 1e-7;
  fn.options.vntol = 1e-10;
  fn.options.abstol = 1e-15;
  fn.options.itl1 = 200;
  Analysis op;
  op.kind = AnalysisSpec::Kind::Op;
  if (tran) {
    if (!(tran->tstop > 0) || !(tran->tmax > 0))
      return Status::fail(ErrorKind::Other, "build_netlist: the transient needs tstop > 0 and tmax > 0");
    op.kind = AnalysisSpec::Kind::Tran;
    op.tstep = tran->tmax;
    op.tmax = tran->tmax;
    op.tstop = tran->tstop;
    op.power = true;
    fn.options.reltol = tran->reltol;
    fn.options.vntol = tran->vntol;
  }
  fn.analyses.push_back(op);
  names = NetlistNames{};
  const size_t L = map.layers.size();
  names.tia_in.resize(L);
  names.tia_out.resize(L);
  names.rect_out.resize(L);
  names.inv_out.resize(L);
  names.dacs.resize(L);
  Builder b(fn);
  const int level = static_cast<int>(opamp_param(cfg, "level"));
  if (tran) {
    Builder::set(b.add("v", "vrailp", {"vcc", "0"}).params, "dc", opamp_param(cfg, "vpos"));
    Builder::set(b.add("v", "vrailn", {"vee", "0"}).params, "dc", opamp_param(cfg, "vneg"));
  }

  auto opamp = [&](const std::string& name, const std::string& inn, const std::string& out, double vos) {
    FlatDevice& fd = tran ? b.add("opamp", name, {"0", inn, out, "vcc", "vee"}) : b.add("opamp", name, {"0", inn, out});
    fd.params = cfg.opamp_inst;
    fd.model = cfg.opamp_model;
    fd.model_name = cfg.opamp_part;
    Builder::set(fd.params, "level", level);
    Builder::set(fd.params, "vos", vos);
  };
  auto diode = [&](const std::string& name, const std::string& a, const std::string& k) {
    FlatDevice& fd = b.add("d", name, {a, k});
    fd.model_name = "dnn";
    Builder::set(fd.model, "is", cfg.diode_is);
    Builder::set(fd.model, "n", cfg.diode_n);
    if (cfg.diode_rs > 0) Builder::set(fd.model, "rs", cfg.diode_rs);
  };

  for (size_t l = 0; l < L; ++l) {
    const LayerMapping& m = map.layers[l];
    const LayerInstance& li = hw.layers[l];
    const int P = m.physical_rows();
    if (m.dac_rows && (codes.size() <= l || static_cast<int>(codes[l].size()) != m.inputs))
      return Status::fail(ErrorKind::Other, fmt::format("build_netlist: layer {} needs {} DAC codes", l, m.inputs));
    // Row nodes and their drivers.
    std::vector<std::string> row(P);
    const int first_dac = m.dac_rows ? 0 : P - 2;
    for (int p = 0; p < P; ++p) {
      if (p < first_dac) {
        row[p] = nm(p % 2 == 0 ? "h" : "hn", l - 1, p / 2);
        continue;
      }
      row[p] = nm("v", l, p);
      const DacSpec& d = li.dac_of_row(p, m.inputs);
      const std::string dn = nm("dac", l, p);
      names.dacs[l].push_back(dn);
      const int i = p / 2;
      const long code = i < m.inputs ? codes[l][i] : dac_max_code(d);
      if (tran) {
        const bool reset = tran->from.size() <= l || static_cast<int>(tran->from[l].size()) != m.inputs;
        const long code0 = i < m.inputs ? (reset ? 0L : tran->from[l][i]) : code;
        const double sign = p % 2 == 0 ? 1.0 : -1.0;
        const double v0 = sign * dac_voltage(d, code0), v1 = sign * dac_voltage(d, code);
        std::string out = row[p];
        if (d.rout > 0) {
          out = nm("vd", l, p);
          b.resistor(nm("rdac", l, p), out, row[p], d.rout);
        }
        FlatDevice& vs = b.add("v", dn, {out, "0"});
        ParamValues& pv = vs.params;
        const int k = pv.index_of("pwl");
        pv.list()[k] = {0.0, v0, cfg.dac_tr, v1};
        pv.given[k] = 1;
        continue;
      }
      FlatDevice& fd = p % 2 == 0 ? b.add("dac", dn, {row[p], "0"}) : b.add("dac", dn, {"0", row[p]});
      Builder::set(fd.params, "bits", d.bits);
      Builder::set(fd.params, "vmin", d.vmin);
      Builder::set(fd.params, "vmax", d.vmax);
      Builder::set(fd.params, "code", static_cast<double>(code));
      if (d.inl_sigma > 0) Builder::set(fd.params, "inl_sigma", d.inl_sigma);
      if (d.rout > 0) Builder::set(fd.params, "rout", d.rout);
      Builder::set(fd.params, "seed", static_cast<double>(d.seed));
    }
    // Crossbar tiles.
    for (const TileInstance& t : li.tiles) {
      std::vector<NodeId> pins;
      for (int i = 0; i < t.spec.rows; ++i) pins.push_back(b.node(row[t.row0 + i]));
      for (int j = 0; j < t.spec.cols; ++j) pins.push_back(b.node(nm("c", l, t.col0 + j)));
      CrossbarSpec spec = t.spec;
      if (tran) spec.cwire = cfg.cwire;
      fn.devices.push_back(crossbar_flat_device(t.name, spec, pins));
    }
    // Periphery per neuron.
    for (int j = 0; j < m.outputs; ++j) {
      const double* r = &li.res[static_cast<size_t>(j) * kNumPeripheryRes];
      const double* vos = &li.vos[static_cast<size_t>(j) * kNumPeripheryOps];
      const std::string c = nm("c", l, j), y = nm("y", l, j);
      names.tia_in[l].push_back(c);
      names.tia_out[l].push_back(y);
      opamp(nm("utia", l, j), c, y, vos[kOpTia]);
      b.resistor(nm("rf", l, j), c, y, r[kResRf]);
      const double in = read_noise_current(hw, static_cast<int>(l), j, sample);
      if (cfg.read_noise > 0) Builder::set(b.add("i", nm("in", l, j), {"0", c}).params, "dc", in);
      if (!m.rectifier) continue;
      const std::string s = nm("s", l, j), a = nm("a", l, j), h = nm("h", l, j), t = nm("t", l, j),
                        hn = nm("hn", l, j);
      names.rect_out[l].push_back(h);
      names.inv_out[l].push_back(hn);
      b.resistor(nm("r1", l, j), y, s, r[kResR1]);
      opamp(nm("urect", l, j), s, a, vos[kOpRect]);
      diode(nm("d1", l, j), s, a);
      diode(nm("d2", l, j), a, h);
      b.resistor(nm("r2", l, j), h, s, r[kResR2]);
      b.resistor(nm("rl", l, j), h, "0", r[kResRl]);
      b.resistor(nm("ri1", l, j), h, t, r[kResInv1]);
      opamp(nm("uinv", l, j), t, hn, vos[kOpInv]);
      b.resistor(nm("ri2", l, j), t, hn, r[kResInv2]);
    }
    if (m.adc) {
      std::vector<std::string> pins = names.tia_out[l];
      pins.push_back("0");
      FlatDevice& fd = b.add("adc", fmt::format("adc{}", l), pins);
      Builder::set(fd.params, "bits", m.adc_spec.bits);
      Builder::set(fd.params, "vmin", m.adc_spec.vmin);
      Builder::set(fd.params, "vmax", m.adc_spec.vmax);
      Builder::set(fd.params, "rin", m.adc_spec.rin);
    }
  }
  return {};
}

// ---- YAML writer ----

namespace {

std::string yaml_num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

// "k: v" pairs of the given parameters of a value set.
std::vector<std::string> given_params(const ParamValues& p) {
  std::vector<std::string> out;
  if (!p.table) return out;
  for (size_t i = 0; i < p.table->size(); ++i) {
    if (!p.given[i]) continue;
    const ParamSpec& s = (*p.table)[i];
    if (s.kind == ParamKind::List) {
      std::vector<std::string> v;
      for (double x : p.list()[i]) v.push_back(yaml_num(x));
      out.push_back(fmt::format("{}: [{}]", s.name, fmt::join(v, ", ")));
    } else if (s.kind == ParamKind::Text || s.kind == ParamKind::Expr) {
      out.push_back(fmt::format("{}: \"{}\"", s.name, p.text()[i]));
    } else {
      out.push_back(fmt::format("{}: {}", s.name, yaml_num(p.value[i])));
    }
  }
  return out;
}

}  // namespace

std::string netlist_yaml(const FlatNetlist& fn) {
  std::string out = fmt::format("title: \"{}\"\n", fn.title);
  std::map<std::string, std::string> models;
  for (const auto& fd : fn.devices)
    if (fd.type->spice_model_card && !fd.type->model_type.empty() && !fd.model_name.empty())
      models[fd.model_name] = fmt::format("  {}: {{type: {}, {}}}\n", fd.model_name, fd.type->model_type,
                                          fmt::join(given_params(fd.model), ", "));
  if (!models.empty()) {
    out += "models:\n";
    for (const auto& [n, text] : models) out += text;
  }
  out += "devices:\n";
  for (const auto& fd : fn.devices) {
    std::vector<std::string> fields = {fmt::format("name: {}", fd.name), fmt::format("type: {}", fd.type->key),
                                       fmt::format("nodes: [{}]", fmt::join(fn.pin_names(fd), ", "))};
    if (!fd.model_name.empty()) fields.push_back(fmt::format("model: {}", fd.model_name));
    for (auto& p : given_params(fd.params)) fields.push_back(std::move(p));
    out += fmt::format("  - {{{}}}\n", fmt::join(fields, ", "));
  }
  const Options& o = fn.options;
  out += fmt::format("options: {{reltol: {}, vntol: {}, abstol: {}, itl1: {}}}\n", o.reltol, o.vntol, o.abstol, o.itl1);
  out += "analyses:\n  - {type: op}\n";
  return out;
}

}  // namespace anasim::nn
