// Tests for engine/yaml_parser.cpp: the documented format, includes (YAML and SPICE), extra sections and
// located errors.
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <unistd.h>
#include "engine/parse.hpp"
#include "tests/parser_test_support.hpp"

using namespace anasim;

using namespace anasim::test;

namespace {

ParsedNetlist parse_ok(const std::string& text, const std::string& name = "net.yaml") {
  return parse_ok_with(parse_yaml_string, text, name);
}

// Parses text that must fail; returns the first error.
Diag parse_err(const std::string& text, const std::string& name = "net.yaml") {
  return parse_err_with(parse_yaml_string, text, name);
}

const char* kExample = R"(title: RC low-pass
params: {rval: 1k, cval: 1u}
models:
  dmod: {type: d, is: 1e-14, n: 1.05}
subcircuits:
  stage:
    ports: [in, out]
    params: {g: 2}
    devices:
      - {name: e1, type: e, nodes: [out, 0, in, 0], gain: "g"}
devices:
  - {name: v1, type: v, nodes: [in, 0], dc: 0, ac: 1, pulse: [0, 1, 1n, 1n, 1n, 5u, 10u]}
  - {name: r1, type: r, nodes: [in, out], r: "rval"}
  - {name: c1, type: c, nodes: [out, 0], c: "cval", ic: 0}
  - {name: d1, type: d, nodes: [out, 0], model: dmod}
  - {name: f1, type: f, nodes: [a, 0], control: v1, gain: 2}
  - {name: x1, type: x, subckt: stage, nodes: [out, o2], params: {g: 3}}
analyses:
  - {type: op}
  - {type: dc, sweeps: [{source: v1, start: 0, stop: 1, step: 0.1}]}
  - {type: tran, tstep: 1u, tstop: 1m, uic: false}
  - {type: ac, variation: dec, points: 10, fstart: 1, fstop: 1meg}
options: {reltol: 1e-4, method: gear}
ic: {out: 0.5}
outputs: [v(out), i(v1)]
hardware:
  crossbar: {rows: 4}
)";

}  // namespace

TEST_CASE("yaml parser: the documented example") {
  ParsedNetlist pn = parse_ok(kExample);
  CHECK(pn.title == "RC low-pass");
  CHECK(pn.file == "net.yaml");
  REQUIRE(pn.params.size() == 2);
  CHECK(pn.params[0].name == "rval");
  CHECK(values(&pn.params[0]) == "1k");
  CHECK(pn.params[0].loc.line == 2);
  CHECK(pn.params[0].loc.col == 10);
  CHECK(pn.params[0].values[0].loc.col == 16);
  CHECK(pn.params[0].loc.text() == "params: {rval: 1k, cval: 1u}");

  REQUIRE(pn.models.size() == 1);
  CHECK(pn.models[0].name == "dmod");
  CHECK(pn.models[0].type == "d");
  REQUIRE(pn.models[0].params.size() == 2);
  CHECK(pn.models[0].params[0].name == "is");
  CHECK(values(&pn.models[0].params[0]) == "1e-14");

  REQUIRE(pn.subckts.size() == 1);
  const SubcktDef& s = pn.subckts[0];
  CHECK(s.name == "stage");
  CHECK(s.ports == std::vector<std::string>{"in", "out"});
  REQUIRE(s.params.size() == 1);
  CHECK(values(&s.params[0]) == "2");
  REQUIRE(s.devices.size() == 1);
  CHECK(s.devices[0].type == "e");
  CHECK(values(param(s.devices[0], "gain")) == "g");
  // A quoted scalar is located at its first character, not at the quote.
  CHECK(param(s.devices[0], "gain")->values[0].loc.line == 10);
  CHECK(param(s.devices[0], "gain")->values[0].loc.col == 60);

  REQUIRE(pn.devices.size() == 6);
  const auto& v1 = dev(pn.devices, "v1");
  CHECK(v1.type == "v");
  CHECK(v1.nodes == std::vector<std::string>{"in", "0"});
  CHECK(v1.loc.line == 12);
  CHECK(v1.loc.col == 12);
  CHECK(values(param(v1, "dc")) == "0");
  CHECK(values(param(v1, "acmag")) == "1");
  CHECK(param(v1, "acphase") == nullptr);
  REQUIRE(param(v1, "pulse"));
  CHECK(param(v1, "pulse")->is_list);
  CHECK(values(param(v1, "pulse")) == "0|1|1n|1n|1n|5u|10u");
  CHECK(values(param(dev(pn.devices, "r1"), "r")) == "rval");
  CHECK(values(param(dev(pn.devices, "c1"), "ic")) == "0");
  CHECK(dev(pn.devices, "d1").model == "dmod");
  CHECK(dev(pn.devices, "f1").model == "v1");
  CHECK(values(param(dev(pn.devices, "f1"), "gain")) == "2");
  const auto& x1 = dev(pn.devices, "x1");
  CHECK(x1.type == "x");
  CHECK(x1.model == "stage");
  CHECK(x1.nodes == std::vector<std::string>{"out", "o2"});
  CHECK(values(param(x1, "g")) == "3");

  REQUIRE(pn.analyses.size() == 4);
  CHECK(pn.analyses[0].kind == AnalysisSpec::Kind::Op);
  CHECK(pn.analyses[1].kind == AnalysisSpec::Kind::Dc);
  REQUIRE(pn.analyses[1].sweeps.size() == 1);
  CHECK(pn.analyses[1].sweeps[0].source == "v1");
  CHECK(pn.analyses[1].sweeps[0].step.text == "0.1");
  CHECK(pn.analyses[2].kind == AnalysisSpec::Kind::Tran);
  CHECK(pn.analyses[2].tstop.text == "1m");
  CHECK_FALSE(pn.analyses[2].uic);
  CHECK(pn.analyses[3].variation == "dec");
  CHECK(pn.analyses[3].fstop.text == "1meg");
  CHECK(pn.analyses[3].loc.line == 22);

  REQUIRE(pn.options.size() == 2);
  CHECK(pn.options[1].name == "method");
  CHECK(values(&pn.options[1]) == "gear");
  REQUIRE(pn.ics.size() == 1);
  CHECK(pn.ics[0].name == "out");
  CHECK(values(&pn.ics[0]) == "0.5");
  CHECK(pn.outputs == std::vector<std::string>{"v(out)", "i(v1)"});
  REQUIRE(pn.sections.size() == 1);
  CHECK(pn.sections[0].name == "hardware");
  CHECK(pn.sections[0].loc.line == 26);
}

