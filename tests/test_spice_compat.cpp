// SPICE compatibility suite: each deck in tests/compat/ uses the deck-structure and output cards of real-world
// decks (.lib sections, nested .subckt, .global, .func, .if, .save/.probe, .meas, ...). It is simulated by anasim
// in-process and by `ngspice -b -r`; analyses are paired by kind and order and compared on every shared signal
// (op/dc: 1e-6 relative; tran/ac: 1e-3 of the signal's range), the signal sets must be equal (what .save
// selects), and every .meas result must equal the one ngspice prints (dc/ac: 1e-6 relative plus the rounding
// of ngspice's printed digits; tran: 1e-3 of the measured quantity's range). A deck may list the warnings
// anasim must give ("* anasim-warns: <text>"); any other warning fails. ngspice must be on PATH.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <unistd.h>
#include "devices/registry.hpp"
#include "engine/measure.hpp"
#include "engine/parse.hpp"
#include "engine/rawfile.hpp"
#include "engine/simulate.hpp"
#include "tests/ngspice_helpers.hpp"

using namespace anasim;
namespace fs = std::filesystem;

namespace {

const fs::path kCompatDir = fs::path(ANASIM_SOURCE_DIR) / "tests" / "compat";

std::string kind_of(const std::string& plotname) {
  if (plotname.rfind("Operating Point", 0) == 0) return "op";
  if (plotname.rfind("DC transfer", 0) == 0) return "dc";
  if (plotname.rfind("Transient", 0) == 0) return "tran";
  if (plotname.rfind("AC Analysis", 0) == 0) return "ac";
  return plotname;
}

double interp(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (x <= xs.front()) return ys.front();
  if (x >= xs.back()) return ys.back();
  const size_t k = static_cast<size_t>(std::upper_bound(xs.begin(), xs.end(), x) - xs.begin());
  const double x0 = xs[k - 1], x1 = xs[k];
  return x1 == x0 ? ys[k] : ys[k - 1] + (ys[k] - ys[k - 1]) * (x - x0) / (x1 - x0);
}

// Differences found between anasim and ngspice on one deck, each naming the deck, analysis and signal.
using Differences = std::vector<std::string>;

// Compares analysis a with ngspice plot n; appends every difference to diffs and returns the number of signals
// compared. same_sets: the signal sets must be equal too (the suite's decks, where .save decides them; a public
// deck's ngspice has internal signals of its own).
int compare(const std::string& deck, const AnalysisResult& a, const RawPlot& n, bool same_sets, Differences& diffs) {
  const int first = a.kind == "op" ? 0 : 1;
  const int np = n.points();
  std::set<std::string> theirs, ours;
  for (int k = first; k < static_cast<int>(n.names.size()); ++k) theirs.insert(n.names[k]);
  for (const auto& s : a.signals) ours.insert(test::ngspice_signal_name(s.name));
  if (same_sets && ours != theirs)
    diffs.push_back(fmt::format("{} {}: anasim writes {{{}}}, ngspice {{{}}}", deck, a.group, fmt::join(ours, " "),
                                fmt::join(theirs, " ")));
  if ((a.kind == "dc" || a.kind == "ac") && a.rows() != np) {
    diffs.push_back(fmt::format("{} {}: {} rows, ngspice {}", deck, a.group, a.rows(), np));
    return 0;
  }
  int compared = 0;
  for (const auto& s : a.signals) {
    const int k = n.find(test::ngspice_signal_name(s.name));
    if (k < first) continue;
    ++compared;
    const double floor = s.unit == "A" ? 1e-12 : 1e-9;
    double worst = 0;
    int at = 0;
    if (a.kind == "op" || a.kind == "dc") {
      for (int p = 0; p < np; ++p) {
        const double r = std::fabs(s.re[p] - n.re[k][p]) / (1e-6 * std::fabs(n.re[k][p]) + floor);
        if (!(r <= worst)) worst = r, at = p;
      }
    } else if (a.kind == "tran") {
      const auto mm = std::minmax_element(n.re[k].begin(), n.re[k].end());
      const double tol = 1e-3 * (*mm.second - *mm.first) + floor;
      for (int p = 0; p < np; ++p) {
        const double r = std::fabs(interp(a.sweep, s.re, n.re[0][p]) - n.re[k][p]) / tol;
        if (!(r <= worst)) worst = r, at = p;
      }
    } else {
      double lo = INFINITY, hi = 0;
      for (int p = 0; p < np; ++p) {
        const double m = std::abs(std::complex<double>(n.re[k][p], n.im[k][p]));
        lo = std::min(lo, m), hi = std::max(hi, m);
      }
      const double tol = 1e-3 * (hi - lo) + floor;
      for (int p = 0; p < np; ++p) {
        const double e = std::max(std::fabs(s.re[p] - n.re[k][p]), std::fabs(s.im[p] - n.im[k][p]));
        if (!(e / tol <= worst)) worst = e / tol, at = p;
      }
    }
    if (!(worst <= 1.0)) diffs.push_back(fmt::format("{} {} {}: err/tol {} at point {}", deck, a.group, s.name, worst, at));
  }
  return compared;
}

// A .meas result as ngspice prints it: the value and half a unit of its last printed digit.
struct Printed {
  double value = 0;
  double half_digit = 0;
};

// The .meas results ngspice prints: "name   =  value ..." lines of the log.
std::map<std::string, Printed> ngspice_measures(const fs::path& log) {
  std::map<std::string, Printed> out;
  std::ifstream in(log);
  const std::regex line(R"(^([a-z_][a-z0-9_]*)\s+=\s+([-+]?[0-9]\.?([0-9]*)e([-+][0-9]+))(\s.*)?$)");
  std::smatch m;
  for (std::string s; std::getline(in, s);)
    if (std::regex_match(s, m, line))
      out[m[1]] = Printed{std::stod(m[2]), 0.5 * std::pow(10.0, std::stoi(m[4]) - static_cast<int>(m[3].length()))};
  return out;
}

// Compares anasim's .meas results of analysis a with ngspice's printed ones; appends every difference to diffs.
void compare_measures(const std::string& deck, const AnalysisResult& a, const std::map<std::string, Printed>& ng,
                      Differences& diffs) {
  for (const MeasureResult& m : a.measures) {
    const auto it = ng.find(m.name);
    if (it == ng.end()) {
      if (m.error.empty())
        diffs.push_back(fmt::format("{}: .meas {} = {} in anasim, failed in ngspice", deck, m.name, m.value));
      continue;
    }
    if (!m.error.empty()) {
      diffs.push_back(fmt::format("{}: .meas {} failed in anasim ({}), ngspice {}", deck, m.name, m.error,
                                  it->second.value));
      continue;
    }
    const double n = it->second.value;
    double tol;
    if (a.kind == "tran") {  // 1e-3 of the range the quantity lives in: the time span, or the signals' range
      double range = 0;
      if (m.unit == "s") {
        range = a.sweep.back() - a.sweep.front();
      } else {
        for (const Signal& s : a.signals) {
          if (m.unit.rfind(s.unit, 0) != 0) continue;
          const auto mm = std::minmax_element(s.re.begin(), s.re.end());
          range = std::max(range, *mm.second - *mm.first);
        }
        if (m.unit.find("*s") != std::string::npos) range *= a.sweep.back() - a.sweep.front();
      }
      tol = 1e-3 * std::max(range, std::fabs(n));
    } else {  // ngspice prints 6 or 7 significant digits: their rounding on top of 1e-6 relative
      tol = 1e-6 * std::fabs(n) + it->second.half_digit;
    }
    if (!(std::fabs(m.value - n) <= tol))
      diffs.push_back(fmt::format("{}: .meas {} = {:.9g} in anasim, {:.9g} in ngspice (tol {})", deck, m.name, m.value,
                                  n, tol));
  }
}

// For a deck with a .control script: the deck as ngspice should run it here, its script writing every plot it
// makes to `raw` (set appendwrite, then write after each op/dc/tran/ac/run) and without the commands that write
// files or open plot windows; empty when the deck has no .control block.
std::string control_copy(const fs::path& deck, const fs::path& raw) {
  std::ifstream in(deck);
  std::string out, line;
  bool control = false, any = false;
  while (std::getline(in, line)) {
    std::string low = line;
    std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
    const size_t b = low.find_first_not_of(" \t");
    const std::string word = b == std::string::npos ? "" : low.substr(b, low.find_first_of(" \t\r", b) - b);
    if (word == ".control") {
      control = any = true;
      out += line + "\nset appendwrite\n";
      continue;
    }
    if (word == ".endc") control = false;
    if (control && (word == "write" || word == "wrdata" || word == "plot" || word == "gnuplot" || word == "hardcopy"))
      continue;
    out += line + "\n";
    if (control && (word == "op" || word == "dc" || word == "tran" || word == "ac" || word == "run"))
      out += fmt::format("write '{}'\n", raw.string());
  }
  return any ? out : std::string();
}

// What one deck gave in anasim and ngspice.
struct DeckOutcome {
  std::string blocked;        // anasim's error when it stopped (parse, elaboration or simulation), else empty
  std::string ngspice_error;  // set when ngspice failed or wrote no plot: nothing to compare with
  Differences differences;    // everything that differs: signals, signal sets, .meas results, warnings
  int compared = 0;           // signals compared, over every analysis
};

// The warnings a deck lists in "* anasim-warns: <text>" lines, each to be given, and no other (check_warnings).
void compare_warnings(const fs::path& deck, const std::vector<std::string>& warnings, Differences& diffs) {
  const std::string name = deck.filename().string();
  std::vector<std::string> expected;
  std::ifstream in(deck);
  for (std::string s; std::getline(in, s);)
    if (s.rfind("* anasim-warns: ", 0) == 0) expected.push_back(s.substr(16));
  for (const std::string& w : warnings) {
    bool listed = false;
    for (const std::string& e : expected) listed = listed || w.find(e) != std::string::npos;
    if (!listed) diffs.push_back(fmt::format("{}: unexpected warning: {}", name, w));
  }
  for (const std::string& e : expected) {
    bool given = false;
    for (const std::string& w : warnings) given = given || w.find(e) != std::string::npos;
    if (!given) diffs.push_back(fmt::format("{}: expected a warning containing '{}'", name, e));
  }
}

// Runs deck through anasim (in-process) and ngspice, and compares them. suite: the deck's warnings must be the
// ones it lists and the signal sets must be equal (the suite's decks); for a public deck, neither is compared.
DeckOutcome run_deck(const fs::path& deck, bool suite) {
  DeckOutcome out;
  const std::string name = deck.filename().string();
  ParsedNetlist pn;
  Status st = parse_netlist(deck.string(), builtin_catalog(), pn);
  FlatNetlist fn;
  if (st.ok()) {
    Status est = elaborate(pn, builtin_catalog(), fn);
    st.warnings.insert(st.warnings.end(), est.warnings.begin(), est.warnings.end());
    st.errors = est.errors;
  }
  if (!st.ok()) {
    out.blocked = st.errors[0].to_string();
    return out;
  }
  if (suite) compare_warnings(deck, st.warnings, out.differences);
  RunResults res;
  const Status sst = simulate(fn, builtin_catalog(), res);
  if (!sst.ok()) {
    out.blocked = sst.errors[0].to_string();
    return out;
  }
  if (res.analyses.empty()) {
    out.blocked = "no analysis";
    return out;
  }

  const fs::path dir = test::scratch_dir("compat_" + deck.stem().string());
  const fs::path raw = dir / "ngspice.raw", log = dir / "ngspice.log", script_raw = dir / "control.raw";
  // A deck with a .control script runs in ngspice as written, from a copy that writes each analysis's plot as it
  // is made (control_copy); run in the deck's directory, so that its .include files are found.
  fs::path run = deck, cwd = dir;
  if (std::string copy = control_copy(deck, script_raw); !copy.empty()) {
    run = dir / ("ctl_" + deck.filename().string());
    std::ofstream(run) << copy;
    cwd = fs::absolute(deck).parent_path();
  }
  const std::string cmd =
      fmt::format("cd '{0}' && env -u SPICE_ASCIIRAWFILE HOME='{4}' timeout 120 ngspice -b -r '{1}' '{2}' > '{3}' 2>&1",
                  cwd.string(), raw.string(), run.string(), log.string(), dir.string());
  std::vector<RawPlot> plots, script;  // the batch run's plots (-r), the script's (in the order it ran them)
  if (std::system(cmd.c_str()) != 0) {
    out.ngspice_error = "ngspice failed, see " + log.string();
    return out;
  }
  if (fs::exists(script_raw))
    if (const Status rst = read_spice_raw(script_raw.string(), script); !rst.ok()) {
      out.ngspice_error = rst.to_string();
      return out;
    }
  if (fs::exists(raw) || script.empty())
    if (const Status rst = read_spice_raw(raw.string(), plots); !rst.ok()) {
      out.ngspice_error = rst.to_string();
      return out;
    }
  // ngspice writes a saved @device[name] as i(@...) or v(@...) by its kind: compared under its own name.
  for (auto* ps : {&plots, &script})
    for (auto& p : *ps)
      for (std::string& nm : p.names)
        if (nm.size() > 3 && nm[1] == '(' && nm[2] == '@' && nm.back() == ')') nm = nm.substr(2, nm.size() - 3);
  // ngspice 39 writes its -r plots grouped by kind, each kind in reverse deck order.
  std::map<std::string, std::vector<const RawPlot*>> by_kind;
  for (const auto& p : plots) by_kind[kind_of(p.plotname)].push_back(&p);
  if (res.analyses.size() != plots.size() + script.size())
    out.differences.push_back(fmt::format("{}: {} analyses, ngspice {} plots", name, res.analyses.size(),
                                          plots.size() + script.size()));
  std::map<std::string, size_t> used;
  // ngspice -r writes the raw file but runs no .meas: the measurements come from a second run without it.
  std::map<std::string, Printed> measures;
  if (!pn.measures.empty()) {
    const fs::path mlog = dir / "ngspice_meas.log";
    const std::string mcmd = fmt::format("cd '{0}' && HOME='{3}' timeout 120 ngspice -b '{1}' > '{2}' 2>&1",
                                         cwd.string(), run.string(), mlog.string(), dir.string());
    if (std::system(mcmd.c_str()) != 0) {
      out.ngspice_error = "ngspice failed, see " + mlog.string();
      return out;
    }
    measures = ngspice_measures(mlog);
  }
  for (size_t k = 0; k < res.analyses.size(); ++k) {
    const AnalysisResult& a = res.analyses[k];
    const RawPlot* n = nullptr;
    if (k < script.size()) {  // the script's analyses come first, in the order it ran them
      if (kind_of(script[k].plotname) == a.kind) n = &script[k];
    } else {
      const auto& same = by_kind[a.kind];
      const size_t idx = used[a.kind]++;
      if (idx < same.size()) n = same[same.size() - 1 - idx];
    }
    if (!n) {
      out.differences.push_back(fmt::format("{}: no ngspice plot for {}", name, a.group));
      continue;
    }
    out.compared += compare(name, a, *n, suite, out.differences);
    compare_measures(name, a, measures, out.differences);
  }
  // Each measurement runs on every analysis of its kind (a .control `run` runs the dot analyses once more).
  size_t ours = 0, expected = 0;
  for (const auto& a : res.analyses) ours += a.measures.size();
  for (const MeasureSpec& m : pn.measures)
    expected += std::max<size_t>(1, std::count_if(res.analyses.begin(), res.analyses.end(),
                                                  [&](const AnalysisResult& a) { return a.kind == m.analysis; }));
  if (ours != expected)
    out.differences.push_back(fmt::format("{}: {} of {} measurements run", name, ours, expected));
  std::error_code ec;
  if (out.differences.empty()) fs::remove_all(dir, ec);
  return out;
}

ParsedNetlist parse_text(const std::string& text, Status& st) {
  ParsedNetlist pn;
  st = parse_spice_string(text, "compat_test.cir", builtin_catalog(), pn);
  return pn;
}

}  // namespace

