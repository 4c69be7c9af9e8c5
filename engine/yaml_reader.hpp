// YAML netlist reader: the parser's state and the declarations of its members, which are defined by topic in
// yaml_parser.cpp (reading a document, scalars and parameters, the top-level sections, the entry points),
// yaml_devices.cpp (models, subcircuits, devices) and yaml_analyses.cpp (analyses, ic, outputs, measure, include).
// Internal to the reader.
#pragma once
#include <map>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>
#include "engine/parse.hpp"

namespace anasim::yaml {

constexpr int kMaxErrors = 20;

struct Entry {
  std::string key;  // lower-case
  YAML::Node key_node, value;
};

// How a node reads in a message: its text in quotes, "a list", "a mapping" or "nothing".
std::string node_kind(const YAML::Node& n);

class YamlParser {
 public:
  YamlParser(const DeviceCatalog& cat, ParsedNetlist& out, const AnalysisCatalog* analyses = nullptr)
      : cat_(cat), analyses_(analyses), out_(out) {
    for (const DeviceInstance& d : out_.devices) top_devices_.emplace(d.name, d.loc);
    for (const ModelDef& m : out_.models) models_.emplace(m.name, m.loc);
    for (const SubcktDef& s : out_.subckts) subckts_.emplace(s.name, s.loc);
  }

  // Parses one YAML document. `top`: the top-level file (its title counts).
  void parse_text(const std::string& path, const std::string& text, bool top, int depth);

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
  std::vector<Entry> entries(const YAML::Node& map, const std::string& what);

  // A scalar as an unevaluated expression. Plain true/false become 1/0.
  bool scalar(const YAML::Node& n, const std::string& what, const SourceLoc& where, ValueExpr& v);
  bool name_scalar(const YAML::Node& n, const std::string& what, const SourceLoc& where, std::string& s,
                   SourceLoc* sl = nullptr);

  // key: value or key: [v1, v2, ...] -> ParamAssign (lists set is_list).
  bool param(const Entry& e, const std::string& what, ParamAssign& pa);

  // A mapping of name: value -> ParamAssigns (scalars only unless allow_lists).
  void param_map(const YAML::Node& n, const std::string& what, const SourceLoc& where, std::vector<ParamAssign>& dst,
                 bool allow_lists);

  // ---- document --------------------------------------------------------------------------------

  static bool engine_section(const std::string& k);
  void document(const YAML::Node& root, bool top, int depth);

  // A section another layer reads (e.g. "hardware:"): entries kept unevaluated, nested mappings flattened to
  // "outer.inner" keys, duplicate keys rejected; a section given twice (an include) is an error.
  void other_section(const Entry& e, const SourceLoc& kl);
  void section_entries(const YAML::Node& map, const std::string& prefix, const std::string& what,
                       std::vector<ParamAssign>& dst);

  // A mapping {value: v, tol: t, dist: d} (a value with a tolerance), as opposed to a nested section.
  static bool is_value_map(const YAML::Node& n);

  // ---- models, subcircuits and devices (yaml_devices.cpp) --------------------------------------

  void models(const YAML::Node& n, const SourceLoc& where, std::vector<ModelDef>& dst,
              std::map<std::string, SourceLoc>& names, const std::string& in);
  static std::string first_defined(const SourceLoc& first, const SourceLoc& here);
  void subcircuits(const YAML::Node& n, const SourceLoc& where);
  std::string known_types() const;

  // Resolves `type:` given as key ("r") or long name ("resistor"); "x" for subcircuit instances.
  const DeviceType* resolve_type(const std::string& t, bool& is_x) const;
  void devices(const YAML::Node& n, const SourceLoc& where, std::vector<DeviceInstance>& dst,
               std::map<std::string, SourceLoc>& names, const std::string& in);
  bool device(const YAML::Node& n, const SourceLoc& where, DeviceInstance& d, const std::string& in);
  static std::string pin_list(const DeviceType& t);
  bool nodes(const Entry& e, const DeviceType* type, const std::string& what, DeviceInstance& d);

  // ac: mag | [mag] | [mag, phase]
  bool ac_value(const Entry& e, const std::string& what, DeviceInstance& d);
  bool check_list(const ParamAssign& pa, const std::string& what);

  // ---- analyses and the rest (yaml_analyses.cpp) -----------------------------------------------

  void analyses(const YAML::Node& n, const SourceLoc& where);
  bool analysis(const YAML::Node& n, const SourceLoc& where, AnalysisSpec& a);

  // An extension analysis: every key but `type` must name a parameter of its table (or an alias); List
  // parameters take a YAML list or one value, the others one value. Values stay unevaluated.
  bool extension(const AnalysisType& type, const std::vector<Entry>& es, AnalysisSpec& a);
  bool sweep(const std::vector<Entry>& es, const SourceLoc& where, AnalysisSpec::Sweep& s);
  bool dc(const std::map<std::string, const Entry*>& by_key, const SourceLoc& nl, AnalysisSpec& a);
  void ics(const YAML::Node& n, const SourceLoc& where);
  void outputs(const YAML::Node& n, const SourceLoc& where);

  // measure: a list of .meas requests in SPICE syntax without the ".meas" ("tran t1 WHEN v(out)=0.5").
  void measures(const YAML::Node& n, const SourceLoc& where);
  void includes(const YAML::Node& n, const SourceLoc& where, int depth);
};

}  // namespace anasim::yaml
