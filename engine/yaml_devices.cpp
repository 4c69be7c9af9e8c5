// YAML netlist reader: the circuit's definitions: models:, subcircuits: (ports, params, devices, models) and the
// devices: lists (type, nodes, model or control, parameters and their tolerances, a source's ac: and waveforms).
#include <fmt/format.h>
#include <map>
#include <yaml-cpp/yaml.h>
#include "engine/yaml_reader.hpp"

namespace anasim::yaml {

void YamlParser::models(const YAML::Node& n, const SourceLoc& where, std::vector<ModelDef>& dst,
                        std::map<std::string, SourceLoc>& names, const std::string& in) {
  if (n.IsNull()) return;
  if (!n.IsMap()) {
    err(loc(n, where), fmt::format("expected 'models' to be a mapping of name: {{type: ..., param: value}}, got {}",
                                   node_kind(n)));
    return;
  }
  for (const Entry& e : entries(n, "'models'")) {
    ModelDef m;
    m.name = e.key;
    m.loc = loc(e.key_node);
    std::string what = fmt::format("model '{}'{}", m.name, in);
    if (!e.value.IsMap()) {
      err(loc(e.value, m.loc), fmt::format("expected {} to be a mapping {{type: ..., param: value, ...}}, got {}",
                                           what, node_kind(e.value)));
      continue;
    }
    bool ok = true;
    for (const Entry& p : entries(e.value, what)) {
      if (p.key == "type") {
        ok = name_scalar(p.value, fmt::format("the type of {}", what), loc(p.key_node), m.type) && ok;
      } else if (p.key == "params") {
        param_map(p.value, what, loc(p.key_node), m.params, true);
      } else {
        ParamAssign pa;
        if (param(p, what, pa))
          m.params.push_back(std::move(pa));
        else
          ok = false;
      }
    }
    if (!ok) continue;
    if (m.type.empty()) {
      err(m.loc, fmt::format("{} needs a 'type' (e.g. type: d)", what));
      continue;
    }
    auto it = names.find(m.name);
    if (it != names.end()) {
      err(m.loc, fmt::format("duplicate model '{}' ({})", m.name, first_defined(it->second, m.loc)));
      continue;
    }
    names.emplace(m.name, m.loc);
    dst.push_back(std::move(m));
  }
}

std::string YamlParser::first_defined(const SourceLoc& first, const SourceLoc& here) {
  if (first.file() == here.file()) return fmt::format("first defined at line {}", first.line);
  return fmt::format("first defined at {}:{}", first.file(), first.line);
}

void YamlParser::subcircuits(const YAML::Node& n, const SourceLoc& where) {
  if (n.IsNull()) return;
  if (!n.IsMap()) {
    err(loc(n, where), fmt::format("expected 'subcircuits' to be a mapping of name: {{ports: [...], devices: "
                                   "[...]}}, got {}",
                                   node_kind(n)));
    return;
  }
  for (const Entry& e : entries(n, "'subcircuits'")) {
    SubcktDef s;
    s.name = e.key;
    s.loc = loc(e.key_node);
    std::string what = fmt::format("subcircuit '{}'", s.name);
    if (!e.value.IsMap()) {
      err(loc(e.value, s.loc), fmt::format("expected {} to be a mapping {{ports: [...], params: {{...}}, devices: "
                                           "[...], models: {{...}}}}, got {}",
                                           what, node_kind(e.value)));
      continue;
    }
    size_t errs = st_.errors.size();
    std::map<std::string, SourceLoc> dev_names, model_names;
    bool have_devices = false;
    for (const Entry& p : entries(e.value, what)) {
      SourceLoc pl = loc(p.key_node);
      if (p.key == "ports") {
        if (!p.value.IsSequence() && !p.value.IsNull()) {
          err(loc(p.value, pl), fmt::format("expected 'ports' of {} to be a list of node names, got {}", what,
                                            node_kind(p.value)));
          continue;
        }
        std::map<std::string, int> seen;
        for (const YAML::Node& x : p.value) {
          std::string port;
          SourceLoc xl;
          if (!name_scalar(x, fmt::format("a port of {}", what), pl, port, &xl)) continue;
          if (seen.count(port)) {
            err(xl, fmt::format("duplicate port '{}' in {}", port, what));
            continue;
          }
          seen.emplace(port, 1);
          s.ports.push_back(port);
        }
      } else if (p.key == "params") {
        param_map(p.value, fmt::format("the params of {}", what), pl, s.params, false);
      } else if (p.key == "devices") {
        have_devices = true;
        devices(p.value, pl, s.devices, dev_names, fmt::format(" in {}", what));
      } else if (p.key == "models") {
        models(p.value, pl, s.models, model_names, fmt::format(" in {}", what));
      } else {
        err(pl, fmt::format("unknown key '{}' in {}; expected ports, params, devices or models", p.key, what));
      }
    }
    if (!have_devices && st_.errors.size() == errs) err(s.loc, fmt::format("{} has no 'devices' list", what));
    if (st_.errors.size() != errs) continue;
    auto it = subckts_.find(s.name);
    if (it != subckts_.end()) {
      err(s.loc, fmt::format("duplicate subcircuit '{}' ({})", s.name, first_defined(it->second, s.loc)));
      continue;
    }
    subckts_.emplace(s.name, s.loc);
    out_.subckts.push_back(std::move(s));
  }
}

std::string YamlParser::known_types() const {
  std::string s;
  for (const DeviceType* d : cat_.all()) s += fmt::format("{} ({}), ", d->key, d->long_name);
  return s + "x (subcircuit)";
}

const DeviceType* YamlParser::resolve_type(const std::string& t, bool& is_x) const {
  is_x = t == "x" || t == "subckt" || t == "subcircuit";
  if (is_x) return nullptr;
  if (const DeviceType* d = cat_.find(t)) return d;
  for (const DeviceType* d : cat_.all())
    if (to_lower(d->long_name) == t) return d;
  return nullptr;
}

void YamlParser::devices(const YAML::Node& n, const SourceLoc& where, std::vector<DeviceInstance>& dst,
                         std::map<std::string, SourceLoc>& names, const std::string& in) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) {
    err(loc(n, where), fmt::format("expected 'devices'{} to be a list of {{name: ..., type: ..., nodes: [...]}}, "
                                   "got {}",
                                   in, node_kind(n)));
    return;
  }
  for (const YAML::Node& x : n) {
    if (too_many_errors()) return;
    DeviceInstance d;
    if (!device(x, where, d, in)) continue;
    auto it = names.find(d.name);
    if (it != names.end()) {
      err(d.loc, fmt::format("duplicate device name '{}' ({})", d.name, first_defined(it->second, d.loc)));
      continue;
    }
    names.emplace(d.name, d.loc);
    dst.push_back(std::move(d));
  }
}