TEST_CASE("spice compat: tests/compat/*.cir against ngspice") {
  std::vector<fs::path> decks;
  for (const auto& e : fs::directory_iterator(kCompatDir))
    if (e.path().extension() == ".cir") decks.push_back(e.path());
  std::sort(decks.begin(), decks.end());
  CHECK(decks.size() >= 9);
  REQUIRE_MESSAGE(test::ngspice_available(), "ngspice is not on PATH: the compatibility suite cannot run");
  for (const auto& deck : decks) {
    SUBCASE(deck.filename().string().c_str()) {
      const DeckOutcome o = run_deck(deck, true);
      REQUIRE_MESSAGE(o.blocked.empty(), o.blocked);
      REQUIRE_MESSAGE(o.ngspice_error.empty(), o.ngspice_error);
      for (const std::string& d : o.differences) FAIL_CHECK(d);
    }
  }
}

TEST_CASE("spice compat: public ngspice decks (tests/compat/ngspice/) against ngspice") {
  std::vector<fs::path> decks;
  for (const auto& e : fs::directory_iterator(kCompatDir / "ngspice"))
    if (e.path().extension() == ".cir" || e.path().extension() == ".sp" || e.path().extension() == ".deck")
      decks.push_back(e.path());
  std::sort(decks.begin(), decks.end());
  CHECK(decks.size() >= 8);
  REQUIRE_MESSAGE(test::ngspice_available(), "ngspice is not on PATH: the compatibility suite cannot run");
  for (const auto& deck : decks) {
    SUBCASE(deck.filename().string().c_str()) {
      const DeckOutcome o = run_deck(deck, false);
      REQUIRE_MESSAGE(o.blocked.empty(), o.blocked);
      REQUIRE_MESSAGE(o.ngspice_error.empty(), o.ngspice_error);
      for (const std::string& d : o.differences) FAIL_CHECK(d);
      CHECK(o.compared > 0);
    }
  }
}

