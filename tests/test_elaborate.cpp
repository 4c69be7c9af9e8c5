// Tests for engine/elaborate.cpp and Circuit::build on large netlists: a flat netlist gives the same devices and
// the same first error as the same netlist with a subcircuit instance appended, and on two threads the same as on
// one (long runs of devices, Elaborator::flatten_run); topology errors as in small ones.
#include <doctest/doctest.h>
#include <cmath>
#include <cstdint>
#include <string>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "devices/resistor.hpp"
#include "engine/circuit.hpp"
#include "engine/elaborate.hpp"
#include "engine/expr.hpp"
#include "engine/name_index.hpp"
#include "engine/parse.hpp"
#include "tests/test_support.hpp"

using namespace anasim;

namespace {

// A resistor ladder of `n` sections with diodes and a source, plus `extra` lines before the analysis.
std::string ladder(int n, const std::string& extra = "") {
  std::string s = "ladder\n.param rv=2k\n.model dm d is=1e-14\nv1 n0 0 dc 1\n";
  for (int i = 0; i < n; ++i) {
    s += "r" + std::to_string(i) + " n" + std::to_string(i) + " n" + std::to_string(i + 1) + " {rv}\n";
    s += "d" + std::to_string(i) + " n" + std::to_string(i + 1) + " 0 dm\n";
  }
  return s + extra + ".op\n.end\n";
}

// Elaborates text with `threads` OpenMP threads allowed (2: long runs of devices on two threads); returns the
// status (first error, if any).
Status elab(const std::string& text, FlatNetlist& fn, int threads = 2) {
  ParsedNetlist pn;
  Status st = parse_spice_string(text, "ladder.cir", builtin_catalog(), pn);
  if (!st) return st;
  test_support::OmpThreads limit(threads);
  return elaborate(pn, builtin_catalog(), fn);
}

// The devices of a and b are the same: names, types, nodes, parameter and model values.
bool same_devices(const FlatNetlist& two, const FlatNetlist& one) {
  REQUIRE(two.node_names == one.node_names);
  for (size_t k = 0; k < two.devices.size() && k < one.devices.size(); ++k) {
    const FlatDevice &a = two.devices[k], &b = one.devices[k];
    bool same = a.name == b.name && a.type == b.type && a.nodes.size() == b.nodes.size() &&
                a.model_name == b.model_name && a.loc.line == b.loc.line;
    for (size_t i = 0; same && i < a.nodes.size(); ++i) same = a.nodes[i] == b.nodes[i];
    for (size_t i = 0; same && i < a.params.value.size(); ++i)
      same = a.params.value[i] == b.params.value[i] && a.params.given[i] == b.params.given[i];
    for (size_t i = 0; same && i < a.model.value.size(); ++i)  // NaN: a default taken from elsewhere (tnom)
      same = a.model.value[i] == b.model.value[i] || (std::isnan(a.model.value[i]) && std::isnan(b.model.value[i]));
    if (!same) {
      FAIL_CHECK("device " << k << " (" << a.name << ") differs");
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("elaborate: a large flat netlist matches the same netlist with a subcircuit instance") {
  const std::string sub = ".subckt one a\nr1 a 0 1k\n.ends\nxlast n0 one\n";
  FlatNetlist two, one;
  REQUIRE(elab(ladder(15000), two).ok());
  REQUIRE(elab(ladder(15000, sub), one).ok());
  REQUIRE(two.devices.size() + 1 == one.devices.size());
  CHECK(same_devices(two, one));
  FlatNetlist seq;  // one thread: device by device
  REQUIRE(elab(ladder(15000), seq, 1).ok());
  REQUIRE(seq.devices.size() == two.devices.size());
  CHECK(same_devices(two, seq));

  // The first error in device order wins, whichever half or pass finds it.
  auto first_error = [&](const std::string& extra_early, const std::string& extra_late) {
    std::string text = ladder(15000, extra_late);
    text.insert(text.find("r100 "), extra_early);
    FlatNetlist fa, fb, fc;
    Status a = elab(text, fa);
    Status b = elab(text.substr(0, text.find(".op")) + sub + ".op\n.end\n", fb);
    Status c = elab(text, fc, 1);
    REQUIRE_FALSE(a.ok());
    REQUIRE_FALSE(b.ok());
    REQUIRE_FALSE(c.ok());
    CHECK(a.errors[0].message == b.errors[0].message);
    CHECK(a.errors[0].loc.line == b.errors[0].loc.line);
    CHECK(a.errors[0].message == c.errors[0].message);
    CHECK(a.errors[0].loc.line == c.errors[0].loc.line);
    return a.errors[0].message;
  };
  CHECK(first_error("rbad1 a b -1\n", "rbad2 a b -2\n").find("rbad1") != std::string::npos);  // first half
  CHECK(first_error("", "rbad2 a b -2\n").find("rbad2") != std::string::npos);                // second half
  CHECK(first_error("dbad a b nomodel\n", "").find("undefined model 'nomodel'") == 0);
  CHECK(first_error("", "e1 a b c d\n").find("needs a value") != std::string::npos);

  // A duplicate name (the readers reject them; a ParsedNetlist built otherwise may have one), alone and after
  // an invalid device.
  auto duplicate = [&](bool bad_before) {
    auto with_dup = [&](const std::string& extra) {
      ParsedNetlist pn;
      REQUIRE(parse_spice_string(ladder(15000, extra), "ladder.cir", builtin_catalog(), pn).ok());
      pn.devices.insert(pn.devices.begin() + 20000, pn.devices[101]);
      if (bad_before) pn.devices[19000].type = "q";
      FlatNetlist fn;
      return elaborate(pn, builtin_catalog(), fn);
    };
    Status a = with_dup(""), b = with_dup(sub);
    Status c;
    {
      test_support::OmpThreads one(1);
      c = with_dup("");
    }
    REQUIRE_FALSE(a.ok());
    REQUIRE_FALSE(b.ok());
    REQUIRE_FALSE(c.ok());
    CHECK(a.errors[0].message == b.errors[0].message);
    CHECK(a.errors[0].message == c.errors[0].message);
    return a.errors[0].message;
  };
  CHECK(duplicate(false).find("duplicate device name") == 0);
  CHECK(duplicate(true).find("unknown device type 'q'") == 0);

  // Warnings of devices at the front, the middle and the back of a long run come out in netlist order, each once,
  // on two threads as on one.
  std::string text = ladder(15000);
  for (int at : {14000, 7000, 50})
    text.insert(text.find("r" + std::to_string(at) + " "), fmt::format("rw{0} w{0} 0 1k r=2k\n", at));
  FlatNetlist wa, wb;
  const Status a = elab(text, wa), b = elab(text, wb, 1);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a.warnings.size() == 3);
  CHECK(a.warnings == b.warnings);
  CHECK(a.warnings[0].find("rw50") != std::string::npos);
  CHECK(a.warnings[2].find("rw14000") != std::string::npos);
  CHECK(same_devices(wa, wb));

  // What is bound once every device is in (controlling sources, the quantities of expressions), at the front, the
  // middle and the back of a long run, each naming a device or node further down or up: the same on two threads
  // as on one; an undefined controlling source at the back is the same error.
  std::string bound = ladder(15000, "vc2 c2 0 dc 1\nf2 n5 0 vc1 2\nb2 nb2 0 v=v(n14999)*2\nrb2 nb2 0 1k\n");
  bound.insert(bound.find("r7000 "), "f1 n3 0 vc2 3\nb1 nb1 0 i=i(vc1)\nrb1 nb1 0 1k\n");
  bound.insert(bound.find("r50 "), "vc1 c1 0 dc 1\nrc1 c1 0 1k\nh0 nh0 0 vc2 5\nrh0 nh0 0 1k\n");
  auto bindings = [](const FlatNetlist& fn) {
    std::vector<std::string> out;
    for (const FlatDevice& fd : fn.devices) {
      if (fd.control_type) out.push_back(fd.name + " -> " + fd.control + " (" + fd.control_type->key + ")");
      for (const auto& ce : fd.params.expr())
        if (ce)
          for (const ExprQuantity& q : ce->quantities())
            out.push_back(fd.name + " reads " + q.name + " node " + std::to_string(q.node.v) + " " + q.device_key);
    }
    return out;
  };
  FlatNetlist ba, bb;
  REQUIRE(elab(bound, ba).ok());
  REQUIRE(elab(bound, bb, 1).ok());
  const std::vector<std::string> two_b = bindings(ba), one_b = bindings(bb);
  CHECK(two_b.size() == 5);
  CHECK(two_b == one_b);
  CHECK(same_devices(ba, bb));
  FlatNetlist ea, eb;
  const std::string bad = bound.substr(0, bound.find(".op")) + "fbad n9 0 vnone 2\n.op\n.end\n";
  const Status sa = elab(bad, ea), sb = elab(bad, eb, 1);
  REQUIRE_FALSE(sa.ok());
  REQUIRE_FALSE(sb.ok());
  CHECK(sa.errors[0].message.find("'vnone'") != std::string::npos);
  CHECK(sa.errors[0].message == sb.errors[0].message);
}

TEST_CASE("circuit build: a large netlist reports the topology errors of a small one") {
  // ladder(12000) has 24,001 devices.
  const char* extras[] = {
      "rf fa fb 1k\n",             // floating nodes
      "vx n0 0 dc 2\n",            // a loop of voltage sources (with v1)
      "vx n3 n4 dc 0\nlx n4 n3 1u\n",  // a loop of a source and an inductor
  };
  for (const char* extra : extras) {
    CAPTURE(extra);
    FlatNetlist big, small;
    REQUIRE(elab(ladder(12000, extra), big).ok());
    REQUIRE(elab(ladder(10, extra), small).ok());
    Circuit cb, cs;
    const Status sb = cb.build(big, builtin_catalog()), ss = cs.build(small, builtin_catalog());
    REQUIRE(!sb.ok());
    REQUIRE(!ss.ok());
    CHECK(sb.errors[0].message == ss.errors[0].message);
    CHECK(sb.errors[0].loc.line == ss.errors[0].loc.line + 2 * (12000 - 10));  // the same device, further down
  }
  // and a valid large netlist builds with every node named
  FlatNetlist ok;
  REQUIRE(elab(ladder(12000), ok).ok());
  Circuit c;
  REQUIRE(c.build(ok, builtin_catalog()).ok());
  REQUIRE(c.n() >= 12001);
  CHECK(c.unknowns()[0].name == "v(n0)");
  CHECK(c.unknowns()[12000].name == "v(n12000)");
}

TEST_CASE("circuit build: devices created on two threads as on one (pattern, unknowns, first error)") {
  // Builds text's circuit with `threads` OpenMP threads allowed (2: the devices are created on two threads).
  auto build = [](const std::string& text, Circuit& c, int threads) {
    FlatNetlist fn;
    REQUIRE(elab(text, fn).ok());
    test_support::OmpThreads limit(threads);
    return c.build(fn, builtin_catalog());
  };
  {  // ladder(12000): 24,001 devices, over the two-thread threshold
    Circuit two, one;
    REQUIRE(build(ladder(12000), two, 2).ok());
    REQUIRE(build(ladder(12000), one, 1).ok());
    CHECK(two.devices().size() == one.devices().size());
    CHECK(two.nonlinear());
    CHECK(two.Ap() == one.Ap());
    CHECK(two.Ai() == one.Ai());
    CHECK(two.diag() == one.diag());
    REQUIRE(two.n() == one.n());
    for (int u = 0; u < two.n(); ++u)
      if (two.unknowns()[u].name != one.unknowns()[u].name) FAIL_CHECK("unknown " << u << " differs");
    CHECK(two.devices()[24000]->name() == "d11999");  // the last, made by the second thread
  }
  // A resistance that only create() finds wrong (its model's length reduction leaves a negative length), at the
  // front and the back of the deck, and both: the first in device order, on two threads as on one.
  const std::string model = ".model rbad r(rsh=10 short=6u)\n";
  auto bad = [&](int at) { return fmt::format("rbad{0} n{0} 0 rbad l=10u w=1u\n", at); };
  for (const std::string& extra : {bad(3), bad(11990), bad(3) + bad(11990)}) {
    std::string text = ladder(12000, model);
    for (int at : {3, 11990})
      if (extra.find(bad(at)) != std::string::npos)
        text.insert(text.find("r" + std::to_string(at) + " "), bad(at));
    Circuit two, one;
    const Status a = build(text, two, 2), b = build(text, one, 1);
    REQUIRE_FALSE(a.ok());
    REQUIRE_FALSE(b.ok());
    CHECK(a.errors[0].message == b.errors[0].message);
    CHECK(a.errors[0].loc.line == b.errors[0].loc.line);
    CHECK(a.errors[0].message.find(extra.substr(0, extra.find(' '))) != std::string::npos);
  }
}

TEST_CASE("populate_pages: memory in use keeps its contents, reserved memory is then filled as usual") {
  std::vector<std::uint64_t> v(3u << 20);  // 24 MB, over the 4 MiB from which two threads populate
  for (size_t i = 0; i < v.size(); ++i) v[i] = i * 2654435761u;
  std::vector<std::uint64_t> w;
  w.reserve(v.size());
  populate_pages(v.data() + 1, (v.size() - 1) * sizeof(std::uint64_t));  // unaligned start
  populate_pages(w.data(), w.capacity() * sizeof(std::uint64_t));
  populate_pages(v.data(), 100);  // small: nothing to do
  bool same = true;
  for (size_t i = 0; i < v.size(); ++i) same = same && v[i] == i * 2654435761u;
  CHECK(same);
  w.assign(v.begin(), v.end());
  CHECK(w == v);
}

TEST_CASE("NameIndex: 8-byte slots keep every name through rehashes, find duplicates and misses") {
  std::vector<std::string> names;
  for (int i = 0; i < 100000; ++i) names.push_back("n" + std::to_string(i * 7919 % 100003));
  NameIndex ix;  // grown by rehashing from empty (no reserve)
  auto name_of = [&](size_t k) -> const std::string& { return names[k]; };
  for (size_t k = 0; k < names.size(); ++k) REQUIRE(ix.try_emplace(names[k], k, name_of).second);
  for (size_t k = 0; k < names.size(); k += 997) {
    CHECK(ix.find(names[k], name_of) == k);
    auto [first, added] = ix.try_emplace(names[k], names.size(), name_of);
    CHECK(!added);
    CHECK(first == k);
  }
  CHECK(ix.find("n100003", name_of) == NameIndex::npos);
  CHECK(ix.find("", name_of) == NameIndex::npos);
  // 262,144 slots (2 MB) by now: the huge-page storage; a prefetch changes nothing, a cleared table is empty and
  // can be filled again (from 16 slots, in ordinary memory)
  ix.prefetch(names[5]);
  ix.prefetch("absent");
  CHECK(ix.find(names[5], name_of) == 5);
  ix.clear();
  ix.prefetch(names[5]);
  CHECK(ix.find(names[5], name_of) == NameIndex::npos);
  for (size_t k = 0; k < 100; ++k) REQUIRE(ix.try_emplace(names[k], k, name_of).second);
  CHECK(ix.find(names[99], name_of) == 99);
  CHECK(ix.find(names[100], name_of) == NameIndex::npos);
}

TEST_CASE("elaborate: an optional model not named allocates no model values; the defaults apply") {
  FlatNetlist fn;
  const std::string text = "models\n.model rm r(rsh=100 defw=1u)\nr1 a 0 2k\nr2 a b rm l=3u\nr3 b 0 5k tc1=0.01\n"
                           "c1 a 0 1p\nv1 a 0 dc 1\n.op\n.end\n";
  ParsedNetlist pn;
  REQUIRE(parse_spice_string(text, "models.cir", builtin_catalog(), pn).ok());
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  REQUIRE(fn.devices.size() == 5);
  CHECK(fn.devices[0].model.table == nullptr);  // r1: no model
  CHECK(fn.devices[1].model.table != nullptr);  // r2: .model rm
  CHECK(fn.devices[2].model.table == nullptr);
  CHECK(fn.devices[3].model.table == nullptr);  // c1
  Circuit c;
  REQUIRE(c.build(fn, builtin_catalog()).ok());
  // r1 = 2k and r3 = 5k (tc1 at the nominal temperature has no effect), r2 = rsh * l / w = 300 ohm
  std::vector<double> g;
  for (const auto& d : c.devices())
    if (const auto* r = dynamic_cast<const Resistor*>(d.get())) g.push_back(r->conductance());
  REQUIRE(g.size() == 3);
  CHECK(g[0] == doctest::Approx(1 / 2e3).epsilon(1e-15));
  CHECK(g[1] == doctest::Approx(1 / 300.0).epsilon(1e-12));
  CHECK(g[2] == doctest::Approx(1 / 5e3).epsilon(1e-15));
}

TEST_CASE("SourceScope: the texts read inside are freed after it, errors formatted inside quote their line") {
  const std::size_t before = SourceScope::registered();
  for (int k = 0; k < 50; ++k) {
    SourceScope scope;
    ParsedNetlist pn;
    REQUIRE(parse_spice_string(fmt::format("divider {}\nv1 in 0 {}\nr1 in out 1k\nr2 out 0 1k\n.op\n.end\n", k, k),
                               "scoped.cir", builtin_catalog(), pn));
    FlatNetlist fn;
    REQUIRE(elaborate(pn, builtin_catalog(), fn));
    CHECK(SourceScope::registered() > before);
    ParsedNetlist bad;
    REQUIRE(parse_spice_string("bad\nr1 a b\n.end\n", "bad.cir", builtin_catalog(), bad));
    FlatNetlist badf;
    const Status st = elaborate(bad, builtin_catalog(), badf);  // r1 has no resistance
    REQUIRE_FALSE(st.ok());
    const std::string msg = st.to_string();
    CHECK(msg.find("bad.cir:2:") != std::string::npos);
    CHECK(msg.find("r1 a b") != std::string::npos);  // the offending line, read from the registered text
  }
  CHECK(SourceScope::registered() == before);
  // Not nested: an inner scope leaves its files to the outer one, which frees them.
  {
    SourceScope outer;
    {
      SourceScope inner;
      ParsedNetlist pn;
      REQUIRE(parse_spice_string("t\nr1 a 0 1\nv1 a 0 1\n.end\n", "inner.cir", builtin_catalog(), pn));
    }
    CHECK(SourceScope::registered() > before);
  }
  CHECK(SourceScope::registered() == before);
  // Without a scope a text stays for the process (diagnostics may outlive everything else).
  ParsedNetlist kept;
  REQUIRE(parse_spice_string("t\nr1 a 0 1\nv1 a 0 1\n.end\n", "kept.cir", builtin_catalog(), kept));
  CHECK(SourceScope::registered() == before + 1);
}
