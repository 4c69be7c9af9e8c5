// Declarative parameter tables. One table per device (and per model type) drives parsing, defaults,
// range checks, `anasim devices` help and output metadata.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>
#include "engine/expr.hpp"
#include "engine/netlist.hpp"

namespace anasim {

// Real: one evaluated number; List: a list of numbers; Flag: 0/1 (a bare word on SPICE lines);
// Text: the raw value text, quotes stripped, not evaluated (file names, dataset paths);
// Expr: a behavioural expression over circuit quantities (B source), kept as raw text by assign_params and
// compiled by elaboration into ParamValues::expr (on SPICE lines it runs to the end of the line).
enum class ParamKind { Real, List, Flag, Text, Expr };

struct ParamValues;

// Where a parameter's value goes: one member of the struct a table is read into (see ParamDecl::bind). The
// functions are generated from a pointer to member; `owner` is the struct's type, checked by apply_params.
struct ParamBinding {
  const std::type_info* owner = nullptr;
  // Sets the member from value i of pv (integers checked as integers; errors located at pv.loc(i)).
  Status (*set)(void* obj, const ParamValues& pv, int i, const char* what) = nullptr;
  // Writes the member into value i of pv (value, text or list); false for an empty std::optional (not given).
  bool (*get)(const void* obj, ParamValues& pv, int i) = nullptr;
  // The address of the member in obj (tests: no member bound twice).
  const void* (*member)(const void* obj) = nullptr;
  // A fresh value-initialized struct (its default member initializers), for checking a table against its struct
  // without knowing the type (tests/test_param.cpp walks every table of the catalog so).
  std::shared_ptr<void> (*make)() = nullptr;
  explicit operator bool() const { return set != nullptr; }
};

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
  // Text parameters read into an enum: the accepted words, '|'-separated, in the order of the enum's values
  // 0, 1, ... ("analog|hybrid"); matched ignoring case. nullptr: any text.
  const char* choices = nullptr;
  // A parameter left unset takes the value of the parameter named here (rwire_row <- rwire); assigning that
  // parameter by name (set_param) resets this one to follow it again.
  const char* fallback = nullptr;
  ParamBinding bind;        // the struct member the value goes to (apply_params / read_params); may be empty
  // Accepted for compatibility but without effect on any result (noise-only model parameters, listing options):
  // assigning it warns with this reason ("affects only noise analysis"). nullptr: the parameter has an effect.
  const char* no_effect = nullptr;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

using ParamTable = std::vector<ParamSpec>;

// Word k of spec.choices ("" past the end); the index of `word` in them (ignoring case), -1 if absent.
std::string choice_word(const ParamSpec& spec, int k);
int choice_index(const ParamSpec& spec, const std::string& word);

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

// Evaluated parameters for one instance or model, indexed like the table. Values, given flags and the source
// locations of the given values share one heap block (a netlist of 10^5 devices would otherwise make three
// allocations per device); a location is kept only for a value given (a resistor gives 1 of its 14: 366 -> 172
// bytes per resistor).
struct ParamValues {
  const ParamTable* table = nullptr;
  ParamArray<double> value;                // size table->size(); default if not given
  ParamArray<char> given;                  // 1 if set explicitly
  // Where value i came from (SourceLoc() if it was not given a location); set_loc records it.
  SourceLoc loc(size_t i) const { return slot_[i] ? locs_[slot_[i] - 1] : SourceLoc(); }
  void set_loc(size_t i, const SourceLoc& l);
  // Values of the List, Text and Expr kinds, sized like the table only if it has parameters of that kind
  // (most devices have none: their ParamValues then carry one null pointer instead of three vectors).
  // list: numbers of List parameters; text: raw text of Text and Expr parameters (quotes stripped, "" if not
  // given); expr: Expr parameters compiled by elaboration. The non-const accessors make the (then empty) vectors
  // where there are none, an allocation per call on a device without such parameters: read through a const
  // reference (std::as_const) where the values are only looked at.
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
  friend ParamValues default_params(const ParamTable& table, size_t room);
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
  // value and given of size n and room for `cap` locations in one heap block (cap SourceLoc at locs_, then n
  // double, then n char given, then n slot_): slot_ zero (no locations), the rest uninitialised.
  void allocate(size_t n, size_t cap);
  // o's values, given flags and locations into a fresh block with room for `cap` locations (cap >= o.nlocs_).
  void copy_block(const ParamValues& o, size_t cap);
  void release();
  std::unique_ptr<Extra> extra_;
  SourceLoc* locs_ = nullptr;      // the block; locations of given values, in the order they were set
  unsigned char* slot_ = nullptr;  // per value: 0, or 1 + its index in locs_
  unsigned char nlocs_ = 0, cap_ = 0;
};

// Fresh value set holding the defaults of a table, with room for the locations of `room` given values (more are
// made room for as they come: set_loc).
ParamValues default_params(const ParamTable& table, size_t room = 2);

// Evaluates assignments against the table: unknown names, bad expressions, list/scalar mismatch and
// range violations are errors located at the assignment. `what` names the owner in messages ("resistor r1").
Status assign_params(ParamValues& pv, const std::vector<ParamAssign>& assigns, const Scope& scope,
                     const std::string& what);
// Same, with the owner named as "<kind> '<name>'" (built only if a message is produced).
Status assign_params(ParamValues& pv, const std::vector<ParamAssign>& assigns, const Scope& scope,
                     const std::string& kind, const std::string& name);

// One table line with named fields, e.g.
//   ParamDecl("gmax").unit("S").def(100e-6).above(0).doc("highest programmable conductance")
//       .bind<&HardwareConfig::gmax>()
// Defaults: unit "", def 0, range [-inf, inf], Real.
class ParamDecl {
 public:
  explicit ParamDecl(const char* name)
      : s_{name, "", 0.0, -kInf, kInf, "", ParamKind::Real, false, nullptr, nullptr, nullptr, {}, nullptr} {}
  ParamDecl& unit(const char* u) { s_.unit = u; return *this; }
  ParamDecl& def(double v) { s_.def = v; return *this; }
  ParamDecl& range(double lo, double hi) { s_.min = lo; s_.max = hi; s_.min_exclusive = false; return *this; }
  ParamDecl& above(double lo, double hi = kInf) { s_.min = lo; s_.max = hi; s_.min_exclusive = true; return *this; }
  ParamDecl& doc(const char* d) { s_.description = d; return *this; }
  ParamDecl& kind(ParamKind k) { s_.kind = k; return *this; }
  ParamDecl& alias(const char* a) { s_.alias = a; return *this; }
  ParamDecl& choices(const char* c) { s_.kind = ParamKind::Text; s_.choices = c; return *this; }
  ParamDecl& fallback(const char* other) { s_.fallback = other; return *this; }
  ParamDecl& no_effect(const char* why) { s_.no_effect = why; return *this; }
  // The member the value goes to: double, float, int, long, std::uint64_t (integers checked), bool, std::string
  // (Text), std::vector<double> (List), an enum (Text with choices()), std::optional<double> (empty when the
  // parameter is not given: an initial condition, an override) or std::shared_ptr<CompiledExpr> (Expr; null when
  // not given).
  template <auto Member>
  ParamDecl& bind();
  operator ParamSpec() const { return s_; }  // NOLINT: a table line converts implicitly