bool YamlParser::device(const YAML::Node& n, const SourceLoc& where, DeviceInstance& d, const std::string& in) {
  SourceLoc nl = loc(n, where);
  if (!n.IsMap())
    return err(nl, fmt::format("expected a device mapping {{name: ..., type: ..., nodes: [...]}}{}, got {}", in,
                               node_kind(n)));
  std::vector<Entry> es = entries(n, "a device");
  const Entry* name_e = nullptr;
  const Entry* type_e = nullptr;
  for (const Entry& e : es) {
    if (e.key == "name") name_e = &e;
    if (e.key == "type") type_e = &e;
  }
  if (!name_e) return err(nl, fmt::format("device{} has no 'name'", in));
  if (!name_scalar(name_e->value, "the device 'name'", loc(name_e->key_node), d.name, &d.loc)) return false;
  std::string who = fmt::format("device '{}'", d.name);
  if (!type_e) return err(d.loc, fmt::format("{} has no 'type' (one of: {})", who, known_types()));
  std::string tname;
  SourceLoc tloc;
  if (!name_scalar(type_e->value, fmt::format("the type of {}", who), loc(type_e->key_node), tname, &tloc))
    return false;
  bool is_x = false;
  const DeviceType* type = resolve_type(tname, is_x);
  if (!type && !is_x) return err(tloc, fmt::format("unknown device type '{}' (known: {})", tname, known_types()));
  d.type = is_x ? "x" : type->key;
  std::string what = is_x ? fmt::format("subcircuit instance '{}'", d.name)
                          : fmt::format("{} '{}'", type->long_name, d.name);
  bool ok = true;
  bool have_nodes = false, have_model = false;
  ValueExpr dev_tol, dev_dist;  // device-level tol:/dist: (tolerance of the first positional parameter)
  for (const Entry& e : es) {
    SourceLoc kl = loc(e.key_node);
    const std::string& k = e.key;
    if (k == "name" || k == "type") continue;
    if (k == "nodes") {
      have_nodes = true;
      ok = nodes(e, type, what, d) && ok;
    } else if (k == "model" || k == "control" || k == "subckt") {
      const char* expected = is_x ? "subckt" : type->needs_control ? "control" : !type->model_type.empty() ? "model" : "";
      if (k != expected) {
        std::string hint = *expected ? fmt::format("; it takes '{}'", expected) : std::string();
        ok = err(kl, fmt::format("{} does not take '{}'{}", what, k, hint));
        continue;
      }
      have_model = true;
      ok = name_scalar(e.value, fmt::format("'{}' of {}", k, what), kl, d.model, &d.model_loc) && ok;
    } else if (k == "params") {
      param_map(e.value, what, kl, d.params, true);
    } else if (type && type->source_syntax && k == "ac") {
      ok = ac_value(e, what, d) && ok;
    } else if (type && (k == "tol" || k == "dist")) {  // tolerance of the main (first positional) parameter
      ValueExpr v;
      if (!scalar(e.value, fmt::format("'{}' of {}", k, what), kl, v)) { ok = false; continue; }
      (k == "tol" ? dev_tol : dev_dist) = v;
    } else {
      ParamAssign pa;
      if (!param(e, what, pa)) {
        ok = false;
        continue;
      }
      if (type && type->source_syntax) ok = check_list(pa, what) && ok;
      d.params.push_back(std::move(pa));
    }
  }
  if (!ok) return false;
  if (!dev_tol.text.empty() || !dev_dist.text.empty()) {
    const std::string main = type->positional.empty() ? std::string() : type->positional[0];
    ParamAssign* target = nullptr;
    for (auto& pa : d.params)
      if (pa.name == main) target = &pa;
    if (!target)
      return err(dev_tol.loc.valid() ? dev_tol.loc : dev_dist.loc,
                 fmt::format("'tol' of {} applies to its main parameter '{}', which is not given; write "
                             "'<param>: {{value: v, tol: t}}' instead", what, main));
    Tolerance t = target->tolerance ? *target->tolerance : Tolerance{};
    if (!dev_tol.text.empty()) t.tol = dev_tol;
    t.dist = to_lower(dev_dist.text);
    if (!t.dist.empty() && t.dist != "gauss" && t.dist != "uniform")
      return err(dev_dist.loc, fmt::format("unknown distribution '{}' for {}; expected gauss or uniform",
                                           dev_dist.text, what));
    target->tolerance = std::make_shared<const Tolerance>(std::move(t));
  }
  if (!have_nodes) {
    if (is_x) return err(d.loc, fmt::format("{} has no 'nodes' list", what));
    return err(d.loc, fmt::format("{} has no 'nodes'; expected a list of {} node names ({})", what,
                                  type->pins.size(), pin_list(*type)));
  }
  if (!have_model) {
    if (is_x) return err(d.loc, fmt::format("{} needs 'subckt: <subcircuit name>'", what));
    if (type->needs_control)
      return err(d.loc, fmt::format("{} needs 'control: <voltage source name>'", what));
    if (!type->model_type.empty() && !type->model_optional)
      return err(d.loc, fmt::format("{} needs 'model: <name of a {} model>'", what, type->model_type));
  }
  return true;
}

