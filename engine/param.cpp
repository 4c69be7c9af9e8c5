// Parameter tables: defaults, name look-up and evaluation of parsed assignments with range checks.
#include "engine/param.hpp"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <fmt/format.h>

namespace anasim {

namespace {
// name == spec (a lower-case table name), ignoring the case of name; no allocation (once per parameter of
// every device).
bool same_name(const std::string& name, const char* spec) {
  size_t i = 0;
  for (; i < name.size(); ++i) {
    const char c = name[i] >= 'A' && name[i] <= 'Z' ? static_cast<char>(name[i] - 'A' + 'a') : name[i];
    if (spec[i] == '\0' || c != spec[i]) return false;
  }
  return spec[i] == '\0';
}
}  // namespace

int ParamValues::index_of(const std::string& name) const {
  if (!table) return -1;
  for (size_t i = 0; i < table->size(); ++i) {
    const ParamSpec& s = (*table)[i];
    if (same_name(name, s.name) || (s.alias && same_name(name, s.alias))) return static_cast<int>(i);
  }
  return -1;
}

const ParamValues::Extra ParamValues::kNoExtra;

void ParamValues::allocate(size_t n, size_t cap) {
  release();
  if (n == 0) return;
  if (n > 254) throw std::length_error("a parameter table of more than 254 entries");  // (slot_: one byte)
  cap = std::min<size_t>(cap, n);
  static_assert(alignof(SourceLoc) >= alignof(double), "layout: SourceLoc, then double, then char");
  static_assert(std::is_trivially_destructible_v<SourceLoc>, "release() does not destroy the SourceLocs");
  void* block = ::operator new(cap * sizeof(SourceLoc) + n * (sizeof(double) + 2 * sizeof(char)));
  locs_ = static_cast<SourceLoc*>(block);
  value.p_ = reinterpret_cast<double*>(locs_ + cap);
  given.p_ = reinterpret_cast<char*>(value.p_ + n);
  slot_ = reinterpret_cast<unsigned char*>(given.p_ + n);
  std::fill(slot_, slot_ + n, 0);
  value.n_ = given.n_ = n;
  nlocs_ = 0;
  cap_ = static_cast<unsigned char>(cap);
}

void ParamValues::release() {
  if (!value.p_) return;
  ::operator delete(static_cast<void*>(locs_));
  locs_ = nullptr;
  slot_ = nullptr;
  nlocs_ = cap_ = 0;
  value = {};
  given = {};
}

void ParamValues::set_loc(size_t i, const SourceLoc& where) {
  const SourceLoc l = where;  // (a copy: `where` may lie in the block replaced below)
  if (slot_[i]) {
    locs_[slot_[i] - 1] = l;
    return;
  }
  if (nlocs_ == cap_) {  // a larger block (a parameter given beyond the room made for it)
    ParamValues grown;
    grown.copy_block(*this, std::min<size_t>(value.size(), 2 * cap_ + 2));
    grown.table = table;
    grown.extra_ = std::move(extra_);
    *this = std::move(grown);
  }
  locs_[nlocs_] = l;
  slot_[i] = ++nlocs_;
}

void ParamValues::copy_block(const ParamValues& o, size_t cap) {
  const size_t n = o.value.size();
  allocate(n, cap);
  std::copy(o.value.begin(), o.value.end(), value.begin());
  std::copy(o.given.begin(), o.given.end(), given.begin());
  if (n > 0) std::copy(o.slot_, o.slot_ + n, slot_);
  std::copy(o.locs_, o.locs_ + o.nlocs_, locs_);
  nlocs_ = o.nlocs_;
}

ParamValues::ParamValues(const ParamValues& o)
    : table(o.table), extra_(o.extra_ ? std::make_unique<Extra>(*o.extra_) : nullptr) {
  copy_block(o, o.nlocs_);
}

ParamValues::ParamValues(ParamValues&& o) noexcept
    : table(o.table), value(o.value), given(o.given), extra_(std::move(o.extra_)), locs_(o.locs_), slot_(o.slot_),
      nlocs_(o.nlocs_), cap_(o.cap_) {
  o.value = {};
  o.given = {};
  o.locs_ = nullptr;
  o.slot_ = nullptr;
  o.nlocs_ = o.cap_ = 0;
}

ParamValues& ParamValues::operator=(const ParamValues& o) {
  if (this != &o) *this = ParamValues(o);
  return *this;
}

ParamValues& ParamValues::operator=(ParamValues&& o) noexcept {
  if (this == &o) return *this;
  release();
  table = o.table;
  extra_ = std::move(o.extra_);
  value = o.value;
  given = o.given;
  locs_ = o.locs_;
  slot_ = o.slot_;
  nlocs_ = o.nlocs_;
  cap_ = o.cap_;
  o.value = {};
  o.given = {};
  o.locs_ = nullptr;
  o.slot_ = nullptr;
  o.nlocs_ = o.cap_ = 0;
  return *this;
}

ParamValues default_params(const ParamTable& table, size_t room) {
  ParamValues pv;
  pv.table = &table;
  size_t n = table.size();
  pv.allocate(n, room);
  for (size_t i = 0; i < n; ++i) pv.value[i] = table[i].def;
  std::fill(pv.given.begin(), pv.given.end(), 0);
  // list/text storage only for tables that have such parameters (most devices have none; a flat netlist of
  // 10^5 resistors would otherwise carry 2 x 10^5 empty vectors).
  bool lists = false, texts = false, exprs = false;
  for (const auto& spec : table) {
    lists = lists || spec.kind == ParamKind::List;
    texts = texts || spec.kind == ParamKind::Text || spec.kind == ParamKind::Expr;
    exprs = exprs || spec.kind == ParamKind::Expr;
  }
  if (lists) pv.list().assign(n, {});
  if (texts) {
    pv.text().assign(n, {});
    for (size_t i = 0; i < n; ++i)  // an enum's default word
      if (table[i].choices) pv.text()[i] = choice_word(table[i], static_cast<int>(table[i].def));
  }
  if (exprs) pv.expr().assign(n, {});
  return pv;
}

namespace {

std::string unit_suffix(const ParamSpec& s) {
  return (s.unit && *s.unit) ? fmt::format(" {}", s.unit) : std::string();
}

// "" if v is inside the spec's range, else the violated bound ("> 0 ohm", "<= 1").
std::string range_violation(const ParamSpec& s, double v) {
  if (s.min_exclusive ? !(v > s.min) : !(v >= s.min)) {
    if (std::isfinite(s.max))
      return fmt::format("{} {}{} and <= {}{}", s.min_exclusive ? ">" : ">=", s.min, unit_suffix(s), s.max,
                         unit_suffix(s));
    return fmt::format("{} {}{}", s.min_exclusive ? ">" : ">=", s.min, unit_suffix(s));
  }
  if (!(v <= s.max)) {
    if (std::isfinite(s.min))
      return fmt::format("{} {}{} and <= {}{}", s.min_exclusive ? ">" : ">=", s.min, unit_suffix(s), s.max,
                         unit_suffix(s));
    return fmt::format("<= {}{}", s.max, unit_suffix(s));
  }
  return {};
}

std::string known_names(const ParamTable& t) {
  std::string s;
  for (const ParamSpec& p : t) {
    if (!s.empty()) s += ", ";
    s += p.name;
  }
  return s.empty() ? "(none)" : s;
}

}  // namespace

namespace {
// `what` names the owner in messages; it is only called when a message is produced.
template <class WhatFn>
Status assign_params_impl(ParamValues& pv, const std::vector<ParamAssign>& assigns, const Scope& scope,
                          const WhatFn& what) {
  Status st;
  if (!pv.table) return Status::fail(ErrorKind::Other, "assign_params: parameter values have no table");
  const ParamTable& table = *pv.table;
  for (const ParamAssign& a : assigns) {
    int i = pv.index_of(a.name);
    if (i < 0) {
      st.merge(Status::input(
          fmt::format("unknown parameter '{}' for {}; expected one of: {}", a.name, what(), known_names(table)), a.loc));
      continue;
    }
    const ParamSpec& spec = table[i];
    if (pv.given[i])
      st.warnings.push_back(fmt::format("{}parameter {} of {} given more than once; the last value is used",
                                        a.loc.valid() ? fmt::format("{}:{}: ", a.loc.file(), a.loc.line) : "",
                                        spec.name, what()));
    if (spec.no_effect)
      st.warnings.push_back(fmt::format("{}parameter {} of {} has no effect in anasim ({})",
                                        a.loc.valid() ? fmt::format("{}:{}: ", a.loc.file(), a.loc.line) : "",
                                        spec.name, what(), spec.no_effect));
    if (spec.kind == ParamKind::List) {
      std::vector<double> vals;
      bool ok = true;
      for (const ValueExpr& e : a.values) {
        double v = 0;
        Status es = evaluate_expr(e.text, e.loc, scope, v);
        if (!es) {
          for (Diag& d : es.errors) d.message += fmt::format(" (in parameter {} of {})", spec.name, what());
          st.merge(es);
          ok = false;
          break;
        }
        vals.push_back(v);
      }
      if (!ok) continue;
      pv.list()[i] = std::move(vals);
      pv.given[i] = 1;
      pv.set_loc(i, a.loc);
      continue;
    }
    if (spec.kind == ParamKind::Text || spec.kind == ParamKind::Expr) {
      if (a.values.size() != 1) {
        st.merge(Status::input(fmt::format("parameter {} of {} takes one text value, got {}", spec.name, what(),
                                           a.values.size()), a.loc));
        continue;
      }
      std::string t = a.values[0].text;
      if (spec.kind == ParamKind::Text && t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front()) t = t.substr(1, t.size() - 2);
      pv.text()[i] = std::move(t);
      pv.given[i] = 1;
      pv.set_loc(i, a.values[0].loc);
      continue;
    }
    if (a.values.size() != 1) {
      SourceLoc l = a.values.size() > 1 ? a.values[1].loc : a.loc;
      st.merge(Status::input(fmt::format("parameter {} of {} takes a single value, got {}", spec.name, what(),
                                         a.values.size()),
                             l));
      continue;
    }
    const ValueExpr& e = a.values[0];
    double v = 0;
    Status es = evaluate_expr(e.text, e.loc, scope, v);
    if (!es) {
      for (Diag& d : es.errors) d.message += fmt::format(" (in parameter {} of {})", spec.name, what());
      st.merge(es);
      continue;
    }
    std::string bad = range_violation(spec, v);
    if (!bad.empty()) {
      st.merge(Status::input(fmt::format("parameter {} of {} must be {}, got {}", spec.name, what(), bad, v), e.loc));
      continue;
    }
    pv.value[i] = v;
    pv.given[i] = 1;
    pv.set_loc(i, a.loc);
  }
  return st;
}
}  // namespace

Status assign_params(ParamValues& pv, const std::vector<ParamAssign>& assigns, const Scope& scope,
                     const std::string& what) {
  return assign_params_impl(pv, assigns, scope, [&] { return what; });
}

Status assign_params(ParamValues& pv, const std::vector<ParamAssign>& assigns, const Scope& scope,
                     const std::string& kind, const std::string& name) {
  return assign_params_impl(pv, assigns, scope, [&] { return kind + " '" + name + "'"; });
}

}  // namespace anasim