// The survey of public decks (tests/compat/survey.py): runs the deck named by ANASIM_COMPAT_DECK and prints one
// line "survey: match|different|blocked|ngspice-failed: detail". Skipped (passes) when the variable is not set.
TEST_CASE("spice compat: survey one public deck") {
  const char* deck = std::getenv("ANASIM_COMPAT_DECK");
  if (deck == nullptr) return;
  const DeckOutcome o = run_deck(deck, false);
  std::string line;
  if (!o.blocked.empty()) line = "blocked: " + o.blocked.substr(0, o.blocked.find('\n'));
  else if (!o.ngspice_error.empty()) line = "ngspice-failed: " + o.ngspice_error;
  else if (!o.differences.empty()) line = "different: " + fmt::format("{}", fmt::join(o.differences, " | "));
  else line = "match:";
  std::replace(line.begin(), line.end(), '\n', ' ');
  fmt::print("survey: {}\n", line);
}

TEST_CASE("spice compat: .meas DERIV (not in ngspice 39) against the analytic slope") {
  // v(out) = 2 t^2 + t: the slope of the chord holding t = 0.5 ms is 4 t + 1 to within the step.
  Status st;
  ParsedNetlist pn = parse_text("deriv\nb1 out 0 v = 2*time*time*1e6 + time*1e3\nr1 out 0 1k\n.tran 1u 1m\n"
                                ".meas tran d1 deriv v(out) at=0.5m\n"
                                ".meas tran d2 deriv v(out) when v(out)=1\n.end\n",
                                st);
  REQUIRE(st.ok());
  FlatNetlist fn;
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  RunResults r;
  REQUIRE(simulate(fn, builtin_catalog(), r).ok());
  REQUIRE(r.analyses[0].measures.size() == 2);
  CHECK(r.analyses[0].measures[0].value == doctest::Approx(4 * 0.5e3 + 1e3).epsilon(1e-2));
  CHECK(r.analyses[0].measures[0].unit == "V/s");
  // v = 1 at 2e6 t^2 + 1e3 t = 1: t = 0.5 ms, slope 3e3 V/s
  CHECK(r.analyses[0].measures[1].value == doctest::Approx(3e3).epsilon(1e-2));
}

