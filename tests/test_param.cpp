// Tests for engine/param.cpp: the declared parameter tables against the structs they are bound to (every line
// bound to its own member, defaults equal on both sides, names unique, set and read back), the generic
// apply/read-back with its integer, choice and fallback rules.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <memory>
#include <cstring>
#include <set>
#include <string>
#include <vector>
#include "engine/param.hpp"
#include "devices/registry.hpp"
#include "nn/hardware.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
using test_support::contains;

namespace {

// A value of spec's kind inside its range, different from its default (integers where possible).
double other_value(const ParamSpec& s) {
  auto ok = [&](double v) {
    return v != s.def && (s.min_exclusive ? v > s.min : v >= s.min) && v <= s.max;
  };
  if (s.kind == ParamKind::Flag) return s.def != 0 ? 0 : 1;
  for (double v : {s.def + 1, s.def - 1, s.def * 2, s.def / 2, std::floor((s.min + s.max) / 2), (s.min + s.max) / 2})
    if (std::isfinite(v) && ok(v)) return v;
  return s.def;
}

std::shared_ptr<CompiledExpr> compiled(const char* text) {
  auto e = std::make_shared<CompiledExpr>();
  REQUIRE(compile_expr(text, SourceLoc(), Scope(), ExprNameMap(), *e).ok());
  return e;
}

// Equal values of a line (NaN defaults of required parameters are equal).
bool same_value(const ParamValues& a, const ParamValues& b, size_t i) {
  switch ((*a.table)[i].kind) {
    case ParamKind::Text: return a.text()[i] == b.text()[i];
    case ParamKind::Expr: return a.expr()[i] == b.expr()[i];
    case ParamKind::List: return a.list()[i] == b.list()[i];
    default: return a.value[i] == b.value[i] || (std::isnan(a.value[i]) && std::isnan(b.value[i]));
  }
}

// A table against the structs its lines are bound to (each struct known through its bindings, defaults from its
// default member initializers): what is wrong, one line each (empty: the table and the structs agree).
std::vector<std::string> table_problems(const ParamTable& table) {
  std::vector<std::string> bad;
  auto fail = [&](const ParamSpec& s, const std::string& why) { bad.push_back(std::string(s.name) + ": " + why); };
  // Names (and aliases) unique.
  std::set<std::string> names;
  for (const ParamSpec& s : table) {
    if (!names.insert(s.name).second) fail(s, "name used twice");
    if (s.alias && !names.insert(s.alias).second) fail(s, "alias used twice");
  }
  // Every line is bound to a member, or is the fallback of a bound line (rwire for rwire_row/rwire_col), or is
  // accepted without effect (no_effect: it warns).
  std::vector<const std::type_info*> owners;
  for (const ParamSpec& s : table) {
    if (!s.bind && s.no_effect) continue;
    if (!s.bind) {
      bool feeds = false;
      for (const ParamSpec& o : table) feeds = feeds || (o.fallback && std::strcmp(o.fallback, s.name) == 0);
      if (!feeds) fail(s, "binds no struct member");
    } else if (std::none_of(owners.begin(), owners.end(), [&](const std::type_info* t) { return *t == *s.bind.owner; })) {
      owners.push_back(s.bind.owner);
    }
  }
  for (const std::type_info* owner : owners) {
    auto mine = [&](const ParamSpec& s) { return s.bind && *s.bind.owner == *owner; };
    std::shared_ptr<void> defaults;
    for (const ParamSpec& s : table)
      if (mine(s) && !defaults) defaults = s.bind.make();
    // No member bound twice.
    std::set<const void*> members;
    for (const ParamSpec& s : table)
      if (mine(s) && !members.insert(s.bind.member(defaults.get())).second) fail(s, "its member is bound twice");
    // The table defaults are the struct's.
    const ParamValues def = default_params(table);
    const ParamValues read = read_params(table, static_cast<const void*>(defaults.get()), *owner);
    for (size_t i = 0; i < table.size(); ++i) {
      const ParamSpec& s = table[i];
      if (!mine(s)) continue;
      const bool same = s.kind == ParamKind::Real || s.kind == ParamKind::Flag
                            ? read.value[i] == s.def || (std::isnan(read.value[i]) && std::isnan(s.def))
                            : same_value(read, def, i);
      if (!same) fail(s, "the table's default differs from the struct's");
    }
    // Set each member alone through the table and read it back: it changes, nothing else does.
    for (size_t i = 0; i < table.size(); ++i) {
      const ParamSpec& s = table[i];
      if (!mine(s)) continue;
      ParamValues pv = read;
      if (s.kind == ParamKind::Text) pv.text()[i] = s.choices ? choice_word(s, s.def == 0 ? 1 : 0) : "x";
      else if (s.kind == ParamKind::List) pv.list()[i] = {1, 2};
      else if (s.kind == ParamKind::Expr) pv.expr()[i] = compiled("1 + v(a)");
      else pv.value[i] = other_value(s);
      pv.given[i] = 1;
      std::shared_ptr<void> obj = s.bind.make();
      if (Status st = apply_params(pv, obj.get(), *owner, "test"); !st) {
        fail(s, "apply: " + st.to_string());
        continue;
      }
      const ParamValues back = read_params(table, static_cast<const void*>(obj.get()), *owner);
      for (size_t j = 0; j < table.size(); ++j) {
        if (!mine(table[j])) continue;
        if (!same_value(back, j == i ? pv : read, j))
          fail(s, j == i ? "not read back as set" : std::string("setting it changes ") + table[j].name);
      }
    }
  }
  return bad;
}

struct Demo {
  enum class Color { Red, Green };
  double r = 1e3;
  int n = 4;
  std::uint64_t seed = 7;
  bool on = false;
  std::string file;
  Color color = Color::Red;
  std::vector<double> pts;
  double lo = 2, hi = 2;
};

const ParamTable& demo_params() {
  using P = ParamDecl;
  static const ParamTable t = {
      P("r").unit("ohm").def(1e3).above(0).doc("resistance").bind<&Demo::r>(),
      P("n").def(4).range(1, 100).doc("count").bind<&Demo::n>(),
      P("seed").def(7).range(0, 1e15).doc("seed").bind<&Demo::seed>(),
      P("on").kind(ParamKind::Flag).def(0).range(0, 1).doc("switch").bind<&Demo::on>(),
      P("file").kind(ParamKind::Text).doc("a file").bind<&Demo::file>(),
      P("color").choices("red|green").doc("a color").bind<&Demo::color>(),
      P("pts").kind(ParamKind::List).doc("points").bind<&Demo::pts>(),
      P("both").def(2).doc("lo and hi"),
      P("lo").def(2).fallback("both").doc("low (overrides both)").bind<&Demo::lo>(),
      P("hi").def(2).fallback("both").doc("high (overrides both)").bind<&Demo::hi>(),
  };
  return t;
}

ValueExpr text(const char* t) {
  ValueExpr e;
  e.text = t;
  e.loc = SourceLoc(SourceFile::add("demo.yaml", std::string("x: ") + t + "\n"), 1, 4);
  return e;
}

}  // namespace

