// Tests for engine/spice_parser.cpp: every card and source syntax, continuations, comments, includes,
// subcircuits, and located error messages.
#include <doctest/doctest.h>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <unistd.h>
#include "engine/parse.hpp"
#include "tests/parser_test_support.hpp"
#include "tests/test_support.hpp"

using namespace anasim;

using namespace anasim::test;

namespace {

ParsedNetlist parse_ok(const std::string& text, const std::string& name = "deck.cir") {
  return parse_ok_with(parse_spice_string, text, name);
}

// Parses text that must fail; returns the first error.
Diag parse_err(const std::string& text, const std::string& name = "deck.cir") {
  return parse_err_with(parse_spice_string, text, name);
}

}  // namespace

TEST_CASE("spice parser: a deck covering every card") {
  const std::string deck =
      "Full Deck Title\n"
      "* a comment line\n"
      ".param rval=1k cval={2*rval*1n}, gain = 3\n"
      ".model DMOD D(IS=1e-14 N=1.05)\n"
      ".model d2 d is=2e-14\n"
      "V1 in 0 DC 1 AC 1 90 PULSE(0 1 1n 1n 1n 5u 10u)\n"
      "v2 a 0 5\n"
      "v3 b 0 sin(0 1 1k) ; inline comment\n"
      "i1 0 c exp(0 1m 1u 1u 2u 1u) $ another comment\n"
      "i2 0 c2 pwl(0 0 1u 1 2u 0)\n"
      "v4 d 0 pulse 0 1 1n 1n 1n 5u 10u\n"
      "v5 e 0 dc=2 ac\n"
      "v6 f 0 sin(0, 1, 1k, 0, 0, 0)\n"
      "R1 in out {rval}\n"
      "r2 out 0 r='rval * 2' tc1=1m\n"
      "C1 out 0 {cval} ic=0.5\n"
      "l1 out mid 10uH\n"
      "e1 x 0 out 0 2\n"
      "g1 y 0 out 0 gain\n"
      "f1 z 0 v1 3\n"
      "h1 w 0 v2 1k\n"
      "d1 out 0 dmod 2 off\n"
      "d2 out 0 d2 area=3\n"
      "x1 out o2 stage g=4\n"
      "x2 out o3 stage params: g={gain}\n"
      ".subckt stage in out params: g=2\n"
      "e1 out 0 in 0 {g}\n"
      "r1 out 0 1k\n"
      ".model dl d is=1f\n"
      ".param local=3\n"
      ".ends stage\n"
      ".op\n"
      ".dc v1 0 1 0.1\n"
      ".dc v1 0 1 0.1 v2 0 5 1\n"
      ".tran 1u 1m\n"
      ".tran 1n 2u 0 1n uic\n"
      ".ac dec 10 1 1meg\n"
      ".options reltol=1e-4 method=gear klu\n"
      ".option abstol=1p\n"
      ".ic v(out)=0.5 V(Mid)=1\n"
      ".temp 27\n"
      ".save v(out)\n"
      ".print tran v(out)\n"
      ".probe\n"
      ".control\n"
      "run\n"
      "plot v(out)\n"
      "quit\n"  // `run` runs the six dot analyses; quit: not a second time after the script
      ".endc\n"
      ".end\n"
      "r99 this line is after .end\n";
  ParsedNetlist pn = parse_ok(deck);
  CHECK(pn.title == "Full Deck Title");
  CHECK(pn.file == "deck.cir");

  REQUIRE(pn.params.size() == 3);
  CHECK(pn.params[0].name == "rval");
  CHECK(values(&pn.params[0]) == "1k");
  CHECK(values(&pn.params[1]) == "{2*rval*1n}");
  CHECK(pn.params[2].name == "gain");
  CHECK(values(&pn.params[2]) == "3");
  CHECK(pn.params[1].loc.line == 3);
  CHECK(pn.params[1].loc.col == 16);
  CHECK(pn.params[1].values[0].loc.col == 21);

  REQUIRE(pn.models.size() == 2);
  CHECK(pn.models[0].name == "dmod");
  CHECK(pn.models[0].type == "d");
  REQUIRE(pn.models[0].params.size() == 2);
  CHECK(pn.models[0].params[0].name == "is");
  CHECK(values(&pn.models[0].params[0]) == "1e-14");
  CHECK(pn.models[0].params[1].name == "n");
  CHECK(pn.models[1].name == "d2");
  CHECK(values(&pn.models[1].params[0]) == "2e-14");

  const auto& v1 = dev(pn.devices, "v1");
  CHECK(v1.type == "v");
  CHECK(v1.nodes == std::vector<std::string>{"in", "0"});
  CHECK(values(param(v1, "dc")) == "1");
  CHECK(values(param(v1, "acmag")) == "1");
  CHECK(values(param(v1, "acphase")) == "90");
  REQUIRE(param(v1, "pulse"));
  CHECK(param(v1, "pulse")->is_list);
  CHECK(values(param(v1, "pulse")) == "0|1|1n|1n|1n|5u|10u");
  CHECK(param(v1, "pulse")->loc.col == 22);
  CHECK(param(v1, "pulse")->values[6].loc.col == 44);
  CHECK(values(param(dev(pn.devices, "v2"), "dc")) == "5");
  CHECK(values(param(dev(pn.devices, "v3"), "sin")) == "0|1|1k");
  CHECK(values(param(dev(pn.devices, "i1"), "exp")) == "0|1m|1u|1u|2u|1u");
  CHECK(dev(pn.devices, "i1").nodes == std::vector<std::string>{"0", "c"});
  CHECK(values(param(dev(pn.devices, "i2"), "pwl")) == "0|0|1u|1|2u|0");
  CHECK(values(param(dev(pn.devices, "v4"), "pulse")) == "0|1|1n|1n|1n|5u|10u");
  CHECK(values(param(dev(pn.devices, "v5"), "dc")) == "2");
  CHECK(values(param(dev(pn.devices, "v5"), "acmag")) == "1");
  CHECK(values(param(dev(pn.devices, "v6"), "sin")) == "0|1|1k|0|0|0");

  const auto& r1 = dev(pn.devices, "r1");
  CHECK(r1.type == "r");
  CHECK(r1.nodes == std::vector<std::string>{"in", "out"});
  CHECK(r1.loc.line == 14);
  CHECK(r1.loc.col == 1);
  CHECK(r1.loc.text() == "R1 in out {rval}");
  CHECK(values(param(r1, "r")) == "{rval}");
  CHECK(param(r1, "r")->values[0].loc.col == 11);
  CHECK(values(param(dev(pn.devices, "r2"), "r")) == "'rval * 2'");
  CHECK(values(param(dev(pn.devices, "r2"), "tc1")) == "1m");
  CHECK(values(param(dev(pn.devices, "c1"), "c")) == "{cval}");
  CHECK(values(param(dev(pn.devices, "c1"), "ic")) == "0.5");
  CHECK(values(param(dev(pn.devices, "l1"), "l")) == "10uh");
  CHECK(dev(pn.devices, "e1").nodes == std::vector<std::string>{"x", "0", "out", "0"});
  CHECK(values(param(dev(pn.devices, "e1"), "gain")) == "2");
  CHECK(values(param(dev(pn.devices, "g1"), "gain")) == "gain");
  CHECK(dev(pn.devices, "f1").model == "v1");
  CHECK(dev(pn.devices, "f1").model_loc.col == 8);
  CHECK(values(param(dev(pn.devices, "f1"), "gain")) == "3");
  CHECK(dev(pn.devices, "h1").model == "v2");
  const auto& d1 = dev(pn.devices, "d1");
  CHECK(d1.model == "dmod");
  CHECK(values(param(d1, "area")) == "2");
  CHECK(values(param(d1, "off")) == "1");
  CHECK(values(param(dev(pn.devices, "d2"), "area")) == "3");

  const auto& x1 = dev(pn.devices, "x1");
  CHECK(x1.type == "x");
  CHECK(x1.nodes == std::vector<std::string>{"out", "o2"});
  CHECK(x1.model == "stage");
  CHECK(values(param(x1, "g")) == "4");
  CHECK(values(param(dev(pn.devices, "x2"), "g")) == "{gain}");

  REQUIRE(pn.subckts.size() == 1);
  const SubcktDef& s = pn.subckts[0];
  CHECK(s.name == "stage");
  CHECK(s.ports == std::vector<std::string>{"in", "out"});
  REQUIRE(s.params.size() == 2);
  CHECK(s.params[0].name == "g");
  CHECK(s.params[1].name == "local");
  REQUIRE(s.devices.size() == 2);
  CHECK(s.devices[0].name == "e1");  // same name as the top-level e1: different scope
  REQUIRE(s.models.size() == 1);
  CHECK(s.models[0].name == "dl");
  // Subcircuit contents stay out of the top level.
  CHECK(pn.devices.size() == 20);

  REQUIRE(pn.analyses.size() == 6);
  CHECK(pn.analyses[0].kind == AnalysisSpec::Kind::Op);
  CHECK(pn.analyses[1].kind == AnalysisSpec::Kind::Dc);
  REQUIRE(pn.analyses[1].sweeps.size() == 1);
  CHECK(pn.analyses[1].sweeps[0].source == "v1");
  CHECK(pn.analyses[1].sweeps[0].step.text == "0.1");
  REQUIRE(pn.analyses[2].sweeps.size() == 2);
  CHECK(pn.analyses[2].sweeps[0].source == "v1");
  CHECK(pn.analyses[2].sweeps[1].source == "v2");
  CHECK(pn.analyses[2].sweeps[1].stop.text == "5");
  CHECK(pn.analyses[3].kind == AnalysisSpec::Kind::Tran);
  CHECK(pn.analyses[3].tstep.text == "1u");
  CHECK(pn.analyses[3].tstop.text == "1m");
  CHECK(pn.analyses[3].tstart.text.empty());
  CHECK_FALSE(pn.analyses[3].uic);
  CHECK(pn.analyses[4].tstart.text == "0");
  CHECK(pn.analyses[4].tmax.text == "1n");
  CHECK(pn.analyses[4].uic);
  CHECK(pn.analyses[5].kind == AnalysisSpec::Kind::Ac);
  CHECK(pn.analyses[5].variation == "dec");
  CHECK(pn.analyses[5].points.text == "10");
  CHECK(pn.analyses[5].fstart.text == "1");
  CHECK(pn.analyses[5].fstop.text == "1meg");
  CHECK(pn.analyses[5].loc.line == 37);

  REQUIRE(pn.options.size() == 5);
  CHECK(pn.options[0].name == "reltol");
  CHECK(values(&pn.options[1]) == "gear");
  CHECK(pn.options[2].name == "klu");
  CHECK(values(&pn.options[2]) == "1");
  CHECK(pn.options[3].name == "abstol");
  CHECK(pn.options[4].name == "temp");  // .temp 27
  CHECK(values(&pn.options[4]) == "27");

  REQUIRE(pn.ics.size() == 2);
  CHECK(pn.ics[0].name == "out");
  CHECK(values(&pn.ics[0]) == "0.5");
  CHECK(pn.ics[1].name == "mid");
  CHECK(pn.outputs == std::vector<std::string>{"v(out)"});  // .save selects; .probe alone adds nothing
}