 private:
  ParamSpec s_;
};

// Sets every member of obj bound in pv.table: given values, else the fallback parameter's value if that one is
// given, else the default. Lines bound to another struct are skipped (a device table may bind its converter
// lines to a spec and its input lines to another struct). `what` names the owner in messages. Values without a
// table (FlatDevice::model of an instance without a model) set nothing: obj keeps its default member
// initializers, which are the table's defaults (tests/test_param.cpp checks every table against its struct).
template <class T>
Status apply_params(const ParamValues& pv, T& obj, const char* what);
// Values of a table read back from obj's bound members, every bound one marked given (so that a struct can be
// modified by name and applied again); unbound parameters keep their defaults, unmarked.
template <class T>
ParamValues read_params(const ParamTable& table, const T& obj);

// Sets one parameter of obj by name from text (an expression in `scope`): read back, assign, apply. Parameters
// whose fallback is `name` follow it again. Errors name `what`.
template <class T>
Status set_param(const ParamTable& table, T& obj, const std::string& name, const ValueExpr& value,
                 const Scope& scope, const char* what);

// Sets only the members whose lines are given in pv (instance values over a model's, e.g. the op-amp's).
template <class T>
Status apply_given_params(const ParamValues& pv, T& obj, const char* what);

// The same on a struct known only by its type (a binding's owner; obj from its make()).
Status apply_params(const ParamValues& pv, void* obj, const std::type_info& type, const char* what,
                    bool given_only = false);
ParamValues read_params(const ParamTable& table, const void* obj, const std::type_info& type);

namespace detail {

Status set_param(const ParamTable& table, void* obj, const std::type_info& type, const std::string& name,
                 const ValueExpr& value, const Scope& scope, const char* what);
Status integer_error(const ParamValues& pv, int i, const char* what);
Status choice_error(const ParamValues& pv, int i, const char* what);

template <class M>
struct MemberTraits;
template <class C, class V>
struct MemberTraits<V C::*> {
  using Class = C;
  using Value = V;
};

template <class V>
struct IsOptional : std::false_type {};
template <class U>
struct IsOptional<std::optional<U>> : std::true_type {};

template <auto Member>
struct Binder {
  using T = typename MemberTraits<decltype(Member)>::Class;
  using V = typename MemberTraits<decltype(Member)>::Value;

