// YAML netlist reader (format in NETLIST_FORMAT.md), built on yaml-cpp. Produces the same ParsedNetlist as
// the SPICE reader; yaml-cpp's 0-based marks become 1-based SourceLocs carrying the source line text.
#include <algorithm>
#include <array>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <yaml-cpp/yaml.h>
#include "engine/measure.hpp"
#include "engine/parse.hpp"

namespace anasim {
namespace {

constexpr int kMaxErrors = 20;

struct Entry {
  std::string key;  // lower-case
  YAML::Node key_node, value;
};

std::string node_kind(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return fmt::format("'{}'", n.Scalar());
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "something else";
}

// The innermost flow collection ('{' or '[') still open at 0-based (line, col), skipping quoted strings and
// comments; false if none. yaml-cpp reports an unclosed one far from where it was opened.
bool unclosed_flow(const SourceFile& f, int line, int col, int& oline, int& ocol) {
  std::vector<std::pair<int, int>> open;
  for (int i = 0; i <= line && i < static_cast<int>(f.spans().size()); ++i) {
    const std::string_view s = f.line(i + 1);
    char quote = 0;
    for (int j = 0; j < static_cast<int>(s.size()) && (i < line || j < col); ++j) {
      char c = s[j], prev = j > 0 ? s[j - 1] : ' ';
      if (quote) {
        if (c == quote) quote = 0;
      } else if ((c == '"' || c == '\'') && std::strchr(" \t[{,:", prev)) {
        quote = c;
      } else if (c == '#' && (prev == ' ' || prev == '\t' || j == 0)) {
        break;
      } else if (c == '{' || c == '[') {
        open.emplace_back(i, j);
      } else if ((c == '}' || c == ']') && !open.empty()) {
        open.pop_back();
      }
    }
  }
  if (open.empty()) return false;
  oline = open.back().first;
  ocol = open.back().second;
  return true;
}

// Whether the Levenshtein distance between a and a short name b (under 32 characters) is at most 2. Runs for every
// top-level key of every YAML file against every section name (with a table allocated per pair, 18% of
// fuzz_hardware's time): no allocation, and no work where the lengths alone rule it out (the distance is at least
// their difference).
bool within_two_edits(const std::string& a, const std::string& b) {
  constexpr size_t kMaxB = 32;
  if (b.size() >= kMaxB || (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > 2) return false;
  std::array<size_t, kMaxB + 1> d{};  // one row of the distance table: d[j] = distance(a[0, i), b[0, j))
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
      prev = cur;
    }
  }
  return d[b.size()] <= 2;
}

}  // namespace

const std::vector<std::string>& yaml_section_names() {
  static const std::vector<std::string> names = {"title",   "params", "models",  "subcircuits", "devices",
                                                 "analyses", "options", "ic", "outputs", "measure", "include"};
  return names;
}

namespace {

class YamlParser {
 public:
  YamlParser(const DeviceCatalog& cat, ParsedNetlist& out, const AnalysisCatalog* analyses = nullptr)
      : cat_(cat), analyses_(analyses), out_(out) {
    for (const DeviceInstance& d : out_.devices) top_devices_.emplace(d.name, d.loc);
    for (const ModelDef& m : out_.models) models_.emplace(m.name, m.loc);
    for (const SubcktDef& s : out_.subckts) subckts_.emplace(s.name, s.loc);
  }

  // Parses one YAML document. `top`: the top-level file (its title counts).
  void parse_text(const std::string& path, const std::string& text, bool top, int depth) {
    const SourceFile* saved = file_;
    file_ = SourceFile::add(path, text);
    try {
      YAML::Node root = YAML::Load(text);
      document(root, top, depth);
    } catch (const YAML::Exception& e) {
      SourceLoc l = mark_loc(e.mark);
      std::string msg = fmt::format("YAML syntax error: {}", e.msg.empty() ? std::string(e.what()) : e.msg);
      // yaml-cpp does not name the usual cause of a syntax error: a tab in the indentation.
      size_t indent_end = l.text().find_first_not_of(" \t");
      size_t tab = l.text().find('\t');
      if (l.valid() && tab != std::string::npos && tab < indent_end) {
        l.col = static_cast<int>(tab) + 1;
        msg += " (tabs are not allowed in YAML indentation; indent with spaces)";
      } else if (e.msg == YAML::ErrorMsg::END_OF_MAP || e.msg == YAML::ErrorMsg::END_OF_SEQ) {
        msg += " (check the indentation: this line does not line up with the entries above it)";
      }
      int oline = 0, ocol = 0;
      if (l.valid() && unclosed_flow(*file_, l.line - 1, l.col - 1, oline, ocol)) {
        char c = file_->line(oline + 1)[ocol];
        msg = fmt::format("YAML syntax error: '{}' is never closed (expected '{}'; the parser stopped at line {}: {})",
                          c, c == '{' ? '}' : ']', l.line, e.msg.empty() ? std::string(e.what()) : e.msg);
        l.line = oline + 1;
        l.col = ocol + 1;
      }
      err(l, std::move(msg));
    } catch (const std::exception& e) {
      err(file_loc(), fmt::format("cannot read YAML netlist: {}", e.what()));
    }
    file_ = saved;
  }

