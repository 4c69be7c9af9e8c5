// Declarative parameter tables. One table per device (and per model type) drives parsing, defaults,
// range checks, `anasim devices` help and output metadata.
#pragma once
#include <limits>
#include <memory>
#include <string>
#include <vector>
#include "engine/expr.hpp"
#include "engine/netlist.hpp"

namespace anasim {

// Real: one evaluated number; List: a list of numbers; Flag: 0/1 (a bare word on SPICE lines);
// Text: the raw value text, quotes stripped, not evaluated (file names, dataset paths);
// Expr: a behavioural expression over circuit quantities (B source), kept as raw text by assign_params and
// compiled by elaboration into ParamValues::expr (on SPICE lines it runs to the end of the line).
enum class ParamKind { Real, List, Flag, Text, Expr };

struct ParamSpec {
  const char* name;         // lower-case name as written in netlists
  const char* unit;         // SI unit ("ohm", "F", "V", "" for dimensionless)
  double def;               // default value (Real/Flag)
  double min;               // allowed range [min, max] (see min_exclusive)
  double max;
  const char* description;
  ParamKind kind = ParamKind::Real;
  bool min_exclusive = false;  // true: value must be > min (e.g. resistance)
  const char* alias = nullptr; // alternative name accepted by the parser
};

constexpr double kInf = std::numeric_limits<double>::infinity();

using ParamTable = std::vector<ParamSpec>;

// Evaluated parameters for one instance or model, indexed like the table.
struct ParamValues {
  const ParamTable* table = nullptr;
  std::vector<double> value;               // size table->size(); default if not given
  std::vector<std::vector<double>> list;   // for List kind; sized like the table only if it has List parameters
  std::vector<std::string> text;           // for Text kind (raw, quotes stripped; "" if not given); sized only if the table has Text parameters
  std::vector<std::shared_ptr<CompiledExpr>> expr;  // for Expr kind (compiled by elaboration); sized only if the table has Expr parameters
  std::vector<char> given;                 // 1 if set explicitly
  std::vector<SourceLoc> loc;              // where each given value came from

  double operator[](int i) const { return value[i]; }
  bool has(int i) const { return given[i] != 0; }
  int index_of(const std::string& name) const;  // -1 if not in table
};

// Fresh value set holding the defaults of a table.
ParamValues default_params(const ParamTable& table);

// Evaluates assignments against the table: unknown names, bad expressions, list/scalar mismatch and
// range violations are errors located at the assignment. `what` names the owner in messages ("resistor r1").
Status assign_params(ParamValues& pv, const std::vector<ParamAssign>& assigns, const Scope& scope,
                     const std::string& what);
// Same, with the owner named as "<kind> '<name>'" (built only if a message is produced).
Status assign_params(ParamValues& pv, const std::vector<ParamAssign>& assigns, const Scope& scope,
                     const std::string& kind, const std::string& name);

}  // namespace anasim
