// YAML netlist reader (format in NETLIST_FORMAT.md), built on yaml-cpp. Produces the same ParsedNetlist as
// the SPICE reader; yaml-cpp's 0-based marks become 1-based SourceLocs carrying the source line text. Here: reading
// a document, scalars and parameters, the top-level sections and the entry points; the parser in yaml_reader.hpp.
#include <algorithm>
#include <array>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <yaml-cpp/yaml.h>
#include "engine/measure.hpp"
#include "engine/parse.hpp"
#include "engine/yaml_reader.hpp"

namespace anasim {
namespace {

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

namespace yaml {

std::string node_kind(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return fmt::format("'{}'", n.Scalar());
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "something else";
}

void YamlParser::parse_text(const std::string& path, const std::string& text, bool top, int depth) {
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

std::vector<Entry> YamlParser::entries(const YAML::Node& map, const std::string& what) {
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

bool YamlParser::scalar(const YAML::Node& n, const std::string& what, const SourceLoc& where, ValueExpr& v) {
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

bool YamlParser::name_scalar(const YAML::Node& n, const std::string& what, const SourceLoc& where, std::string& s,
                             SourceLoc* sl) {
  if (!n.IsDefined() || n.IsNull() || !n.IsScalar() || n.Scalar().empty())
    return err(loc(n, where), fmt::format("expected a name for {}, got {}", what, node_kind(n)));
  s = to_lower(n.Scalar());
  if (sl) *sl = value_loc(n);
  return true;
}

bool YamlParser::param(const Entry& e, const std::string& what, ParamAssign& pa) {
  pa.name = e.key;
  pa.loc = loc(e.key_node);
  if (e.value.IsMap()) {  // {value: v, tol: t, dist: gauss|uniform}
    bool have_value = false;
    Tolerance tolerance;
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
        if (!scalar(kv.second, ctx, kl, tolerance.tol)) return false;
      } else if (k == "dist") {
        ValueExpr d;
        if (!scalar(kv.second, ctx, kl, d)) return false;
        tolerance.dist = to_lower(d.text);
        if (tolerance.dist != "gauss" && tolerance.dist != "uniform")
          return err(d.loc, fmt::format("unknown distribution '{}' for {}; expected gauss or uniform", d.text, ctx));
      } else {
        return err(kl, fmt::format("unknown key '{}' in '{}' of {}; expected value, tol or dist", k, e.key, what));
      }
    }
    if (!have_value) return err(pa.loc, fmt::format("'{}' of {} needs 'value:'", e.key, what));
    if (!tolerance.tol.text.empty() || !tolerance.dist.empty())
      pa.tolerance = std::make_shared<const Tolerance>(std::move(tolerance));
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

void YamlParser::param_map(const YAML::Node& n, const std::string& what, const SourceLoc& where,
                           std::vector<ParamAssign>& dst, bool allow_lists) {
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

bool YamlParser::engine_section(const std::string& k) {
  const auto& names = yaml_section_names();
  return std::find(names.begin(), names.end(), k) != names.end();
}

void YamlParser::document(const YAML::Node& root, bool top, int depth) {
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

void YamlParser::other_section(const Entry& e, const SourceLoc& kl) {
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

void YamlParser::section_entries(const YAML::Node& map, const std::string& prefix, const std::string& what,
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

bool YamlParser::is_value_map(const YAML::Node& n) {
  for (const auto& kv : n)
    if (kv.first.IsScalar() && to_lower(kv.first.Scalar()) == "value") return true;
  return false;
}

}  // namespace yaml

namespace {

using yaml::YamlParser;

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
  yaml::YamlParser p(cat, out);
  p.parse_text(path, text, false, depth);
  return p.status();
}

}  // namespace detail
}  // namespace anasim