TEST_CASE("spice compat: located errors of the structure and output cards") {
  struct Case {
    const char* deck;
    const char* message;  // part of the error
    int line;
  };
  const Case cases[] = {
      {"t\n.lib 'nofile.lib' tt\n", "cannot open library file", 2},
      {"t\n.if (1)\nr1 a 0 1\n", "missing .endif", 2},
      {"t\n.else\n", ".else without a matching .if", 2},
      {"t\n.if (nosuch > 1)\n.endif\n", "nosuch", 2},
      {"t\n.func f(x) = x*2\nr1 a 0 {f(1, 2)}\n", "takes 1 argument(s), got 2", 3},
      {"t\n.func f(x\n", "expected ')'", 2},
      {"t\n.meas tran\n", "missing the result name", 2},
      {"t\n.meas tran t1 foo v(x)\n", "unknown .meas function 'foo'", 2},
      {"t\n.meas tran t1 trig v(a) val=1 rise=1\n", "TRIG needs a TARG", 2},
      {"t\n.meas tran t1 find v(a)\n", "FIND needs AT=", 2},
      {"t\n.meas tran t1 when v(a)\n", "expected '='", 2},
      {"t\n.meas tran t1 avg v(a) bogus=1\n", "unexpected 'bogus'", 2},
      {"t\n.meas op t1 avg v(a)\n", "not supported", 2},
      {"t\n.save @r1[i]\n", "no top-level device 'r1'", 2},
      {"t\nr1 a 0 1k\n.save v(a)\n.save @r1[nosuch]\n", "resistor 'r1' has no parameter 'nosuch' to read", 4},
      {"t\nv1 a 0 1\n.meas dc m1 max @v1[p]\n", "has no parameter 'p'", 3},
      {"t\nr1 a 0 1k\n.save @r1i]\n", "is not a device reference", 3},
      {"t\n.save v(a) i(r1)\nr1 a 0 1k\n", "resistor 'r1' has no branch current to save", 2},
      {"t\n.save i(r1)\nr1 a 0 1k\n", "save @r1[i] (ngspice's device current) instead", 2},
      {"t\nd1 a 0 dm\n.model dm d\n.probe i(d1)\n", "diode 'd1' has no branch current", 4},
      {"t\n.save vdb(x)\n", "only v(<node>)", 2},
      {"t\n.subckt a p\n.subckt b q\n.ends b\n", "missing .ends for .subckt 'a'", 2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.deck);
    Status st;
    parse_text(c.deck, st);
    REQUIRE_FALSE(st.ok());
    CHECK(st.errors[0].message.find(c.message) != std::string::npos);
    CHECK(st.errors[0].loc.line == c.line);
  }
}