TEST_CASE("spice parser: continuation lines keep physical locations") {
  const std::string deck =
      "title\n"
      "v1 in 0\n"
      "* a comment between a line and its continuation\n"
      "+ pulse(0 1\n"
      "  +   1n 1n 1n 5u 10u)\n"
      "r1 in\n"
      "+ out {1k *\n"
      "+ 2}\n";
  ParsedNetlist pn = parse_ok(deck);
  const auto& v1 = dev(pn.devices, "v1");
  const ParamAssign* p = param(v1, "pulse");
  REQUIRE(p);
  CHECK(values(p) == "0|1|1n|1n|1n|5u|10u");
  CHECK(p->loc.line == 4);
  CHECK(p->loc.col == 3);
  CHECK(p->loc.text() == "+ pulse(0 1");
  CHECK(p->values[1].loc.line == 4);
  CHECK(p->values[1].loc.col == 11);
  CHECK(p->values[2].loc.line == 5);
  CHECK(p->values[2].loc.col == 7);
  CHECK(p->values[2].loc.text() == "  +   1n 1n 1n 5u 10u)");
  const auto& r1 = dev(pn.devices, "r1");
  CHECK(r1.nodes == std::vector<std::string>{"in", "out"});
  CHECK(values(param(r1, "r")) == "{1k *  2}");
  CHECK(param(r1, "r")->values[0].loc.line == 7);
  CHECK(param(r1, "r")->values[0].loc.col == 7);
}