TEST_CASE("yaml parser: a top-level key within two edits of a section name is a typo, any other one a section") {
  // The test within_two_edits makes (no table allocated per key and section name, none for lengths 3 apart).
  const std::string devs = "devices:\n  - {name: r1, type: r, nodes: [a, 0], r: 1k}\n";
  for (const char* typo : {"analysis", "devics", "devicesxy", "ix", "icxy", "xtitlex", "measures", "inclde"}) {
    CAPTURE(typo);
    const Diag d = parse_err(devs + typo + ":\n  a: 1\n");
    CHECK(d.loc.line == 3);
    CHECK(d.message.find("unknown top-level section") != std::string::npos);
  }
  const std::string long_key(1000, 'd');  // a YAML implicit key has at most 1024 characters
  for (const std::string& other : {std::string("hardware"), std::string("icxyz"), std::string("xxtitlexx"), long_key}) {
    const ParsedNetlist pn = parse_ok(devs + other + ":\n  a: 1\n");
    REQUIRE(pn.sections.size() == 1);
    CHECK(pn.sections[0].name == other);
  }
}

TEST_CASE("yaml parser: block style, long type names, ac with phase, flat dc sweep") {
  const char* text = R"(
title: block style
devices:
  - name: Vin
    type: Voltage Source
    nodes: [IN, GND]
    ac: [1, 90]
    pwl: [0, 0, 1u, 1]
  - name: load
    type: resistor
    nodes:
      - in
      - 0
    r: 2*rval
    tc1: 1m
  - name: q
    type: diode
    nodes: [in, 0]
    model: dm
    off: true
  - name: sub1
    type: subcircuit
    subckt: amp
    nodes: [in, out, 0]
    w: 2
analyses:
  - type: dc
    source: vin
    start: 0
    stop: 1
    step: 0.1
  - type: tran
    tstep: 1n
    tstop: 1u
    tstart: 0
    tmax: 1n
    uic: true
  - {type: dc, sweeps: [{source: v1, start: 0, stop: 1, step: 0.5}, {source: v2, start: 0, stop: 2, step: 1}]}
ic: {v(out): 1}
outputs: v(in)
)";
  ParsedNetlist pn = parse_ok(text);
  REQUIRE(pn.devices.size() == 4);
  const auto& v = dev(pn.devices, "vin");
  CHECK(v.type == "v");
  CHECK(v.nodes == std::vector<std::string>{"in", "gnd"});
  CHECK(values(param(v, "acmag")) == "1");
  CHECK(values(param(v, "acphase")) == "90");
  CHECK(values(param(v, "pwl")) == "0|0|1u|1");
  const auto& r = dev(pn.devices, "load");
  CHECK(r.type == "r");
  CHECK(r.nodes == std::vector<std::string>{"in", "0"});
  CHECK(values(param(r, "r")) == "2*rval");
  CHECK(values(param(dev(pn.devices, "q"), "off")) == "1");
  const auto& x = dev(pn.devices, "sub1");
  CHECK(x.type == "x");
  CHECK(x.model == "amp");
  CHECK(x.nodes.size() == 3);
  CHECK(values(param(x, "w")) == "2");
  REQUIRE(pn.analyses.size() == 3);
  REQUIRE(pn.analyses[0].sweeps.size() == 1);
  CHECK(pn.analyses[0].sweeps[0].source == "vin");
  CHECK(pn.analyses[1].uic);
  CHECK(pn.analyses[1].tmax.text == "1n");
  REQUIRE(pn.analyses[2].sweeps.size() == 2);
  CHECK(pn.analyses[2].sweeps[1].source == "v2");
  REQUIRE(pn.ics.size() == 1);
  CHECK(pn.ics[0].name == "out");
  CHECK(pn.outputs == std::vector<std::string>{"v(in)"});
}