  Status status() const { return st_; }

 private:
  const DeviceCatalog& cat_;
  const AnalysisCatalog* analyses_;  // extension analysis kinds, may be null
  ParsedNetlist& out_;
  Status st_;
  const SourceFile* file_ = nullptr;  // the file being read (registered: SourceLocs point into it)
  std::map<std::string, SourceLoc> top_devices_, models_, subckts_;

  // ---- diagnostics and locations ---------------------------------------------------------------

  bool err(const SourceLoc& loc, std::string msg) {
    if (static_cast<int>(st_.errors.size()) < kMaxErrors) {
      st_.merge(Status::input(std::move(msg), loc));
      if (static_cast<int>(st_.errors.size()) == kMaxErrors)
        st_.warnings.push_back(fmt::format("stopped after {} errors", kMaxErrors));
    }
    return false;
  }
  bool too_many_errors() const { return static_cast<int>(st_.errors.size()) >= kMaxErrors; }

  SourceLoc file_loc() const {
    SourceLoc l;
    l.src = file_;
    return l;
  }
  SourceLoc mark_loc(const YAML::Mark& m) const {
    SourceLoc l = file_loc();
    if (m.is_null() || m.line < 0) return l;
    l.line = m.line + 1;
    l.col = m.column + 1;
    return l;
  }
  // Location of a node; `fallback` if the node has no position (missing keys).
  SourceLoc loc(const YAML::Node& n, const SourceLoc& fallback = {}) const {
    if (!n.IsDefined()) return fallback;
    SourceLoc l = mark_loc(n.Mark());
    return l.valid() ? l : fallback;
  }
  // Location of the first character of a scalar's text (past an opening quote).
  SourceLoc value_loc(const YAML::Node& n) const {
    SourceLoc l = loc(n);
    if (l.valid() && l.col >= 1 && l.col <= static_cast<int>(l.text().size())) {
      char c = l.text()[l.col - 1];
      if (c == '"' || c == '\'') ++l.col;
    }
    return l;
  }

