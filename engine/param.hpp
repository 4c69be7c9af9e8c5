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

// n values of T, indexed like a parameter table: a view into the storage of the ParamValues that owns it.
template <class T>
class ParamArray {
 public:
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }

 private:
  friend struct ParamValues;
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Evaluated parameters for one instance or model, indexed like the table. value, given and loc share one heap
// block (a netlist of 10^5 devices would otherwise make three allocations per device).
struct ParamValues {
  const ParamTable* table = nullptr;
  ParamArray<double> value;                // size table->size(); default if not given
  ParamArray<char> given;                  // 1 if set explicitly
  ParamArray<SourceLoc> loc;               // where each given value came from
  // Values of the List, Text and Expr kinds, sized like the table only if it has parameters of that kind
  // (most devices have none: their ParamValues then carry one null pointer instead of three vectors).
  // list: numbers of List parameters; text: raw text of Text and Expr parameters (quotes stripped, "" if not
  // given); expr: Expr parameters compiled by elaboration.
  std::vector<std::vector<double>>& list() { return extra().list; }
  const std::vector<std::vector<double>>& list() const { return extra_ ? extra_->list : kNoExtra.list; }
  std::vector<std::string>& text() { return extra().text; }
  const std::vector<std::string>& text() const { return extra_ ? extra_->text : kNoExtra.text; }
  std::vector<std::shared_ptr<CompiledExpr>>& expr() { return extra().expr; }
  const std::vector<std::shared_ptr<CompiledExpr>>& expr() const { return extra_ ? extra_->expr : kNoExtra.expr; }

  ParamValues() = default;
  ParamValues(const ParamValues& o);
  ParamValues(ParamValues&& o) noexcept;
  ParamValues& operator=(const ParamValues& o);
  ParamValues& operator=(ParamValues&& o) noexcept;
  ~ParamValues() { release(); }

  double operator[](int i) const { return value[i]; }
  bool has(int i) const { return given[i] != 0; }
  int index_of(const std::string& name) const;  // -1 if not in table

 private:
  friend ParamValues default_params(const ParamTable& table);
  struct Extra {
    std::vector<std::vector<double>> list;
    std::vector<std::string> text;
    std::vector<std::shared_ptr<CompiledExpr>> expr;
  };
  static const Extra kNoExtra;
  Extra& extra() {
    if (!extra_) extra_ = std::make_unique<Extra>();
    return *extra_;
  }
  // value, given and loc of size n in one heap block (n SourceLoc at loc.p_, then n double, then n char):
  // loc default-constructed, the rest uninitialised.
  void allocate(size_t n);
  void release();
  std::unique_ptr<Extra> extra_;
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