TEST_CASE("yaml parser: includes of YAML and SPICE files") {
  std::string dir = tmp_dir();
  write_file("models.yaml", "models:\n  dm: {type: d, is: 1f}\nparams: {k: 2}\ntitle: ignored\n");
  write_file("lib.cir", "* a SPICE library: no title line\n.model dspice d is=2f\n.subckt buf a b\nr1 a b 1k\n.ends\n");
  std::string top = write_file("top.yaml",
                               "title: top\n"
                               "include: [models.yaml, lib.cir]\n"
                               "devices:\n"
                               "  - {name: d1, type: d, nodes: [a, 0], model: dm}\n"
                               "  - {name: x1, type: x, subckt: buf, nodes: [a, b]}\n");
  ParsedNetlist pn;
  Status st = parse_netlist(top, cat(), pn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  CHECK(pn.title == "top");
  REQUIRE(pn.models.size() == 2);
  CHECK(pn.models[0].name == "dm");
  CHECK(pn.models[0].loc.file() == dir + "/models.yaml");
  CHECK(pn.models[1].name == "dspice");
  CHECK(pn.models[1].loc.file() == dir + "/lib.cir");
  CHECK(pn.models[1].loc.line == 2);
  REQUIRE(pn.subckts.size() == 1);
  CHECK(pn.params.size() == 1);
  CHECK(pn.devices.size() == 2);

  // A SPICE deck may include a YAML file too.
  std::string deck = write_file("deck.cir", "title\n.include models.yaml\nd1 a 0 dm\n");
  st = parse_netlist(deck, cat(), pn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  CHECK(pn.models.size() == 1);
  CHECK(pn.title == "title");

  // Duplicates across files name the first definition's file.
  std::string dup = write_file("dup.yaml", "include: models.yaml\nmodels:\n  dm: {type: d}\n");
  st = parse_yaml(dup, cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "duplicate model 'dm' (first defined at " + dir + "/models.yaml:2)");
  CHECK(st.errors[0].loc.line == 3);
  CHECK(st.errors[0].loc.col == 3);

  // Missing include and recursion.
  std::string miss = write_file("miss.yaml", "include: [nothere.yaml]\n");
  st = parse_yaml(miss, cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message.find("cannot open include file '" + dir + "/nothere.yaml'") == 0);
  CHECK(st.errors[0].loc.line == 1);
  CHECK(st.errors[0].loc.col == 11);
  std::string loop = write_file("loop.yaml", "include: loop.yaml\n");
  st = parse_yaml(loop, cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message.find("include nested more than") == 0);

  st = parse_yaml(dir + "/absent.yaml", cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "cannot open netlist '" + dir + "/absent.yaml': No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST_CASE("yaml parser: located errors") {
  struct Case {
    const char* text;
    const char* message;  // expected start of the first error message
    int line, col;
  };
  const Case cases[] = {
      {"devices:\n  - {name: r1, type: r, nodes: [a, b, c]}\n",
       "expected 'nodes' of resistor 'r1' to be a list of 2 node names (p n), got 3", 2, 32},
      {"devices:\n  - {name: r1, type: r, nodes: a}\n",
       "expected 'nodes' of resistor 'r1' to be a list of 2 node names (p n), got 'a'", 2, 32},
      {"devices:\n  - {name: r1, type: r}\n", "resistor 'r1' has no 'nodes'; expected a list of 2 node names (p n)", 2,
       12},
      {"devices:\n  - {type: r, nodes: [a, b]}\n", "device has no 'name'", 2, 5},
      {"devices:\n  - {name: r1, nodes: [a, b]}\n", "device 'r1' has no 'type' (one of: r (resistor)", 2, 12},
      {"devices:\n  - {name: q1, type: bjt, nodes: [a, b]}\n", "unknown device type 'bjt' (known: r (resistor)", 2,
       22},
      {"devices:\n  - {name: d1, type: d, nodes: [a, b]}\n", "diode 'd1' needs 'model: <name of a d model>'", 2, 12},
      {"devices:\n  - {name: f1, type: f, nodes: [a, b]}\n", "cccs 'f1' needs 'control: <voltage source name>'", 2,
       12},
      {"devices:\n  - {name: x1, type: x, nodes: [a, b]}\n", "subcircuit instance 'x1' needs 'subckt: <subcircuit "
       "name>'", 2, 12},
      {"devices:\n  - {name: l1, type: l, nodes: [a, b], model: m}\n", "inductor 'l1' does not take 'model'", 2, 40},
      {"devices:\n  - {name: r1, type: r, nodes: [a, b]}\n  - {name: R1, type: r, nodes: [a, b]}\n",
       "duplicate device name 'r1' (first defined at line 2)", 3, 12},
      {"devices:\n  - {name: v1, type: v, nodes: [a, 0], pulse: 1}\n",
       "'pulse' of voltage source 'v1' takes a list of 2 to 8 values", 2, 40},
      {"devices:\n  - {name: v1, type: v, nodes: [a, 0], ac: [1, 2, 3]}\n",
       "expected 'ac' of voltage source 'v1' to be a magnitude or [magnitude, phase], got 3 values", 2, 44},
      {"devices:\n  - {name: r1, type: r, nodes: [a, b], r: }\n", "expected a value for 'r' of resistor 'r1', got nothing",
       2, 43},
      {"devices: {r1: 1}\n", "expected 'devices' to be a list", 1, 10},
      {"devices:\n  - r1 a b 1k\n", "expected a device mapping", 2, 5},
      {"analyses:\n  - {type: tran, tstep: 1u}\n", "tran analysis needs 'tstop'", 2, 5},
      {"analyses:\n  - {type: tran, tstep: 1u, tstop: 1m, foo: 1}\n",
       "unknown key 'foo' in tran analysis; expected one of: tstep, tstop, tstart, tmax, uic", 2, 40},
      {"analyses:\n  - {type: ac, variation: decade, points: 1, fstart: 1, fstop: 2}\n",
       "expected dec, oct or lin for 'variation' of the ac analysis, got 'decade'", 2, 27},
      {"analyses:\n  - {type: noise}\n", "unknown analysis type 'noise'; expected op, dc, tran or ac", 2, 12},
      {"analyses:\n  - {type: op, x: 1}\n", "unknown key 'x' in op analysis; it takes no arguments", 2, 16},
      {"analyses:\n  - {type: dc, sweeps: [{source: v1, start: 0, stop: 1}]}\n",
       "dc sweep needs 'step' (source, start, stop, step)", 2, 25},
      {"analyses:\n  - {type: tran, tstep: 1u, tstop: 1m, uic: maybe}\n",
       "expected true or false for 'uic' of the tran analysis, got 'maybe'", 2, 45},
      {"models:\n  m1: {is: 1}\n", "model 'm1' needs a 'type' (e.g. type: d)", 2, 3},
      {"subcircuits:\n  s: {ports: [a], devices: [], wires: 3}\n",
       "unknown key 'wires' in subcircuit 's'; expected ports, params, devices or models", 2, 32},
      {"subcircuits:\n  s: {ports: [a]}\n", "subcircuit 's' has no 'devices' list", 2, 3},
      {"params: {a: [1, 2]}\n", "expected a single value for 'a' in 'params'", 1, 13},
      {"devices: [\n", "YAML syntax error: '[' is never closed (expected ']'; the parser stopped at line 2: end of "
       "sequence flow not found)", 1, 10},
      {"a: b: c\n", "YAML syntax error: illegal map value", 1, 5},
      {"- 1\n- 2\n", "expected a YAML mapping", 1, 1},
      {"", "empty YAML netlist", 0, 0},
      {"params: {a: 1}\nparams: {b: 2}\n", "duplicate key 'params' in the netlist (first at line 1)", 2, 1},
      {"include: [nope.yaml]\n", "cannot open include file 'nope.yaml'", 1, 11},
  };
  for (const Case& c : cases) {
    std::string text = c.text;
    CAPTURE(text);
    Diag d = parse_err(c.text);
    CAPTURE(d.message);
    CHECK(d.message.rfind(c.message, 0) == 0);
    if (c.line > 0) CHECK(d.loc.file() == "net.yaml");
    CHECK(d.loc.line == c.line);
    CHECK(d.loc.col == c.col);
  }
  Diag d = parse_err("devices:\n  - {name: q1, type: bjt, nodes: [a, b]}\n");
  CHECK(d.to_string().find("net.yaml:2:22: error: unknown device type 'bjt'") == 0);
  CHECK(d.to_string().find("\n  " + std::string(21, ' ') + "^") != std::string::npos);
}

TEST_CASE("yaml parser: robustness on odd input") {
  const char* inputs[] = {
      "~\n",
      "title: [a]\n",
      "devices: ~\nmodels: ~\nanalyses: ~\n",
      "devices:\n  - ~\n",
      "devices:\n  - {name: [a], type: r}\n",
      "devices:\n  - {name: r1, type: {a: 1}, nodes: [a, b]}\n",
      "devices:\n  - {name: r1, type: r, nodes: [[a], b]}\n",
      "devices:\n  - {name: r1, type: r, nodes: [a, b], r: {x: 1}}\n",
      "devices:\n  - {name: r1, type: r, nodes: [a, b], params: 5}\n",
      "analyses: [1, 2]\n",
      "analyses:\n  - {type: dc, sweeps: 3}\n",
      "analyses:\n  - {type: dc, sweeps: [1]}\n",
      "ic: [1]\n",
      "outputs: {a: 1}\n",
      "include: {a: 1}\n",
      "models: [1]\n",
      "subcircuits:\n  s: 3\n",
      "subcircuits:\n  s: {ports: 3, devices: 4}\n",
      "{[a]: 1}\n",
      "&a [*a]\n",
      "key: \"unterminated\n",
      "\t- bad indentation\n",
      "devices:\n  - {name: r1, type: r, nodes: [a, b], r: 1, r: 2}\n",
  };
  for (const char* in : inputs) {
    CAPTURE(in);
    ParsedNetlist pn;
    Status st = parse_yaml_string(in, "net.yaml", cat(), pn);
    for (const Diag& d : st.errors) CHECK_FALSE(d.message.empty());
  }
  // Deep nesting is rejected by yaml-cpp's depth guard instead of overflowing the stack.
  ParsedNetlist pn;
  Status st = parse_yaml_string(std::string(100000, '['), "net.yaml", cat(), pn);
  CHECK_FALSE(st.ok());
  for (int n = 0; n < 300; ++n) {
    std::string s;
    unsigned b = 99u + static_cast<unsigned>(n);
    for (int k = 0; k < 80; ++k) {
      b = b * 1103515245u + 12345u;
      s += static_cast<char>((b >> 16) & 0xff);
    }
    ParsedNetlist p3;
    (void)parse_yaml_string(s, "bytes.yaml", cat(), p3);
  }
  unsigned seed = 777;
  const std::string alphabet = "devices:names{}[],- \n\t\"'&*!?#rvtypeodc0123";
  for (int n = 0; n < 300; ++n) {
    std::string s = "devices:\n";
    for (int k = 0; k < 60; ++k) {
      seed = seed * 1103515245u + 12345u;
      s += alphabet[(seed >> 16) % alphabet.size()];
    }
    ParsedNetlist p2;
    (void)parse_yaml_string(s, "fuzz.yaml", cat(), p2);
  }
}