  static Status set(void* obj, const ParamValues& pv, int i, const char* what) {
    V& m = static_cast<T*>(obj)->*Member;
    if constexpr (IsOptional<V>::value) {
      static_assert(std::is_floating_point_v<typename V::value_type>, "bind: std::optional of a real only");
      if (pv.given[i]) m = pv.value[i];
      else m.reset();
    } else if constexpr (std::is_same_v<V, std::shared_ptr<CompiledExpr>>) {
      m = pv.expr()[i];
    } else if constexpr (std::is_same_v<V, std::string>) {
      m = pv.text()[i];
    } else if constexpr (std::is_same_v<V, std::vector<double>>) {
      m = pv.list()[i];
    } else if constexpr (std::is_enum_v<V>) {
      const int k = choice_index((*pv.table)[i], pv.text()[i]);
      if (k < 0) return choice_error(pv, i, what);
      m = static_cast<V>(k);
    } else if constexpr (std::is_same_v<V, bool>) {
      m = pv.value[i] != 0;
    } else if constexpr (std::is_integral_v<V>) {
      const double v = pv.value[i];
      if (v != std::floor(v)) return integer_error(pv, i, what);
      m = static_cast<V>(v);
    } else {
      static_assert(std::is_floating_point_v<V>, "bind: unsupported member type");
      m = static_cast<V>(pv.value[i]);
    }
    return {};
  }
  static bool get(const void* obj, ParamValues& pv, int i) {
    const V& m = static_cast<const T*>(obj)->*Member;
    if constexpr (IsOptional<V>::value) {
      if (!m) return false;
      pv.value[i] = *m;
    } else if constexpr (std::is_same_v<V, std::shared_ptr<CompiledExpr>>) {
      if (!m) return false;
      pv.expr()[i] = m;
    } else if constexpr (std::is_same_v<V, std::string>) {
      pv.text()[i] = m;
    } else if constexpr (std::is_same_v<V, std::vector<double>>) {
      pv.list()[i] = m;
    } else if constexpr (std::is_enum_v<V>) {
      pv.text()[i] = choice_word((*pv.table)[i], static_cast<int>(m));
    } else {
      pv.value[i] = static_cast<double>(m);
    }
    return true;
  }
  static const void* member(const void* obj) { return &(static_cast<const T*>(obj)->*Member); }
  static std::shared_ptr<void> make() { return std::make_shared<T>(); }
};

}  // namespace detail

template <auto Member>
ParamDecl& ParamDecl::bind() {
  using B = detail::Binder<Member>;
  s_.bind.owner = &typeid(typename B::T);
  s_.bind.set = &B::set;
  s_.bind.get = &B::get;
  s_.bind.member = &B::member;
  s_.bind.make = &B::make;
  return *this;
}

template <class T>
Status apply_params(const ParamValues& pv, T& obj, const char* what) {
  return apply_params(pv, static_cast<void*>(&obj), typeid(T), what);
}

template <class T>
Status apply_given_params(const ParamValues& pv, T& obj, const char* what) {
  return apply_params(pv, static_cast<void*>(&obj), typeid(T), what, true);
}

template <class T>
ParamValues read_params(const ParamTable& table, const T& obj) {
  return read_params(table, static_cast<const void*>(&obj), typeid(T));
}

template <class T>
Status set_param(const ParamTable& table, T& obj, const std::string& name, const ValueExpr& value,
                 const Scope& scope, const char* what) {
  return detail::set_param(table, &obj, typeid(T), name, value, scope, what);
}

}  // namespace anasim