TEST_CASE("param tables: every table matches the structs it is bound to") {
  auto problems = [](const ParamTable& t) {
    std::string all;
    for (const std::string& p : table_problems(t)) all += p + "; ";
    return all;
  };
  CHECK(problems(demo_params()) == "");
  CHECK(problems(nn::hardware_params()) == "");
  for (const DeviceType* t : builtin_catalog().all()) {
    CAPTURE(t->key);
    CHECK(problems(t->params) == "");
    CHECK(problems(t->model_params) == "");
  }
}

TEST_CASE("param tables: the check fails on a line without a member, a one-sided default, a member bound twice") {
  ParamTable t = demo_params();
  t.push_back(ParamDecl("orphan").def(1).doc("no member"));
  CHECK(table_problems(t) == std::vector<std::string>{"orphan: binds no struct member"});
  t = demo_params();
  t[0].def = 2e3;  // the table says 2k, the struct 1k
  CHECK(table_problems(t) == std::vector<std::string>{"r: the table's default differs from the struct's"});
  t = demo_params();
  t.push_back(ParamDecl("r2").def(1e3).above(0).doc("r again").bind<&Demo::r>());
  const std::vector<std::string> twice = table_problems(t);
  REQUIRE(!twice.empty());
  CHECK(twice[0] == "r2: its member is bound twice");
}

