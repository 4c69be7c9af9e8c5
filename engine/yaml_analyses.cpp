// YAML netlist reader: analyses: (op, dc with one or two sweeps, tran, ac and extension analyses from the
// AnalysisCatalog) and the remaining sections: ic:, outputs:, measure: and include:.
#include <fmt/format.h>
#include <map>
#include <yaml-cpp/yaml.h>
#include "engine/measure.hpp"
#include "engine/yaml_reader.hpp"

namespace anasim::yaml {

void YamlParser::analyses(const YAML::Node& n, const SourceLoc& where) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) {
    err(loc(n, where), fmt::format("expected 'analyses' to be a list of {{type: op|dc|tran|ac, ...}}, got {}",
                                   node_kind(n)));
    return;
  }
  for (const YAML::Node& x : n) {
    if (too_many_errors()) return;
    AnalysisSpec a;
    if (analysis(x, where, a)) out_.analyses.push_back(std::move(a));
  }
}

bool YamlParser::analysis(const YAML::Node& n, const SourceLoc& where, AnalysisSpec& a) {
  SourceLoc nl = loc(n, where);
  a.loc = nl;
  if (!n.IsMap())
    return err(nl, fmt::format("expected an analysis mapping {{type: op|dc|tran|ac, ...}}, got {}", node_kind(n)));
  std::vector<Entry> es = entries(n, "an analysis");
  const Entry* type_e = nullptr;
  for (const Entry& e : es)
    if (e.key == "type") type_e = &e;
  if (!type_e) return err(nl, "analysis has no 'type' (op, dc, tran or ac)");
  std::string t;
  SourceLoc tl;
  if (!name_scalar(type_e->value, "the analysis type", loc(type_e->key_node), t, &tl)) return false;
  std::vector<std::string> allowed;
  if (t == "op") {
    a.kind = AnalysisSpec::Kind::Op;
  } else if (t == "dc") {
    a.kind = AnalysisSpec::Kind::Dc;
    allowed = {"sweeps", "source", "start", "stop", "step"};
  } else if (t == "tran") {
    a.kind = AnalysisSpec::Kind::Tran;
    allowed = {"tstep", "tstop", "tstart", "tmax", "uic"};
  } else if (t == "ac") {
    a.kind = AnalysisSpec::Kind::Ac;
    allowed = {"variation", "points", "fstart", "fstop"};
  } else if (const AnalysisType* ext = analyses_ ? analyses_->find(t) : nullptr) {
    return extension(*ext, es, a);
  } else {
    std::string kinds = "op, dc, tran or ac";
    if (analyses_ && !analyses_->all().empty()) {
      kinds = "op, dc, tran, ac";
      for (const AnalysisType* x : analyses_->all()) kinds += ", " + x->name;
    }
    return err(tl, fmt::format("unknown analysis type '{}'; expected {}", t, kinds));
  }
  std::string what = fmt::format("{} analysis", t);
  std::map<std::string, const Entry*> by_key;
  for (const Entry& e : es) {
    if (e.key == "type") continue;
    bool known = e.key == "power" && a.kind != AnalysisSpec::Kind::Ac;  // op, dc, tran: power probes
    for (const std::string& k : allowed) known = known || k == e.key;
    if (!known) {
      std::string list;
      for (const std::string& k : allowed) list += (list.empty() ? "" : ", ") + k;
      return err(loc(e.key_node), list.empty() ? fmt::format("unknown key '{}' in {}; it takes no arguments", e.key, what)
                                               : fmt::format("unknown key '{}' in {}; expected one of: {}", e.key,
                                                             what, list));
    }
    by_key[e.key] = &e;
  }
  auto req = [&](const char* k, ValueExpr& v) {
    auto it = by_key.find(k);
    if (it == by_key.end()) return err(nl, fmt::format("{} needs '{}'", what, k));
    return scalar(it->second->value, fmt::format("'{}' of the {}", k, what), loc(it->second->key_node), v);
  };
  auto opt = [&](const char* k, ValueExpr& v) {
    auto it = by_key.find(k);
    if (it == by_key.end()) return true;
    return scalar(it->second->value, fmt::format("'{}' of the {}", k, what), loc(it->second->key_node), v);
  };
  // An optional true/false key.
  auto flag = [&](const char* k, bool& v) {
    auto it = by_key.find(k);
    if (it == by_key.end()) return true;
    const YAML::Node& u = it->second->value;
    std::string s = u.IsScalar() ? to_lower(u.Scalar()) : std::string();
    if (s == "true" || s == "yes" || s == "1" || s == "on") {
      v = true;
    } else if (s == "false" || s == "no" || s == "0" || s == "off") {
      v = false;
    } else {
      return err(loc(u, loc(it->second->key_node)),
                 fmt::format("expected true or false for '{}' of the {}, got {}", k, what, node_kind(u)));
    }
    return true;
  };
  if (!flag("power", a.power)) return false;
  switch (a.kind) {
    case AnalysisSpec::Kind::Op:
    case AnalysisSpec::Kind::Extension:  // handled above
      return true;
    case AnalysisSpec::Kind::Tran: {
      bool ok = req("tstep", a.tstep) && req("tstop", a.tstop) && opt("tstart", a.tstart) && opt("tmax", a.tmax);
      return ok && flag("uic", a.uic);
    }
    case AnalysisSpec::Kind::Ac: {
      auto it = by_key.find("variation");
      if (it == by_key.end()) return err(nl, "ac analysis needs 'variation' (dec, oct or lin)");
      SourceLoc vl;
      if (!name_scalar(it->second->value, "'variation' of the ac analysis", loc(it->second->key_node), a.variation,
                       &vl))
        return false;
      if (a.variation != "dec" && a.variation != "oct" && a.variation != "lin")
        return err(vl, fmt::format("expected dec, oct or lin for 'variation' of the ac analysis, got '{}'",
                                   a.variation));
      return req("points", a.points) && req("fstart", a.fstart) && req("fstop", a.fstop);
    }
    case AnalysisSpec::Kind::Dc:
      return dc(by_key, nl, a);
  }
  return true;
}