  // Map entries in document order, keys lower-cased. Non-scalar or duplicate keys are errors.
  std::vector<Entry> entries(const YAML::Node& map, const std::string& what) {
    std::vector<Entry> out;
    std::map<std::string, SourceLoc> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar()) {
        err(loc(it->first, loc(map)), fmt::format("expected a plain key in {}, got {}", what, node_kind(it->first)));
        continue;
      }
      std::string key = to_lower(it->first.Scalar());
      SourceLoc kl = loc(it->first, loc(map));
      auto s = seen.find(key);
      if (s != seen.end()) {
        err(kl, fmt::format("duplicate key '{}' in {} (first at line {})", key, what, s->second.line));
        continue;
      }
      seen.emplace(key, kl);
      out.push_back(Entry{key, it->first, it->second});
    }
    return out;
  }

  // A scalar as an unevaluated expression. Plain true/false become 1/0.
  bool scalar(const YAML::Node& n, const std::string& what, const SourceLoc& where, ValueExpr& v) {
    if (!n.IsDefined() || n.IsNull() || !n.IsScalar() || n.Scalar().empty())
      return err(loc(n, where), fmt::format("expected a value for {}, got {}", what, node_kind(n)));
    v.text = n.Scalar();
    v.loc = value_loc(n);
    if (n.Tag() != "!") {  // plain (unquoted) scalar
      std::string l = to_lower(v.text);
      if (l == "true") v.text = "1";
      if (l == "false") v.text = "0";
    }
    return true;
  }

  bool name_scalar(const YAML::Node& n, const std::string& what, const SourceLoc& where, std::string& s,
                   SourceLoc* sl = nullptr) {
    if (!n.IsDefined() || n.IsNull() || !n.IsScalar() || n.Scalar().empty())
      return err(loc(n, where), fmt::format("expected a name for {}, got {}", what, node_kind(n)));
    s = to_lower(n.Scalar());
    if (sl) *sl = value_loc(n);
    return true;
  }

  // key: value or key: [v1, v2, ...] -> ParamAssign (lists set is_list).
  bool param(const Entry& e, const std::string& what, ParamAssign& pa) {
    pa.name = e.key;
    pa.loc = loc(e.key_node);
    if (e.value.IsMap()) {  // {value: v, tol: t, dist: gauss|uniform}
      bool have_value = false;
      for (const auto& kv : e.value) {
        std::string k = to_lower(kv.first.Scalar());
        SourceLoc kl = loc(kv.first);
        std::string ctx = fmt::format("'{}' of {}", e.key, what);
        if (k == "value") {
          ValueExpr v;
          if (!scalar(kv.second, ctx, kl, v)) return false;
          pa.values.push_back(std::move(v));
          have_value = true;
        } else if (k == "tol") {
          if (!scalar(kv.second, ctx, kl, pa.tol)) return false;
        } else if (k == "dist") {
          ValueExpr d;
          if (!scalar(kv.second, ctx, kl, d)) return false;
          pa.dist = to_lower(d.text);
          if (pa.dist != "gauss" && pa.dist != "uniform")
            return err(d.loc, fmt::format("unknown distribution '{}' for {}; expected gauss or uniform", d.text, ctx));
        } else {
          return err(kl, fmt::format("unknown key '{}' in '{}' of {}; expected value, tol or dist", k, e.key, what));
        }
      }
      if (!have_value) return err(pa.loc, fmt::format("'{}' of {} needs 'value:'", e.key, what));
      return true;
    }
    if (e.value.IsSequence()) {
      pa.is_list = true;
      for (const YAML::Node& x : e.value) {
        ValueExpr v;
        if (!scalar(x, fmt::format("'{}' of {}", e.key, what), pa.loc, v)) return false;
        pa.values.push_back(std::move(v));
      }
      return true;
    }
    ValueExpr v;
    if (!scalar(e.value, fmt::format("'{}' of {}", e.key, what), pa.loc, v)) return false;
    pa.values.push_back(std::move(v));
    return true;
  }

  // A mapping of name: value -> ParamAssigns (scalars only unless allow_lists).
  void param_map(const YAML::Node& n, const std::string& what, const SourceLoc& where, std::vector<ParamAssign>& dst,
                 bool allow_lists) {
    if (n.IsNull()) return;
    if (!n.IsMap()) {
      err(loc(n, where), fmt::format("expected a mapping of name: value for {}, got {}", what, node_kind(n)));
      return;
    }
    for (const Entry& e : entries(n, what)) {
      if (!allow_lists && !e.value.IsScalar()) {
        err(loc(e.value, loc(e.key_node)),
            fmt::format("expected a single value for '{}' in {}, got {}", e.key, what, node_kind(e.value)));
        continue;
      }
      ParamAssign pa;
      if (param(e, what, pa)) dst.push_back(std::move(pa));
    }
  }

  // ---- document --------------------------------------------------------------------------------

  static bool engine_section(const std::string& k) {
    const auto& names = yaml_section_names();
    return std::find(names.begin(), names.end(), k) != names.end();
  }

  void document(const YAML::Node& root, bool top, int depth) {
    if (root.IsNull()) {
      if (top) err(file_loc(), "empty YAML netlist; expected a mapping with at least 'devices:'");
      return;
    }
    if (!root.IsMap()) {
      err(loc(root, file_loc()),
          fmt::format("expected a YAML mapping (title:, params:, models:, subcircuits:, devices:, analyses:, ...) at "
                      "the top level, got {}",
                      node_kind(root)));
      return;
    }
    for (const Entry& e : entries(root, "the netlist")) {
      if (too_many_errors()) return;
      SourceLoc kl = loc(e.key_node);
      const std::string& k = e.key;
      if (!engine_section(k)) {
        other_section(e, kl);
      } else if (k == "title") {
        if (!e.value.IsScalar() && !e.value.IsNull()) {
          err(loc(e.value, kl), fmt::format("expected a text for 'title', got {}", node_kind(e.value)));
        } else if (top && e.value.IsScalar()) {
          out_.title = e.value.Scalar();
        }
      } else if (k == "params") {
        param_map(e.value, "'params'", kl, out_.params, false);
      } else if (k == "models") {
        models(e.value, kl, out_.models, models_, "");
      } else if (k == "subcircuits") {
        subcircuits(e.value, kl);
      } else if (k == "devices") {
        devices(e.value, kl, out_.devices, top_devices_, "");
      } else if (k == "analyses") {
        analyses(e.value, kl);
      } else if (k == "options") {
        param_map(e.value, "'options'", kl, out_.options, false);
      } else if (k == "ic") {
        ics(e.value, kl);
      } else if (k == "outputs") {
        outputs(e.value, kl);
      } else if (k == "measure") {
        measures(e.value, kl);
      } else if (k == "include") {
        includes(e.value, kl, depth);
      }
    }
  }

  // A section another layer reads (e.g. "hardware:"): entries kept unevaluated, nested mappings flattened to
  // "outer.inner" keys, duplicate keys rejected; a section given twice (an include) is an error.
  void other_section(const Entry& e, const SourceLoc& kl) {
    // A name close to an engine section is almost certainly a typo ("analysis:" for "analyses:").
    for (const std::string& k : yaml_section_names())
      if (within_two_edits(e.key, k)) {
        err(kl, fmt::format("unknown top-level section '{}'; did you mean '{}'?", e.key, k));
        return;
      }
    for (const ParsedSection& s : out_.sections)
      if (s.name == e.key) {
        err(kl, fmt::format("section '{}' given twice (first at {}:{})", e.key, s.loc.file(), s.loc.line));
        return;
      }
    ParsedSection sec;
    sec.name = e.key;
    sec.loc = kl;
    if (e.value.IsMap()) {
      section_entries(e.value, "", fmt::format("'{}'", e.key), sec.entries);
    } else if (!e.value.IsNull()) {
      Entry whole{e.key, e.key_node, e.value};
      ParamAssign pa;
      if (param(whole, fmt::format("'{}'", e.key), pa)) {
        pa.name.clear();
        sec.entries.push_back(std::move(pa));
      }
    }
    out_.sections.push_back(std::move(sec));
  }

  void section_entries(const YAML::Node& map, const std::string& prefix, const std::string& what,
                       std::vector<ParamAssign>& dst) {
    for (const Entry& e : entries(map, what)) {
      if (e.value.IsMap() && !is_value_map(e.value)) {
        section_entries(e.value, prefix + e.key + ".", fmt::format("'{}{}' of {}", prefix, e.key, what), dst);
        continue;
      }
      ParamAssign pa;
      if (param(e, what, pa)) {
        pa.name = prefix + e.key;
        dst.push_back(std::move(pa));
      }
    }
  }

  // A mapping {value: v, tol: t, dist: d} (a value with a tolerance), as opposed to a nested section.
  static bool is_value_map(const YAML::Node& n) {
    for (const auto& kv : n)
      if (kv.first.IsScalar() && to_lower(kv.first.Scalar()) == "value") return true;
    return false;
  }

  void models(const YAML::Node& n, const SourceLoc& where, std::vector<ModelDef>& dst,
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

  static std::string first_defined(const SourceLoc& first, const SourceLoc& here) {
    if (first.file() == here.file()) return fmt::format("first defined at line {}", first.line);
    return fmt::format("first defined at {}:{}", first.file(), first.line);
  }

  void subcircuits(const YAML::Node& n, const SourceLoc& where) {
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

  // ---- devices ---------------------------------------------------------------------------------

  std::string known_types() const {
    std::string s;
    for (const DeviceType* d : cat_.all()) s += fmt::format("{} ({}), ", d->key, d->long_name);
    return s + "x (subcircuit)";
  }

  // Resolves `type:` given as key ("r") or long name ("resistor"); "x" for subcircuit instances.
  const DeviceType* resolve_type(const std::string& t, bool& is_x) const {
    is_x = t == "x" || t == "subckt" || t == "subcircuit";
    if (is_x) return nullptr;
    if (const DeviceType* d = cat_.find(t)) return d;
    for (const DeviceType* d : cat_.all())
      if (to_lower(d->long_name) == t) return d;
    return nullptr;
  }

  void devices(const YAML::Node& n, const SourceLoc& where, std::vector<DeviceInstance>& dst,
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

  bool device(const YAML::Node& n, const SourceLoc& where, DeviceInstance& d, const std::string& in) {
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
      if (!dev_tol.text.empty()) target->tol = dev_tol;
      target->dist = to_lower(dev_dist.text);
      if (!target->dist.empty() && target->dist != "gauss" && target->dist != "uniform")
        return err(dev_dist.loc, fmt::format("unknown distribution '{}' for {}; expected gauss or uniform",
                                             dev_dist.text, what));
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

  static std::string pin_list(const DeviceType& t) {
    std::string s;
    for (const std::string& p : t.pins) s += (s.empty() ? "" : " ") + p;
    return s;
  }

  bool nodes(const Entry& e, const DeviceType* type, const std::string& what, DeviceInstance& d) {
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
      SourceLoc xl;
      if (!name_scalar(x, fmt::format("a node of {}", what), kl, node, &xl)) return false;
      d.nodes.push_back(node);
      d.node_locs.push_back(xl);
    }
    return true;
  }

  // ac: mag | [mag] | [mag, phase]
  bool ac_value(const Entry& e, const std::string& what, DeviceInstance& d) {
    SourceLoc kl = loc(e.key_node);
    if (e.value.IsSequence()) {
      if (e.value.size() < 1 || e.value.size() > 2)
        return err(loc(e.value, kl), fmt::format("expected 'ac' of {} to be a magnitude or [magnitude, phase], got "
                                                 "{} values",
                                                 what, e.value.size()));
      const char* names[2] = {"acmag", "acphase"};
      size_t k = 0;
      for (const YAML::Node& x : e.value) {
        ParamAssign pa{names[k], {}, false, kl, {}, {}};
        ValueExpr v;
        if (!scalar(x, fmt::format("'ac' of {}", what), kl, v)) return false;
        pa.values.push_back(std::move(v));
        d.params.push_back(std::move(pa));
        ++k;
      }
      return true;
    }
    ParamAssign pa{"acmag", {}, false, kl, {}, {}};
    ValueExpr v;
    if (!scalar(e.value, fmt::format("'ac' of {}", what), kl, v)) return false;
    pa.values.push_back(std::move(v));
    d.params.push_back(std::move(pa));
    return true;
  }

  bool check_list(const ParamAssign& pa, const std::string& what) {
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

  // ---- analyses and the rest -------------------------------------------------------------------

  void analyses(const YAML::Node& n, const SourceLoc& where) {
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

  bool analysis(const YAML::Node& n, const SourceLoc& where, AnalysisSpec& a) {
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

  // An extension analysis: every key but `type` must name a parameter of its table (or an alias); List
  // parameters take a YAML list or one value, the others one value. Values stay unevaluated.
  bool extension(const AnalysisType& type, const std::vector<Entry>& es, AnalysisSpec& a) {
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

  bool sweep(const std::vector<Entry>& es, const SourceLoc& where, AnalysisSpec::Sweep& s) {
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

  bool dc(const std::map<std::string, const Entry*>& by_key, const SourceLoc& nl, AnalysisSpec& a) {
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

  void ics(const YAML::Node& n, const SourceLoc& where) {
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

  void outputs(const YAML::Node& n, const SourceLoc& where) {
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

  // measure: a list of .meas requests in SPICE syntax without the ".meas" ("tran t1 WHEN v(out)=0.5").
  void measures(const YAML::Node& n, const SourceLoc& where) {
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

  void includes(const YAML::Node& n, const SourceLoc& where, int depth) {
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
};

Status run_yaml(const std::string& text, const std::string& name, const DeviceCatalog& cat, ParsedNetlist& out,
                const AnalysisCatalog* analyses) {
  out = ParsedNetlist{};
  out.file = name;
  YamlParser p(cat, out, analyses);
  p.parse_text(name, text, true, 0);
  if (!out.outputs.empty())  // an outputs: list keeps what measure: reads, as .save does
    for (std::string& sig : measure_signals(out.measures))
      if (std::find(out.outputs.begin(), out.outputs.end(), sig) == out.outputs.end()) out.outputs.push_back(sig);
  return p.status();
}

}  // namespace

Status parse_yaml_string(const std::string& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                         ParsedNetlist& out, const AnalysisCatalog* analyses) {
  return run_yaml(text, pseudo_name, cat, out, analyses);
}

Status parse_yaml_string(const std::string& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                         ParsedNetlist& out) {
  return run_yaml(text, pseudo_name, cat, out, nullptr);
}

Status parse_yaml(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out,
                  const AnalysisCatalog* analyses) {
  std::string text, why;
  if (!detail::read_text_file(path, text, why)) {
    out = ParsedNetlist{};
    return Status::input(fmt::format("cannot open netlist '{}': {}", path, why));
  }
  return run_yaml(text, path, cat, out, analyses);
}

namespace detail {

Status include_yaml(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out, int depth,
                    const SourceLoc& at) {
  if (depth > kMaxIncludeDepth)
    return Status::input(
        fmt::format("include nested more than {} deep (recursive include of '{}'?)", kMaxIncludeDepth, path), at);
  std::string text, why;
  if (!read_text_file(path, text, why))
    return Status::input(fmt::format("cannot open include file '{}': {}", path, why), at);
  YamlParser p(cat, out);
  p.parse_text(path, text, false, depth);
  return p.status();
}

}  // namespace detail
}  // namespace anasim