TEST_CASE("param tables: generic apply, read back and set by name") {
  const ParamTable& t = demo_params();
  Demo d;
  const Scope scope;
  SUBCASE("integers are checked, with the location of the value") {
    const Status st = set_param(t, d, "n", text("2.5"), scope, "demo");
    REQUIRE(!st.ok());
    CHECK(contains(st.to_string(), "demo: n must be an integer, got 2.5"));
    CHECK(contains(st.to_string(), "demo.yaml:1:4"));
    CHECK(d.n == 4);
    REQUIRE(set_param(t, d, "n", text("12"), scope, "demo").ok());
    CHECK(d.n == 12);
    REQUIRE(set_param(t, d, "seed", text("123456789012"), scope, "demo").ok());
    CHECK(d.seed == 123456789012ull);
  }
  SUBCASE("enums by word, ignoring case; other words are errors") {
    REQUIRE(set_param(t, d, "color", text("Green"), scope, "demo").ok());
    CHECK(d.color == Demo::Color::Green);
    const Status st = set_param(t, d, "color", text("blue"), scope, "demo");
    CHECK(contains(st.to_string(), "color must be red or green, got 'blue'"));
  }
  SUBCASE("fallbacks: an unset member follows its fallback; assigning the fallback resets it") {
    REQUIRE(set_param(t, d, "lo", text("5"), scope, "demo").ok());
    CHECK(d.lo == 5);
    CHECK(d.hi == 2);
    REQUIRE(set_param(t, d, "both", text("3"), scope, "demo").ok());
    CHECK(d.lo == 3);
    CHECK(d.hi == 3);
  }
  SUBCASE("range errors come from the table") {
    const Status st = set_param(t, d, "r", text("0"), scope, "demo");
    CHECK(contains(st.to_string(), "must be > 0 ohm"));
  }
}

// A ParamValues keeps the location of each given value only (ParamValues::set_loc): room made for them up front,
// more as they come; copies and moves carry them; a value not given has none.
TEST_CASE("param values: locations of the given values, beyond the room made for them, through copies and moves") {
  const ParamTable& t = builtin_catalog().find("r")->params;
  REQUIRE(t.size() >= 6);
  ParamValues pv = default_params(t, 1);
  for (size_t i = 0; i < 6; ++i) {
    pv.given[i] = 1;
    pv.set_loc(i, SourceLoc(nullptr, static_cast<int>(i) + 1, 3));
  }
  pv.set_loc(2, SourceLoc(nullptr, 40, 5));  // a value given again: its location replaced
  auto check = [&](const ParamValues& p) {
    for (size_t i = 0; i < t.size(); ++i) {
      CAPTURE(i);
      const int want = i == 2 ? 40 : i < 6 ? static_cast<int>(i) + 1 : 0;
      CHECK(p.loc(i).line == want);
      CHECK(same_value(p, pv, i));
      CHECK(p.given[i] == (i < 6 ? 1 : 0));
    }
  };
  check(pv);
  ParamValues copy(pv);
  check(copy);
  ParamValues moved(std::move(copy));
  check(moved);
  ParamValues assigned = default_params(t);
  assigned = moved;
  check(assigned);
  copy = std::move(assigned);
  check(copy);
  copy.set_loc(7, SourceLoc(nullptr, 8, 1));  // past the copy's room (it was made for the 6 it holds)
  CHECK(copy.loc(7).line == 8);
  CHECK(copy.loc(2).line == 40);
}