TEST_CASE("spice compat: .lib sections, nested .subckt scoping, .global and .if in the parsed netlist") {
  const fs::path dir = test::scratch_dir("compat_lib");
  {
    std::ofstream lib(dir / "m.lib");
    lib << "* lib\n.lib a\n.param pa=1\n.endl a\n.lib b\n.param pb=2\n.lib 'm.lib' a\n.endl b\n";
    std::ofstream deck(dir / "d.cir");
    deck << "t\n.lib 'm.lib' b\n.global g1\n.param x=2\n.if (x == 1)\nr1 a 0 1\n.elseif (x == 2)\nr2 a 0 2\n"
            ".if (x > 5)\nr3 a 0 3\n.else\nr4 a 0 4\n.endif\n.else\nr5 a 0 5\n.endif\n"
            ".subckt o p\n.subckt i q\nr1 q g1 1\n.ends\nx1 p i\n.ends o\n.subckt i q\nr9 q 0 9\n.ends\n"
            "x1 n o\nx2 n i\nv1 n 0 1\n.op\n.end\n";
  }
  ParsedNetlist pn;
  const Status st = parse_netlist((dir / "d.cir").string(), builtin_catalog(), pn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  std::vector<std::string> params, devices, subckts;
  for (const auto& p : pn.params) params.push_back(p.name);
  for (const auto& d : pn.devices) devices.push_back(d.name);
  for (const auto& s : pn.subckts) subckts.push_back(s.name);
  CHECK(params == std::vector<std::string>{"pb", "pa", "x"});
  CHECK(devices == std::vector<std::string>{"r2", "r4", "x1", "x2", "v1"});
  CHECK(subckts == std::vector<std::string>{"o", "o/i", "i"});
  CHECK(pn.subckts[0].devices[0].model == "o/i");  // x1 inside o names o's own i
  CHECK(pn.devices[3].model == "i");               // the top level names the top-level i
  FlatNetlist fn;
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  CHECK(std::find(fn.node_names.begin(), fn.node_names.end(), "g1") != fn.node_names.end());  // not x1.x1.g1
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("spice compat: YAML measure: and outputs: as .meas and .save") {
  const char* yaml = R"(title: yaml meas
devices:
  - {name: v1, type: v, nodes: [in, 0], dc: 0}
  - {name: r1, type: r, nodes: [in, out], r: 1k}
  - {name: r2, type: r, nodes: [out, 0], r: 3k}
analyses:
  - {type: dc, sweeps: [{source: v1, start: 0, stop: 4, step: 0.5}]}
outputs: [i(v1)]
measure:
  - dc vx when v(out)=1.5
  - dc vmax max v(out)
)";
  ParsedNetlist pn;
  const Status st = parse_yaml_string(yaml, "m.yaml", builtin_catalog(), pn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(pn.measures.size() == 2);
  CHECK(pn.outputs == std::vector<std::string>{"i(v1)", "v(out)"});  // v(out) kept for the measurements
  FlatNetlist fn;
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  RunResults r;
  REQUIRE(simulate(fn, builtin_catalog(), r).ok());
  REQUIRE(r.analyses[0].measures.size() == 2);
  CHECK(r.analyses[0].measures[0].value == doctest::Approx(2.0));
  CHECK(r.analyses[0].measures[1].value == doctest::Approx(3.0));
  ParsedNetlist bad;
  const Status bst = parse_yaml_string("title: t\nmeasure:\n  - tran t1 foo v(x)\n", "b.yaml", builtin_catalog(), bad);
  REQUIRE_FALSE(bst.ok());
  CHECK(bst.errors[0].loc.line == 3);
}