bool YamlParser::extension(const AnalysisType& type, const std::vector<Entry>& es, AnalysisSpec& a) {
  a.kind = AnalysisSpec::Kind::Extension;
  a.type = &type;
  const std::string what = fmt::format("{} analysis", type.name);
  for (const Entry& e : es) {
    if (e.key == "type") continue;
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& p : type.params)
      if (e.key == p.name || (p.alias && e.key == p.alias)) spec = &p;
    if (!spec) {
      std::string list;
      for (const ParamSpec& p : type.params) list += fmt::format("{}{}", list.empty() ? "" : ", ", p.name);
      return err(loc(e.key_node), fmt::format("unknown key '{}' in {}; expected one of: {}", e.key, what, list));
    }
    if (e.value.IsMap())
      return err(loc(e.value, loc(e.key_node)),
                 fmt::format("expected a value for '{}' of the {}, got {}", e.key, what, node_kind(e.value)));
    if (e.value.IsSequence() && spec->kind != ParamKind::List)
      return err(loc(e.value, loc(e.key_node)),
                 fmt::format("expected a single value for '{}' of the {}, got a list", e.key, what));
    ParamAssign pa;
    if (!param(e, what, pa)) return false;
    pa.name = spec->name;
    a.args.push_back(std::move(pa));
  }
  return true;
}

bool YamlParser::sweep(const std::vector<Entry>& es, const SourceLoc& where, AnalysisSpec::Sweep& s) {
  const Entry* f[4] = {nullptr, nullptr, nullptr, nullptr};
  const char* names[4] = {"source", "start", "stop", "step"};
  for (const Entry& e : es) {
    bool known = false;
    for (int k = 0; k < 4; ++k)
      if (e.key == names[k]) {
        f[k] = &e;
        known = true;
      }
    if (!known && e.key != "sweeps" && e.key != "type" && e.key != "power")
      return err(loc(e.key_node), fmt::format("unknown key '{}' in a dc sweep; expected source, start, stop, step",
                                              e.key));
  }
  for (int k = 0; k < 4; ++k)
    if (!f[k]) return err(where, fmt::format("dc sweep needs '{}' (source, start, stop, step)", names[k]));
  s.loc = where;
  if (!name_scalar(f[0]->value, "the swept 'source'", loc(f[0]->key_node), s.source, &s.loc)) return false;
  return scalar(f[1]->value, "'start' of the dc sweep", loc(f[1]->key_node), s.start) &&
         scalar(f[2]->value, "'stop' of the dc sweep", loc(f[2]->key_node), s.stop) &&
         scalar(f[3]->value, "'step' of the dc sweep", loc(f[3]->key_node), s.step);
}

bool YamlParser::dc(const std::map<std::string, const Entry*>& by_key, const SourceLoc& nl, AnalysisSpec& a) {
  auto sw = by_key.find("sweeps");
  bool flat = by_key.count("source") || by_key.count("start") || by_key.count("stop") || by_key.count("step");
  if (sw != by_key.end() && flat)
    return err(nl, "dc analysis: give either 'sweeps: [...]' or source/start/stop/step, not both");
  if (sw == by_key.end()) {
    if (!flat) return err(nl, "dc analysis needs 'sweeps: [{source: ..., start: ..., stop: ..., step: ...}]'");
    std::vector<Entry> es;
    for (const auto& kv : by_key) es.push_back(*kv.second);
    AnalysisSpec::Sweep s;
    if (!sweep(es, nl, s)) return false;
    a.sweeps.push_back(std::move(s));
    return true;
  }
  const YAML::Node& list = sw->second->value;
  SourceLoc kl = loc(sw->second->key_node);
  if (!list.IsSequence() || list.size() < 1 || list.size() > 2)
    return err(loc(list, kl), fmt::format("expected 'sweeps' to be a list of one or two {{source, start, stop, "
                                          "step}} (inner sweep first), got {}",
                                          list.IsSequence() ? fmt::format("{} entries", list.size())
                                                            : node_kind(list)));
  for (const YAML::Node& x : list) {
    SourceLoc xl = loc(x, kl);
    if (!x.IsMap())
      return err(xl, fmt::format("expected a dc sweep mapping {{source, start, stop, step}}, got {}", node_kind(x)));
    AnalysisSpec::Sweep s;
    if (!sweep(entries(x, "a dc sweep"), xl, s)) return false;
    a.sweeps.push_back(std::move(s));
  }
  return true;
}