namespace anasim {

namespace {
// Index of the parameter named `name` in table (exact table name), -1 if none.
int find_param(const ParamTable& table, const char* name) {
  for (size_t i = 0; i < table.size(); ++i)
    if (std::strcmp(table[i].name, name) == 0) return static_cast<int>(i);
  return -1;
}
}  // namespace

std::string choice_word(const ParamSpec& spec, int k) {
  if (!spec.choices || k < 0) return {};
  const char* p = spec.choices;
  for (int j = 0; j < k; ++j) {
    p = std::strchr(p, '|');
    if (!p) return {};
    ++p;
  }
  const char* e = std::strchr(p, '|');
  return e ? std::string(p, e) : std::string(p);
}

int choice_index(const ParamSpec& spec, const std::string& word) {
  const std::string w = to_lower(word);
  for (int k = 0;; ++k) {
    const std::string c = choice_word(spec, k);
    if (c.empty()) return -1;
    if (c == w) return k;
  }
}

Status apply_params(const ParamValues& pv, void* obj, const std::type_info& type, const char* what,
                    bool given_only) {
  if (!pv.table) return {};  // no values (an optional model not given): obj keeps its defaults
  const ParamTable& table = *pv.table;
  ParamValues fb;  // the values with fallbacks resolved, only if a table uses fallbacks
  const ParamValues* src = &pv;
  for (size_t i = 0; i < table.size(); ++i) {
    if (!table[i].fallback || pv.given[i]) continue;
    const int f = find_param(table, table[i].fallback);
    if (f < 0 || !pv.given[f]) continue;
    if (src == &pv) {
      fb = pv;
      src = &fb;
    }
    fb.value[i] = pv.value[f];
    fb.set_loc(i, pv.loc(f));
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const ParamBinding& b = table[i].bind;
    if (!b || *b.owner != type) continue;  // a line of another struct of the same table
    if (given_only && !src->given[i]) continue;
    if (Status st = b.set(obj, *src, static_cast<int>(i), what); !st) return st;
  }
  return {};
}

ParamValues read_params(const ParamTable& table, const void* obj, const std::type_info& type) {
  ParamValues pv = default_params(table);
  for (size_t i = 0; i < table.size(); ++i) {
    const ParamBinding& b = table[i].bind;
    if (!b || *b.owner != type) continue;
    pv.given[i] = b.get(obj, pv, static_cast<int>(i)) ? 1 : 0;
  }
  return pv;
}

namespace detail {

Status integer_error(const ParamValues& pv, int i, const char* what) {
  return Status::input(fmt::format("{}: {} must be an integer, got {}", what, (*pv.table)[i].name, pv.value[i]),
                       pv.loc(i));
}

Status choice_error(const ParamValues& pv, int i, const char* what) {
  const ParamSpec& s = (*pv.table)[i];
  std::string words;
  for (int k = 0; !choice_word(s, k).empty(); ++k) {
    const bool last = choice_word(s, k + 1).empty();
    words += fmt::format("{}{}", k == 0 ? "" : last ? " or " : ", ", choice_word(s, k));
  }
  return Status::input(fmt::format("{}: {} must be {}, got '{}'", what, s.name, words, pv.text()[i]), pv.loc(i));
}


Status set_param(const ParamTable& table, void* obj, const std::type_info& type, const std::string& name,
                 const ValueExpr& value, const Scope& scope, const char* what) {
  ParamValues pv = read_params(table, obj, type);
  const int i = pv.index_of(name);
  if (i >= 0)
    for (size_t j = 0; j < table.size(); ++j)
      if (table[j].fallback && std::strcmp(table[j].fallback, table[i].name) == 0) pv.given[j] = 0;
  ParamAssign pa;
  pa.name = to_lower(name);
  pa.loc = value.loc;
  pa.values.push_back(value);
  if (Status st = assign_params(pv, {pa}, scope, what); !st) return st;
  return anasim::apply_params(pv, obj, type, what);
}

}  // namespace detail
}  // namespace anasim