std::string YamlParser::pin_list(const DeviceType& t) {
  std::string s;
  for (const std::string& p : t.pins) s += (s.empty() ? "" : " ") + p;
  return s;
}

bool YamlParser::nodes(const Entry& e, const DeviceType* type, const std::string& what, DeviceInstance& d) {
  SourceLoc kl = loc(e.key_node);
  std::string expect = type ? fmt::format("a list of {} node names ({})", type->pins.size(), pin_list(*type))
                            : std::string("a list of node names");
  if (!e.value.IsSequence())
    return err(loc(e.value, kl), fmt::format("expected 'nodes' of {} to be {}, got {}", what, expect,
                                             node_kind(e.value)));
  if (type && !type->variadic_pins && e.value.size() != type->pins.size())
    return err(loc(e.value, kl), fmt::format("expected 'nodes' of {} to be {}, got {}", what, expect,
                                             e.value.size()));
  for (const YAML::Node& x : e.value) {
    std::string node;
    if (!name_scalar(x, fmt::format("a node of {}", what), kl, node)) return false;
    d.nodes.push_back(node);
  }
  return true;
}

bool YamlParser::ac_value(const Entry& e, const std::string& what, DeviceInstance& d) {
  SourceLoc kl = loc(e.key_node);
  if (e.value.IsSequence()) {
    if (e.value.size() < 1 || e.value.size() > 2)
      return err(loc(e.value, kl), fmt::format("expected 'ac' of {} to be a magnitude or [magnitude, phase], got "
                                               "{} values",
                                               what, e.value.size()));
    const char* names[2] = {"acmag", "acphase"};
    size_t k = 0;
    for (const YAML::Node& x : e.value) {
      ParamAssign pa{names[k], {}, false, kl, {}};
      ValueExpr v;
      if (!scalar(x, fmt::format("'ac' of {}", what), kl, v)) return false;
      pa.values.push_back(std::move(v));
      d.params.push_back(std::move(pa));
      ++k;
    }
    return true;
  }
  ParamAssign pa{"acmag", {}, false, kl, {}};
  ValueExpr v;
  if (!scalar(e.value, fmt::format("'ac' of {}", what), kl, v)) return false;
  pa.values.push_back(std::move(v));
  d.params.push_back(std::move(pa));
  return true;
}

bool YamlParser::check_list(const ParamAssign& pa, const std::string& what) {
  for (const WaveformArgs& s : kWaveformArgs) {
    if (pa.name != s.name) continue;
    size_t n = pa.values.size();
    if (!pa.is_list || n < s.min || n > s.max || (pa.name == "pwl" && n % 2 != 0)) {
      std::string range =
          pa.name == "pwl" ? "an even number of values" : fmt::format("{} to {} values", s.min, s.max);
      return err(pa.loc, fmt::format("'{}' of {} takes a list of {} ({}), got {}", pa.name, what, range, s.args,
                                     pa.is_list ? fmt::format("{}", n) : std::string("a single value")));
    }
  }
  return true;
}

}  // namespace anasim::yaml
