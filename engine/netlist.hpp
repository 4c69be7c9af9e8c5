// The parsed netlist: what the SPICE and YAML parsers produce, before parameters are evaluated
// and subcircuits flattened (see elaborate.hpp). All names are lower-cased; every object keeps its SourceLoc.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include "engine/types.hpp"

namespace anasim {

class AnalysisType;  // analysis_type.hpp

// An unevaluated value: a number with SPICE suffix ("10k"), or an expression ("2*rval").
struct ValueExpr {
  std::string text;
  SourceLoc loc;  // points at the first character of text
};

// The list-valued source waveforms both readers accept (SPICE `PULSE(...)`, YAML `pulse: [...]`): name, the least
// and most values, and the argument list for messages. PWL also needs an even count.
struct WaveformArgs {
  const char* name;
  size_t min, max;
  const char* args;
};
inline constexpr WaveformArgs kWaveformArgs[] = {
    {"pulse", 2, 8, "v1 v2 [td tr tf pw per np]"},
    {"sin", 2, 6, "vo va [freq td theta phase]"},
    {"exp", 2, 6, "v1 v2 [td1 tau1 td2 tau2]"},
    {"pwl", 2, 100000000, "t1 v1 t2 v2 ..."},
    {"am", 2, 7, "va vo [mf fc td phasec phases]"},
    {"sffm", 2, 7, "vo va [fc mdi fs phasec phases]"},
};

// name = value, or name = (v1 v2 ...) for list-valued parameters (PULSE, PWL, ...).
// A parameter's Monte Carlo tolerance. tol: text ending in '%' is relative to the nominal value, otherwise absolute
// in the parameter's unit. dist "gauss" (sigma = tol, the default) or "uniform" (nominal +- tol).
struct Tolerance {
  ValueExpr tol;
  std::string dist;
};

struct ParamAssign {
  std::string name;               // lower-case parameter name
  std::vector<ValueExpr> values;  // one element for scalars
  bool is_list = false;
  SourceLoc loc;                  // location of the name (or of the value for positional ones)
  // Monte Carlo tolerance (`anasim run --mc`; YAML netlists), null or an empty tol = none. Behind a pointer: a
  // netlist of 10^5 devices has none, and each parameter would carry 80 bytes for it.
  std::shared_ptr<const Tolerance> tolerance;
  // The tolerance given, or null (none, or an empty tol).
  const ValueExpr* tol() const { return tolerance && !tolerance->tol.text.empty() ? &tolerance->tol : nullptr; }
};

// One device or subcircuit-instance line.
struct DeviceInstance {
  std::string name;                   // lower-case instance name, e.g. "r1", "x3"
  std::string type;                   // device-type key from the catalog ("r", "v", "d", ...) or "x"
  std::vector<std::string> nodes;     // lower-case node names; "0" / "gnd" are ground
  std::string model;                  // model name (D), subcircuit name (X), or controlling source (F, H)
  SourceLoc model_loc;
  std::vector<ParamAssign> params;
  SourceLoc loc;                      // location of the instance name
};

struct ModelDef {
  std::string name;  // lower-case
  std::string type;  // lower-case SPICE model type, e.g. "d"
  std::vector<ParamAssign> params;
  SourceLoc loc;
};

struct SubcktDef {
  std::string name;
  std::vector<std::string> ports;
  std::vector<ParamAssign> params;  // default parameter values (expressions)
  std::vector<DeviceInstance> devices;
  std::vector<ModelDef> models;     // models local to the subcircuit
  SourceLoc loc;
};

// One analysis request. Arguments are kept as expressions and evaluated during elaboration.
struct AnalysisSpec {
  enum class Kind { Op, Dc, Tran, Ac, Extension };
  Kind kind = Kind::Op;
  // Extension: an analysis kind from the AnalysisCatalog given to the parser, with its arguments (names
  // checked against type->params; values unevaluated).
  const AnalysisType* type = nullptr;
  std::vector<ParamAssign> args;
  // DC: one or two sweeps (outer sweep last, as in SPICE ".dc v1 ... v2 ...": v1 inner, v2 outer).
  struct Sweep {
    std::string source;
    ValueExpr start, stop, step;
    SourceLoc loc;
  };
  std::vector<Sweep> sweeps;
  // TRAN: tstep tstop [tstart [tmax]] [uic]
  ValueExpr tstep, tstop, tstart, tmax;
  bool uic = false;
  // OP, DC, TRAN: power probes p(...) (YAML `power: true`; SPICE decks use `.options power` for all analyses)
  bool power = false;
  // AC: variation dec|oct|lin, points, fstart, fstop
  std::string variation;
  ValueExpr points, fstart, fstop;
  SourceLoc loc;
};

// One .meas / .measure request (ngspice syntax), kept unevaluated; engine/measure.hpp evaluates it on the
// result of each analysis of its kind. A clause holds what ngspice's MEASURE struct holds: the signal, the
// crossing value or second signal, and the window and edge-count options (empty text = not given).
struct MeasureClause {
  std::string signal;    // lower-case, as written: "v(out)", "v(a,b)", "i(v1)", "vdb(out)"; empty for TRIG AT=
  std::string signal2;   // WHEN a=b: the second signal (else empty)
  SourceLoc signal_loc;
  ValueExpr val;         // crossing value (TRIG/TARG VAL=, WHEN x=val)
  ValueExpr td, from, to, at;
  ValueExpr rise, fall, cross;  // counts; "last" for the last crossing
};

struct MeasureSpec {
  // Param: PARAM= / EXPR=, an expression of parameters and of the results of other measurements (main.val).
  enum class Func { TrigTarg, When, Find, Deriv, Avg, Rms, Min, Max, MinAt, MaxAt, Pp, Integ, Param };
  std::string analysis;  // "tran", "ac" or "dc"
  std::string name;      // result name (lower-case)
  Func func = Func::When;
  MeasureClause main;    // TRIG, WHEN, or the operand of FIND/DERIV/AVG/... with its AT/FROM/TO/TD
  MeasureClause second;  // TARG, or the WHEN of FIND/DERIV ... WHEN (signal empty if none)
  SourceLoc loc;         // the result name
};

// A top-level section the engine does not interpret, kept for the layer that does (YAML `hardware:`, read by
// nn/): its entries unevaluated, in file order, each with its location; duplicate keys were rejected by the
// reader. A mapping's keys are the entry names, a nested mapping's joined with '.' ("opamp: {model: x}" ->
// "opamp.model"); a section whose value is a scalar or a list has one entry with an empty name.
struct ParsedSection {
  std::string name;                  // lower-case section name
  SourceLoc loc;                     // the section's key
  std::vector<ParamAssign> entries;
};

struct ParsedNetlist {
  std::string title;
  std::string file;                     // top-level file name
  std::vector<ParamAssign> params;      // .param / params: (evaluated in order)
  std::vector<ModelDef> models;
  std::vector<SubcktDef> subckts;
  std::vector<DeviceInstance> devices;  // top level
  std::vector<AnalysisSpec> analyses;   // in file order
  std::vector<ParamAssign> options;     // .options name=value (a bare flag has value "1")
  std::vector<ParamAssign> ics;         // .ic v(node)=value; name holds the node name
  std::vector<std::string> outputs;     // requested signals ("v(out)", "i(v1)"); empty = all (.save, .probe)
  std::vector<MeasureSpec> measures;    // .meas / YAML measure:, in file order
  std::vector<std::string> globals;     // .global node names: not renamed inside subcircuits
  std::vector<ParsedSection> sections;  // sections other layers interpret (e.g. YAML "hardware:"); unused by engine

  // The section named `name`, nullptr if absent.
  const ParsedSection* section(std::string_view name) const {
    for (const ParsedSection& s : sections)
      if (s.name == name) return &s;
    return nullptr;
  }
};

// The top-level section names of a YAML netlist that the engine reads itself (title, params, ..., include), in
// one place: the YAML reader dispatches on them and a front end can tell a typo from another layer's section.
const std::vector<std::string>& yaml_section_names();

// Helpers shared by both parsers.
bool is_ground_name(std::string_view node);  // "0", "gnd" (any case); called once per pin of every device
std::string to_lower(std::string s);

}  // namespace anasim