TEST_CASE("spice parser: comments, case and blank lines") {
  const std::string deck =
      "* the title may look like a comment\n"
      "\n"
      "   * indented comment\n"
      "R1 A B 1K ; semicolon comment\n"
      "R2 B 0 2K $ dollar comment\n"
      "r3 b 0 1k$not_a_comment\n"
      "; full-line semicolon comment\n"
      "\t\n"
      "V1 A GND 1\n";
  ParsedNetlist pn = parse_ok(deck);
  CHECK(pn.title == "* the title may look like a comment");
  REQUIRE(pn.devices.size() == 4);
  CHECK(pn.devices[0].nodes == std::vector<std::string>{"a", "b"});
  CHECK(values(param(pn.devices[0], "r")) == "1k");
  CHECK(values(param(pn.devices[1], "r")) == "2k");
  CHECK(values(param(pn.devices[2], "r")) == "1k$not_a_comment");
  CHECK(pn.devices[3].nodes[1] == "gnd");
  CHECK(is_ground_name(pn.devices[3].nodes[1]));
  CHECK(is_ground_name("0"));
  CHECK(is_ground_name("GND"));
  CHECK_FALSE(is_ground_name("00"));
  CHECK(to_lower("AbC") == "abc");
}

TEST_CASE("spice parser: includes are relative to the including file") {
  std::string dir = tmp_dir();
  REQUIRE(system(("mkdir -p " + dir + "/lib").c_str()) == 0);
  write_file("lib/Models.Lib", "* models\n.model dx d is=1f\n.include \"more.inc\"\n");
  write_file("lib/more.inc", "r9 q 0 9k\n.end\nr10 q 0 1\n");
  write_file("sub.inc", ".subckt amp a b\nr1 a b 1k\n.ends\n");
  std::string top = write_file("top.cir",
                               "include test\n"
                               ".include \"lib/Models.Lib\"\n"
                               ".INCLUDE sub.inc\n"
                               "d1 a 0 dx\n"
                               "x1 a b amp\n");
  ParsedNetlist pn;
  Status st = parse_spice(top, cat(), pn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(pn.models.size() == 1);
  CHECK(pn.models[0].name == "dx");
  CHECK(pn.models[0].loc.file() == dir + "/lib/Models.Lib");
  CHECK(pn.models[0].loc.line == 2);
  REQUIRE(pn.devices.size() == 3);
  CHECK(pn.devices[0].name == "r9");  // .end in an include stops that file only
  CHECK(pn.devices[0].loc.file() == dir + "/lib/more.inc");
  CHECK(pn.devices[1].name == "d1");
  REQUIRE(pn.subckts.size() == 1);
  CHECK(pn.subckts[0].devices.size() == 1);
  CHECK(pn.file == top);

  // parse_netlist dispatches by extension.
  ParsedNetlist pn2;
  CHECK(parse_netlist(top, cat(), pn2).ok());
  CHECK(pn2.devices.size() == 3);

  // Missing include file: located at the file name.
  std::string bad = write_file("bad.cir", "t\nr1 a 0 1\n.include missing.inc\n");
  st = parse_spice(bad, cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message.find("cannot open include file '" + dir + "/missing.inc'") == 0);
  CHECK(st.errors[0].loc.line == 3);
  CHECK(st.errors[0].loc.col == 10);

  // Recursive include: stopped at the nesting limit, located at an .include.
  write_file("loop.inc", "* loops\n.include loop.inc\n");
  std::string loop = write_file("loop.cir", "t\n.include loop.inc\n");
  st = parse_spice(loop, cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message.find(".include nested more than") == 0);
  CHECK(st.errors[0].loc.col == 1);

  // Missing top-level file.
  st = parse_spice(dir + "/nope.cir", cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "cannot open netlist '" + dir + "/nope.cir': No such file or directory");
  st = parse_netlist(dir + "/nope.yaml", cat(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].message == "cannot open netlist '" + dir + "/nope.yaml': No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST_CASE("spice parser: located errors") {
  struct Case {
    const char* deck;
    const char* message;  // expected start of the first error message
    int line, col;
  };
  const Case cases[] = {
      {"t\nq1 a b c qmod\n", "unknown device type 'q' (known: r c l v i e g f h d x)", 2, 1},
      {"t\nr1 a\n", "expected 2 nodes (p n) for resistor 'r1', got 1", 2, 5},
      {"t\nr1 a   \n", "expected 2 nodes (p n) for resistor 'r1', got 1", 2, 5},
      {"t\ne1 a b c\n", "expected 4 nodes (p n cp cn) for vcvs 'e1', got 3", 2, 9},
      {"t\nr1 a b 1k 2k\n", "too many values for resistor 'r1': expected at most 1 (r)", 2, 11},
      {"t\nf1 a b\n", "expected the name of the controlling voltage source", 2, 7},
      {"t\nd1 a b\n", "expected a .model name (type d) after the nodes of diode 'd1'", 2, 7},
      {"t\nr1 a b 1k\nR1 c d 2k\n", "duplicate device name 'r1' (first defined at line 2)", 3, 1},
      {"t\n.model m d\n.model M d is=1\n", "duplicate .model 'm' (first defined at line 2)", 3, 8},
      {"t\n.subckt s a\n.ends\n.subckt s b\n.ends\n", "duplicate .subckt 's' (first defined at line 2)", 4, 9},
      {"t\n.tran 1u\n", "expected: .tran <tstep> <tstop> [<tstart> [<tmax>]] [uic]; missing <tstop>", 2, 9},
      {"t\n.ac decade 10 1 1k\n", "expected dec, oct or lin after .ac, got 'decade'", 2, 5},
      {"t\n.ac dec 10 1\n", "expected: .ac dec|oct|lin <points> <fstart> <fstop>; missing <fstop>", 2, 13},
      {"t\n.dc v1 0 1\n", "expected: .dc <source> <start> <stop> <step>", 2, 11},
      {"t\n.dc v1 0 1 0.1 v2 0\n", "expected: .dc <source> <start> <stop> <step>", 2, 20},
      {"t\n.foo 1 2\n", "unknown or unsupported dot card '.foo'", 2, 1},
      {"t\n.lib models.lib tt\n", "cannot open library file 'models.lib'", 2, 6},
      {"t\n.subckt s a\nr1 a 0 1\n", "missing .ends for .subckt 's'", 2, 9},
      {"t\n.ends\n", ".ends without a matching .subckt", 2, 1},
      {"t\n.else\n", ".else without a matching .if", 2, 1},
      {"t\n.subckt s a\n.subckt t b\n.ends t\n", "missing .ends for .subckt 's'", 2, 9},
      {"t\n.subckt s a\nr1 a 0 1\n.tran 1 2\n", "missing .ends for .subckt 's' (reached .tran at line 4", 2, 9},
      {"t\nr1 a b {1k\n", "unbalanced '{': missing '}'", 2, 8},
      {"t\nr1 a b r=\n", "expected a value after 'r=', got end of line", 2, 10},
      {"t\nv1 a 0 pulse(0 1 2\n", "unbalanced parenthesis: '(' is never closed", 2, 13},
      {"t\nv1 a 0 pulse(0)\n", "PULSE takes 2 to 8 values (v1 v2 [td tr tf pw per np]), got 1", 2, 8},
      {"t\nv1 a 0 pwl(0 1 2)\n", "PWL takes an even number of values (t1 v1 t2 v2 ...), got 3", 2, 8},
      {"t\nv1 a 0 dc 1 2\n", "unexpected value '2' for voltage source 'v1'", 2, 13},
      {"t\nv1 a 0 trnoise(0 1n 0 0)\n", "source function 'trnoise' is not supported", 2, 8},
      {"t\n.ic out=1\n", "expected v(<node>)=<value> in .ic, got 'out'", 2, 5},
      {"t\n.param 3\n", "expected name=value in .param, got '3'", 2, 8},
      {"t\n.param f(x)=x*2\n", "function definitions in .param are not supported", 2, 8},
      {"t\n.model m\n", "expected: .model <name> <type> (param=value ...)", 2, 9},
      {"t\nx1\n", "expected nodes and a subcircuit name for subcircuit instance 'x1'", 2, 3},
      {"t\n+ r1 a b 1\n", "continuation line '+' without a preceding line", 2, 1},
      {"t\n.op 1\n", ".op takes no arguments, got '1'", 2, 5},
      {"t\n.include\n", "expected a file name after .include", 2, 9},
      {"t\n1abc a b\n", "expected a device name (starting with a device letter: r c l v i e g f h d x)", 2, 1},
      {"t\nl1 a b 1u 2\n", "too many values for inductor 'l1'", 2, 11},
  };
  for (const Case& c : cases) {
    std::string deck = c.deck;
    CAPTURE(deck);
    Diag d = parse_err(c.deck);
    CAPTURE(d.message);
    CHECK(d.message.rfind(c.message, 0) == 0);
    CHECK(d.loc.file() == "deck.cir");
    CHECK(d.loc.line == c.line);
    CHECK(d.loc.col == c.col);
  }
  // to_string shows the line and a caret under the column.
  Diag d = parse_err("t\nr1 a b 1k\nq1 a b c\n");
  CHECK(d.to_string() ==
        "deck.cir:3:1: error: unknown device type 'q' (known: r c l v i e g f h d x)\n  q1 a b c\n  ^");
}

TEST_CASE("spice parser: several errors are reported, parsing continues after a bad line") {
  ParsedNetlist pn;
  Status st = parse_spice_string("t\nr1 a\nr2 a b 1k\nq1 x y\n", "deck.cir", cat(), pn);
  REQUIRE(st.errors.size() == 2);
  CHECK(st.errors[0].loc.line == 2);
  CHECK(st.errors[1].loc.line == 4);
  REQUIRE(pn.devices.size() == 1);
  CHECK(pn.devices[0].name == "r2");
}

TEST_CASE("spice parser: robustness on odd input") {
  const char* inputs[] = {
      "",
      "\n",
      "title only",
      "t\n\n\n",
      "t\r\nr1 a b 1k\r\n",
      "t\n)))\n",
      "t\n= = =\n",
      "t\nr1 ( ) =\n",
      "t\n.param\n",
      "t\n.dc\n",
      "t\n.ic v(\n",
      "t\n.ic v(a)=\n",
      "t\n.model m d (is=1\n",
      "t\n.subckt\n",
      "t\nv1 a 0 ac\n",
      "t\nv1 a 0 ac 1 2 3\n",
      "t\nv1 a 0 pulse\n",
      "t\nx1 a b s params:\n",
      "t\nr1 a b '1k\n",
      "t\nr1 a b 1k}\n",
      "t\n.control\nrun\n",
      "t\n.options\n",
      "t\n.include \"unterminated\n",
      "t\nr1 a b (1+\n",
      "t\n+\n+\n",
      "t\n.\n",
      "t\nr\n",
      "\xEF\xBB\xBFt\nr1 a b 1\n",
  };
  for (const char* in : inputs) {
    CAPTURE(in);
    ParsedNetlist pn;
    Status st = parse_spice_string(in, "deck.cir", cat(), pn);
    for (const Diag& d : st.errors) {
      CHECK_FALSE(d.message.empty());
      CHECK(d.loc.valid());
    }
  }
  // Binary input: NUL bytes and high bytes give an error, never a hang or a crash.
  {
    std::string bin("t\nr1 a b 1k\n\x7f" "ELF\0\0\x01\xff\xfe(=\0,)\n", 24);
    ParsedNetlist pn;
    Status st = parse_spice_string(bin, "bin.cir", cat(), pn);
    REQUIRE_FALSE(st.ok());
    CHECK(st.errors[0].message == "unexpected NUL byte; is this a text netlist?");
    CHECK(st.errors[0].loc.line == 3);
    CHECK(st.errors[0].loc.col == 5);
  }
  // Random garbage never crashes.
  unsigned seed = 12345;
  for (int n = 0; n < 300; ++n) {
    std::string s = "t\n";
    for (int k = 0; k < 80; ++k) {
      seed = seed * 1103515245u + 12345u;
      s += static_cast<char>((seed >> 16) & 0xff);
    }
    ParsedNetlist pn;
    (void)parse_spice_string(s, "bytes.cir", cat(), pn);
  }
  const std::string alphabet = "rcvxd.0123456789 =(){}',;$*+\n\tabpulsedc";
  for (int n = 0; n < 300; ++n) {
    std::string s = "t\n";
    for (int k = 0; k < 60; ++k) {
      seed = seed * 1103515245u + 12345u;
      s += alphabet[(seed >> 16) % alphabet.size()];
    }
    ParsedNetlist pn;
    (void)parse_spice_string(s, "fuzz.cir", cat(), pn);
  }
}

TEST_CASE("spice parser: unbalanced .func calls are expanded in linear time; the expansion's work is bounded") {
  // Found by fuzz/fuzz_spice: each call without its ')' scanned to the end of the text again, so n of them took
  // ~n^2 steps; now the expansion stops at the first and leaves the text to the expression reader, which reports
  // it when the value is evaluated.
  std::string calls;
  for (int k = 0; k < 100000; ++k) calls += "f(";
  ParsedNetlist pn;
  const Status st = parse_spice_string("t\n.func f(x) = {x + 1}\nr1 a 0 {" + calls + "1}\n.op\n.end\n", "deck.cir",
                                       cat(), pn);
  CHECK(st.ok());
  // Expressions beyond 4 MB with function calls are refused at once, located (before, 2.5 million such calls took
  // ~10^12 steps).
  std::string many;
  for (int k = 0; k < 2500000; ++k) many += "f(";
  Diag d = parse_err("t\n.func f(x) = {x + 1}\nr1 a 0 {" + many + "1}\n.op\n.end\n");
  CHECK(d.loc.line == 3);
  CHECK(d.message.find("recursive .func") != std::string::npos);
}

TEST_CASE("spice parser: a .func whose body calls itself twice stops at a bounded expansion, located") {
  // Found by fuzz/fuzz_spice: every expansion pass doubled the calls (2^64 copies in 64 passes), a hang.
  Diag d = parse_err("t\n.func f(x) = {f(x) + f(x)}\nr1 a 0 {f(1k)}\n.op\n.end\n");
  CHECK(d.loc.line == 3);
  CHECK(d.message.find("recursive .func") != std::string::npos);
}

TEST_CASE("spice parser: past the error limit, .func calls are not expanded any more") {
  // Found profiling fuzz/fuzz_spice: every expression that calls such a .func costs megabytes of expansion before its
  // error, and each was expanded although only the first 20 errors are reported (3000 of them: 22 s, now 0.2 s),
  // each adding another "stopped after 20 errors".
  std::string deck = "t\n.func f(x) = {f(x) + f(x)}\n";
  for (int k = 0; k < 3000; ++k) deck += "r" + std::to_string(k) + " a 0 {f(1k)}\n";
  deck += ".op\n.end\n";
  ParsedNetlist pn;
  const Status st = parse_spice_string(deck, "deck.cir", cat(), pn);
  REQUIRE(st.errors.size() == 20);
  for (size_t k = 0; k < st.errors.size(); ++k) {
    CHECK(st.errors[k].loc.line == static_cast<int>(k) + 3);
    CHECK(st.errors[k].message.find("recursive .func") != std::string::npos);
  }
  CHECK(std::count(st.warnings.begin(), st.warnings.end(), "stopped after 20 errors") == 1);
}

// Device lines are queued and read in batches, on two threads from kTwoThreadItems lines (SpiceParser::flush): the
// same devices, errors and warnings, in the same order, as on one thread, with dot cards, continuation lines and
// subcircuit instances between them, a duplicate name, bad lines, warnings, and the error limit.
TEST_CASE("spice parser: a large deck reads the same on two threads as on one") {
  auto deck = [](int n, int bad_every) {
    std::string s = "big deck\n.subckt one a\nr1 a 0 1k\n.ends\n";
    for (int i = 0; i < n; ++i) {
      const std::string k = std::to_string(i);
      if (i == n / 3) s += ".endl\n";  // a flush in the middle, and a warning (see the end)
      if (i == n / 2) s += "xsub n" + k + " one\n";
      if (i == 2 * n / 3) s += "rcont n" + k + "\n+ 0 2k\n";  // a continuation line: read at once
      if (bad_every > 0 && i % bad_every == 1) s += "r_bad" + k + " n" + k + "\n";  // too few nodes
      if (i % 20000 == 11) s += "vw" + k + " w" + k + " 0 dc 1 distof1 0.1\n";       // a warning
      s += "r" + k + " n" + k + " n" + std::to_string(i + 1) + " 1k\n";
    }
    s += "r17 a b 1k\n";  // a duplicate of a line read long before
    return s + ".endl\n.op\n.end\n";  // (.endl warns, unless the error limit stopped the reader before it)
  };
  auto parse = [](const std::string& text, int threads, ParsedNetlist& pn) {
    test_support::OmpThreads limit(threads);
    return parse_spice_string(text, "big.cir", cat(), pn);
  };
  for (int bad_every : {0, 9999, 3}) {  // none, some, past the error limit
    CAPTURE(bad_every);
    const std::string text = deck(130000, bad_every);  // stretches of 43,000 lines between the flushes
    ParsedNetlist a, b;
    const Status sa = parse(text, 2, a), sb = parse(text, 1, b);
    REQUIRE(sa.errors.size() == sb.errors.size());
    for (size_t k = 0; k < sa.errors.size(); ++k) {
      CHECK(sa.errors[k].message == sb.errors[k].message);
      CHECK(sa.errors[k].loc.line == sb.errors[k].loc.line);
      CHECK(sa.errors[k].loc.col == sb.errors[k].loc.col);
    }
    CHECK(sa.warnings == sb.warnings);
    REQUIRE(a.devices.size() == b.devices.size());
    bool same = true;
    for (size_t k = 0; k < a.devices.size() && same; ++k) {
      const DeviceInstance &x = a.devices[k], &y = b.devices[k];
      same = x.name == y.name && x.type == y.type && x.nodes == y.nodes && x.model == y.model &&
             x.loc.line == y.loc.line && x.loc.col == y.loc.col && x.params.size() == y.params.size();
      for (size_t i = 0; same && i < x.params.size(); ++i)
        same = x.params[i].name == y.params[i].name && x.params[i].values.size() == y.params[i].values.size() &&
               (x.params[i].values.empty() || x.params[i].values[0].text == y.params[i].values[0].text);
      if (!same) FAIL_CHECK("device " << k << " (" << x.name << ") differs");
    }
    if (bad_every == 0) {
      REQUIRE(sa.errors.size() == 1);
      CHECK(sa.errors[0].message.find("duplicate device name 'r17'") == 0);
      REQUIRE(sa.warnings.size() == 9);
      CHECK(sa.warnings.back().find(".endl without a .lib section") != std::string::npos);
      CHECK(a.devices.size() == 130000 + 7 + 2);  // the rs, the vws, xsub and rcont
    }
    if (bad_every == 9999) CHECK(sa.errors.size() == 15);  // (14 bad lines and the duplicate)
    if (bad_every == 3) {  // the reader's error limit: it stops there, and reads no further line
      CHECK(sa.errors.size() == 20);
      for (const std::string& w : sa.warnings) CHECK(w.find(".endl") == std::string::npos);
    }
  }
}
