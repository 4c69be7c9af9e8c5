// Cross-check against ngspice 39: each deck in tests/crosscheck/ is simulated in-process by anasim and by
// `ngspice -b -r`, the analyses are paired by kind and order, and every node voltage and branch current the
// two share is compared (op/dc pointwise; tran/ac on ngspice's own grid, anasim interpolated linearly).
// ngspice must be on PATH: without it the cross-check fails rather than skips (CI installs it).
// Set ANASIM_XC_VERBOSE=1 to print the per-signal worst errors of passing decks too.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <unistd.h>
#include "devices/registry.hpp"
#include "engine/output.hpp"
#include "engine/rawfile.hpp"
#include "engine/simulate.hpp"
#include "circuit_helpers.hpp"
#include "ngspice_helpers.hpp"
#include "test_support.hpp"

using namespace anasim;
namespace fs = std::filesystem;

namespace {

const fs::path kDeckDir = fs::path(ANASIM_SOURCE_DIR) / "tests" / "crosscheck";

// Tolerances. op/dc: |a - n| <= kRel * |n| + abs (kAbsV for voltages, kAbsI for currents).
// tran/ac: |a - n| <= kWave * range + abs, range = max - min of the ngspice waveform (of |H| for ac);
// the absolute floor only matters for signals that are constant over the whole analysis.
constexpr double kRel = 1e-6;
constexpr double kAbsV = 1e-9;   // [V]
constexpr double kAbsI = 1e-12;  // [A]
constexpr double kWave = 1e-3;

bool ngspice_on_path() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / "ngspice";
    if (::access(p.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string kind_of_plot(const std::string& plotname) {
  if (plotname.rfind("Operating Point", 0) == 0) return "op";
  if (plotname.rfind("DC transfer", 0) == 0) return "dc";
  if (plotname.rfind("Transient", 0) == 0) return "tran";
  if (plotname.rfind("AC Analysis", 0) == 0) return "ac";
  return plotname;
}

// ngspice's name for an anasim signal: "i(x1.v1)" -> "i(v.x1.v1)"; node voltages are spelled alike.
std::string ngspice_name(const std::string& sig) {
  if (sig.rfind("i(", 0) != 0) return sig;
  const std::string dev = sig.substr(2, sig.size() - 3);
  const size_t dot = dev.rfind('.');
  const std::string leaf = dot == std::string::npos ? dev : dev.substr(dot + 1);
  return "i(" + spice_instance_name(std::string(1, leaf[0]), dev) + ")";
}

// Linear interpolation of (xs, ys) at x; xs ascending. Outside the range: the end values.
double interp(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (x <= xs.front()) return ys.front();
  if (x >= xs.back()) return ys.back();
  const size_t k = static_cast<size_t>(std::upper_bound(xs.begin(), xs.end(), x) - xs.begin());  // xs[k-1] <= x < xs[k]
  const double x0 = xs[k - 1], x1 = xs[k];
  if (x1 == x0) return ys[k];
  return ys[k - 1] + (ys[k] - ys[k - 1]) * (x - x0) / (x1 - x0);
}

// Worst error of one signal over one analysis.
struct SignalError {
  std::string name;
  double err = 0;     // |anasim - ngspice| at the worst point [V or A]
  double tol = 0;     // allowed error at that point
  double at = 0;      // sweep value (time [s], frequency [Hz], inner source value) of the worst point
  int point = 0;      // ngspice point index of the worst point
  double ratio() const { return tol > 0 ? err / tol : (err > 0 ? INFINITY : 0); }
};

struct PairReport {
  std::vector<std::string> problems;   // structural mismatches (missing signals, grids)
  std::vector<SignalError> signals;
  std::vector<std::string> anasim_only;  // anasim outputs that ngspice does not write (not compared)
  bool ok() const {
    if (!problems.empty()) return false;
    for (const auto& s : signals)
      if (!(s.ratio() <= 1.0)) return false;
    return true;
  }
  double worst_ratio() const {
    double w = 0;
    for (const auto& s : signals) w = std::max(w, s.ratio());
    return w;
  }
};

std::string format_report(const std::string& title, const PairReport& r) {
  std::string out = fmt::format("{}: worst err/tol = {:.3g}\n", title, r.worst_ratio());
  for (const auto& p : r.problems) out += "  PROBLEM: " + p + "\n";
  for (const auto& s : r.signals)
    out += fmt::format("  {:<22} err {:<10.3g} tol {:<10.3g} err/tol {:<8.3g} at {:.6g} (point {}){}\n", s.name, s.err,
                       s.tol, s.ratio(), s.at, s.point, s.ratio() <= 1.0 ? "" : "   <-- FAIL");
  if (!r.anasim_only.empty()) out += fmt::format("  not in ngspice (not compared): {}\n", fmt::join(r.anasim_only, " "));
  return out;
}


// Compares one anasim analysis with the matching ngspice plot.
PairReport compare(const AnalysisResult& a, const RawPlot& n) {
  PairReport r;
  const bool sweep = a.kind != "op";
  const int first = sweep ? 1 : 0;  // ngspice variable 0 is the scale except for op
  const int np = n.points();

  // Every node voltage and branch current ngspice writes must be among anasim's outputs (device-internal
  // nodes excepted).
  std::vector<bool> matched(n.names.size(), false);
  for (const auto& s : a.signals) {
    const int k = n.find(ngspice_name(s.name));
    if (k >= first) matched[k] = true;
  }
  for (int k = first; k < static_cast<int>(n.names.size()); ++k) {
    const std::string& nm = n.names[k];
    if (matched[k] || nm.find('#') != std::string::npos) continue;
    r.problems.push_back(fmt::format("ngspice has {} '{}', anasim does not output it",
                                     n.types[k] == "current" ? "branch current" : "node voltage", nm));
  }

  // Scales must agree where they are not interpolated.
  if (a.kind == "op" && np != 1) r.problems.push_back(fmt::format("ngspice op plot has {} points", np));
  if (a.kind == "dc" || a.kind == "ac") {
    if (a.rows() != np) {
      r.problems.push_back(fmt::format("{} has {} points in anasim, {} in ngspice", a.kind, a.rows(), np));
      return r;
    }
    double scale = 0;  // sweep values agree to 1e-9 of the largest one (ngspice accumulates dc steps)
    for (int p = 0; p < np; ++p) scale = std::max(scale, std::fabs(n.re[0][p]));
    for (int p = 0; p < np; ++p) {
      if (!(std::fabs(a.sweep[p] - n.re[0][p]) <= 1e-9 * scale)) {
        r.problems.push_back(fmt::format("{} point {}: anasim sweep value {:.12g}, ngspice {:.12g}", a.kind, p,
                                         a.sweep[p], n.re[0][p]));
        return r;
      }
    }
  }
  if (a.kind == "tran") {
    if (a.rows() < 2 || np < 2) {
      r.problems.push_back(fmt::format("tran has {} points in anasim, {} in ngspice", a.rows(), np));
      return r;
    }
    const double ta = a.sweep.back(), tn = n.re[0].back();
    // ngspice omits the t = 0 point of a uic transient, so anasim's span need only cover ngspice's.
    if (!(std::fabs(ta - tn) <= 1e-9 * tn) || a.sweep.front() > n.re[0].front())
      r.problems.push_back(fmt::format("tran spans [{:.6g}, {:.6g}] s in anasim, [{:.6g}, {:.6g}] s in ngspice",
                                       a.sweep.front(), ta, n.re[0].front(), tn));
  }

  int compared = 0;
  for (const auto& s : a.signals) {
    const int k = n.find(ngspice_name(s.name));
    if (k < first) {
      r.anasim_only.push_back(s.name);
      continue;
    }
    ++compared;
    const bool is_current = s.unit == "A";
    const double abs_floor = is_current ? kAbsI : kAbsV;
    SignalError e;
    e.name = s.name;
    e.tol = abs_floor;
    bool first_point = true;
    auto consider = [&](double err, double tol, double at, int p) {  // keeps the point with the largest err/tol
      if (first_point || !(err / tol <= e.err / e.tol)) {
        e.err = err;
        e.tol = tol;
        e.at = at;
        e.point = p;
        first_point = false;
      }
    };
    if (a.kind == "op" || a.kind == "dc") {
      for (int p = 0; p < np; ++p) {
        const double ref = n.re[k][p];
        consider(std::fabs(s.re[p] - ref), kRel * std::fabs(ref) + abs_floor, sweep ? n.re[0][p] : 0.0, p);
      }
    } else if (a.kind == "tran") {
      const auto mm = std::minmax_element(n.re[k].begin(), n.re[k].end());
      const double tol = kWave * (*mm.second - *mm.first) + abs_floor;
      for (int p = 0; p < np; ++p) {
        const double t = n.re[0][p];
        consider(std::fabs(interp(a.sweep, s.re, t) - n.re[k][p]), tol, t, p);
      }
    } else {  // ac: real and imaginary parts, relative to the range of |H|
      double lo = INFINITY, hi = 0;
      for (int p = 0; p < np; ++p) {
        const double m = std::abs(std::complex<double>(n.re[k][p], n.im[k][p]));
        lo = std::min(lo, m);
        hi = std::max(hi, m);
      }
      const double tol = kWave * (hi - lo) + abs_floor;
      for (int p = 0; p < np; ++p) {
        const double f = n.re[0][p];
        const double dre = std::fabs(interp(a.sweep, s.re, f) - n.re[k][p]);
        const double dim = std::fabs(interp(a.sweep, s.im, f) - n.im[k][p]);
        consider(std::max(dre, dim), tol, f, p);
      }
    }
    r.signals.push_back(e);
  }
  if (compared == 0) r.problems.push_back("no signal in common with ngspice");
  return r;
}

// Runs one deck through both simulators and checks every paired analysis. Failures are reported with
// FAIL_CHECK (no exceptions), so one broken deck does not stop the others.
void crosscheck(const fs::path& deck) {
  const std::string deck_name = deck.filename().string();
  RunResults res;
  const Status st = simulate_file(deck.string(), builtin_catalog(), res);
  if (!st.ok()) {
    FAIL_CHECK("anasim failed on " << deck_name << ":\n" << st.to_string());
    return;
  }
  // A warning means anasim ignored part of the deck, so the two simulators would not see the same circuit.
  for (const auto& w : st.warnings) FAIL_CHECK(deck_name << ": anasim warning: " << w);

  const fs::path dir = test_support::scratch_dir("crosscheck", deck.stem().string());
  const fs::path raw = dir / "ngspice.raw", log = dir / "ngspice.log";
  // HOME points at the scratch directory so that no user ~/.spiceinit changes ngspice's options.
  const std::string cmd =
      fmt::format("cd '{0}' && env -u SPICE_ASCIIRAWFILE HOME='{0}' ngspice -b -r '{1}' '{2}' > '{3}' 2>&1",
                  dir.string(), raw.string(), deck.string(), log.string());
  if (std::system(cmd.c_str()) != 0) {
    FAIL_CHECK("ngspice failed on " << deck_name << ", see " << log.string());
    return;
  }
  std::vector<RawPlot> plots;
  if (const Status rst = read_spice_raw(raw.string(), plots); !rst.ok()) {
    FAIL_CHECK(deck_name << ": " << rst.to_string());
    return;
  }

  // Pair by kind and order. ngspice 39 writes its plots grouped AC, DC, OP, TRAN whatever the deck order,
  // and within one kind in reverse deck order: the k-th anasim analysis of a kind (of n) pairs with the
  // (n-1-k)-th ngspice plot of that kind.
  std::map<std::string, std::vector<const RawPlot*>> by_kind;
  for (const auto& p : plots) by_kind[kind_of_plot(p.plotname)].push_back(&p);
  std::map<std::string, size_t> used;
  bool all_ok = res.analyses.size() == plots.size();
  CHECK_MESSAGE(res.analyses.size() == plots.size(),
                deck_name << ": anasim ran " << res.analyses.size() << " analyses, ngspice wrote " << plots.size()
                          << " plots");
  std::string report;
  for (const auto& a : res.analyses) {
    const size_t idx = used[a.kind]++;
    const auto it = by_kind.find(a.kind);
    if (it == by_kind.end() || idx >= it->second.size()) {
      FAIL_CHECK(deck_name << ": anasim analysis '" << a.group << "' has no matching ngspice plot");
      all_ok = false;
      continue;
    }
    const auto& same_kind = it->second;
    const PairReport r = compare(a, *same_kind[same_kind.size() - 1 - idx]);
    const std::string text = format_report(fmt::format("{} {}", deck_name, a.group), r);
    report += text;
    CHECK_MESSAGE(r.ok(), text);
    all_ok = all_ok && r.ok();
  }
  if (std::getenv("ANASIM_XC_VERBOSE")) MESSAGE(report);
  if (all_ok) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  } else {
    MESSAGE("ngspice output of " << deck_name << " in " << dir.string() << " (kept with ANASIM_KEEP_SCRATCH=1)");
  }
}

}  // namespace

// One subcase per deck (select one with -sc="<deck>.cir").
TEST_CASE("crosscheck: anasim against ngspice on tests/crosscheck/*.cir") {
  std::vector<fs::path> decks;
  for (const auto& e : fs::directory_iterator(kDeckDir))
    if (e.path().extension() == ".cir") decks.push_back(e.path());
  std::sort(decks.begin(), decks.end());
  CHECK(decks.size() >= 14);
  if (!ngspice_on_path()) {
    FAIL_CHECK("ngspice is not on PATH: the ngspice cross-check cannot run (install ngspice 39)");
    return;
  }
  for (const auto& deck : decks) {
    SUBCASE(deck.filename().string().c_str()) { crosscheck(deck); }
  }
}

TEST_CASE("crosscheck: ngspice reads anasim's raw file (anasim run -r) and writes back the same values") {
  if (!test::ngspice_available()) {
    MESSAGE("ngspice not found on PATH: skipped");
    return;
  }
  const auto dir = test::scratch_dir("rawload");
  const std::string deck = "raw round trip\nv1 in 0 pulse(0 1 0 10n 10n 300n 600n)\nr1 in a 1k\nc1 a 0 100p\n"
                           ".op\n.tran 1n 1u\n.end\n";
  const RunResults r = test::run_deck(deck);
  REQUIRE(write_raw(r, (dir / "anasim.raw").string()).ok());
  std::ofstream(dir / "load.cir") << "load and write back\n.control\nset filetype=binary\nload anasim.raw\n"
                                     "write back.raw\n.endc\n.end\n";
  const std::string cmd = fmt::format("cd '{0}' && HOME='{0}' ngspice -b load.cir > load.log 2>&1", dir.string());
  // (ngspice exits with 1 here: a deck of control lines only is "an incomplete or empty netlist" to it; it runs the
  // control block all the same)
  const int rc = std::system(cmd.c_str());
  INFO("ngspice exit status " << rc << ", log " << (dir / "load.log").string());
  std::vector<RawPlot> back;
  const Status st = read_spice_raw((dir / "back.raw").string(), back);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(back.size() == 1);  // the current plot: the transient, loaded last
  const AnalysisResult& tran = r.analyses.at(1);
  const RawPlot& p = back[0];
  CHECK(p.plotname == "Transient Analysis");
  REQUIRE(p.find("time") >= 0);
  CHECK(p.re[p.find("time")] == tran.sweep);
  for (const Signal& s : tran.signals) {
    CAPTURE(s.name);
    const int v = p.find(s.name);
    REQUIRE(v >= 0);
    CHECK(p.re[v] == s.re);  // bit for bit: both files hold the doubles
  }
}