void YamlParser::ics(const YAML::Node& n, const SourceLoc& where) {
  if (n.IsNull()) return;
  if (!n.IsMap()) {
    err(loc(n, where), fmt::format("expected 'ic' to be a mapping of node: voltage, got {}", node_kind(n)));
    return;
  }
  for (const Entry& e : entries(n, "'ic'")) {
    ParamAssign pa;
    pa.name = e.key;
    pa.loc = loc(e.key_node);
    // "v(out)" is accepted as a key too.
    if (pa.name.size() > 3 && pa.name.compare(0, 2, "v(") == 0 && pa.name.back() == ')')
      pa.name = pa.name.substr(2, pa.name.size() - 3);
    ValueExpr v;
    if (!scalar(e.value, fmt::format("the initial voltage of node '{}'", pa.name), pa.loc, v)) continue;
    pa.values.push_back(std::move(v));
    out_.ics.push_back(std::move(pa));
  }
}

void YamlParser::outputs(const YAML::Node& n, const SourceLoc& where) {
  if (n.IsNull()) return;
  if (n.IsScalar()) {
    if (to_lower(n.Scalar()) != "all") out_.outputs.push_back(to_lower(n.Scalar()));  // all: every signal
    return;
  }
  if (!n.IsSequence()) {
    err(loc(n, where), fmt::format("expected 'outputs' to be a list of signals like v(out), i(v1), got {}",
                                   node_kind(n)));
    return;
  }
  for (const YAML::Node& x : n) {
    std::string s;
    if (name_scalar(x, "an output signal", where, s)) out_.outputs.push_back(s);
  }
}

void YamlParser::measures(const YAML::Node& n, const SourceLoc& where) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) {
    err(loc(n, where), fmt::format("expected 'measure' to be a list like [\"tran tdel TRIG v(in) VAL=0.5 RISE=1 "
                                   "TARG v(out) VAL=0.5 RISE=1\"], got {}", node_kind(n)));
    return;
  }
  for (const YAML::Node& x : n) {
    if (!x.IsScalar()) {
      err(loc(x, where), fmt::format("expected a measurement in .meas syntax, got {}", node_kind(x)));
      continue;
    }
    MeasureSpec m;
    if (Status st = detail::parse_measure(x.Scalar(), loc(x, where), cat_, m); !st) st_.merge(st);
    else out_.measures.push_back(std::move(m));
  }
}

void YamlParser::includes(const YAML::Node& n, const SourceLoc& where, int depth) {
  std::vector<YAML::Node> files;
  if (n.IsScalar()) {
    files.push_back(n);
  } else if (n.IsSequence()) {
    for (const YAML::Node& x : n) files.push_back(x);
  } else {
    err(loc(n, where), fmt::format("expected 'include' to be a file name or a list of file names, got {}",
                                   node_kind(n)));
    return;
  }
  for (const YAML::Node& x : files) {
    if (!x.IsScalar() || x.Scalar().empty()) {
      err(loc(x, where), fmt::format("expected a file name in 'include', got {}", node_kind(x)));
      continue;
    }
    SourceLoc xl = value_loc(x);
    std::string path = detail::resolve_include(file_->path(), x.Scalar());
    if (depth + 1 > detail::kMaxIncludeDepth) {
      err(xl, fmt::format("include nested more than {} deep (recursive include of '{}'?)",
                          detail::kMaxIncludeDepth, x.Scalar()));
      continue;
    }
    if (!is_yaml_path(path)) {
      st_.merge(detail::include_spice(path, cat_, out_, depth + 1, xl));
      for (const DeviceInstance& d : out_.devices) top_devices_.emplace(d.name, d.loc);
      for (const ModelDef& m : out_.models) models_.emplace(m.name, m.loc);
      for (const SubcktDef& s : out_.subckts) subckts_.emplace(s.name, s.loc);
      continue;
    }
    std::string text, why;
    if (!detail::read_text_file(path, text, why)) {
      err(xl, fmt::format("cannot open include file '{}': {}", path, why));
      continue;
    }
    parse_text(path, text, false, depth + 1);
  }
}

}  // namespace anasim::yaml
