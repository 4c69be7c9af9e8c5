// Every example netlist (data/examples/*.yaml) runs in anasim and, exported with `anasim export --spice`, in
// ngspice 39; every analysis must agree: op/dc to 1e-6 relative + 1 nV (1 pA), tran/ac to 1e-3 of the signal's
// range. Files without a circuit (no `devices:`: hardware configurations, netlists of nn analyses only) are
// skipped; the nn analyses are covered by test_nn_analyses.cpp.
// The exported op-amp decks (opamp_*.yaml: B sources) are also read back by anasim itself: the deck must agree
// with ngspice as above and, both run at tight Newton tolerances, give the YAML's results (op/dc to 1e-9
// relative, tran to 1e-6 of the signal's range).
#include <doctest/doctest.h>
#include <algorithm>
#include <string>
#include <vector>
#include "engine/parse.hpp"
#include "engine/simulate.hpp"
#include "nn/analyses.hpp"
#include "tests/ngspice_helpers.hpp"

using namespace anasim;
using namespace anasim::test;
namespace fs = std::filesystem;

namespace {

const fs::path kExamples = fs::path(ANASIM_SOURCE_DIR) / "data" / "examples";

// The example netlists: every .yaml directly under data/examples that has a devices: section.
std::vector<std::string> example_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kExamples)) {
    if (e.path().extension() != ".yaml") continue;
    ParsedNetlist pn;
    AnalysisCatalog analyses;  // the extension analyses `anasim run` offers
    nn::add_analyses(analyses, "");
    if (parse_yaml(e.path().string(), builtin_catalog(), pn, &analyses).ok() && pn.devices.empty()) continue;
    files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

const char* plot_kind(const std::string& plotname) {
  if (plotname.rfind("Operating Point", 0) == 0) return "op";
  if (plotname.rfind("DC transfer", 0) == 0) return "dc";
  if (plotname.rfind("Transient", 0) == 0) return "tran";
  if (plotname.rfind("AC Analysis", 0) == 0) return "ac";
  return "";
}

// Worst difference of the run `b` of the exported deck from the YAML run `a` over the signals they share
// (internal nodes "u1#p" are "u1_p" in the deck): op/dc pointwise, relative to |a| + 1 pV (1 fA); tran on
// a's grid (b interpolated linearly) relative to the signal's range.
Comparison compare_runs(const AnalysisResult& a, const AnalysisResult& b) {
  Comparison c;
  for (const Signal& s : a.signals) {
    if (s.unit != "V" && s.unit != "A") continue;
    if (a.kind == "tran" && s.unit != "V") continue;
    std::string name = s.name;
    std::replace(name.begin(), name.end(), '#', '_');
    const Signal* t = b.find(name);
    if (!t) {
      c.missing.push_back(s.name);
      continue;
    }
    double range = 1;
    if (a.kind == "tran") {
      const auto mm = std::minmax_element(s.re.begin(), s.re.end());
      range = *mm.second - *mm.first + 1e-9;
    }
    for (int p = 0; p < a.rows(); ++p) {
      double vb = t->re[std::min<size_t>(p, t->re.size() - 1)];
      if (a.kind == "tran") {
        const double x = a.sweep[p];
        auto it = std::upper_bound(b.sweep.begin(), b.sweep.end(), x);
        if (it == b.sweep.begin()) vb = t->re.front();
        else if (it == b.sweep.end()) vb = t->re.back();
        else {
          const size_t q = static_cast<size_t>(it - b.sweep.begin());
          vb = t->re[q - 1] + (t->re[q] - t->re[q - 1]) * (x - b.sweep[q - 1]) / (b.sweep[q] - b.sweep[q - 1]);
        }
      }
      const double e = a.kind == "tran" ? std::fabs(s.re[p] - vb) / range
                                        : std::fabs(s.re[p] - vb) / (std::fabs(s.re[p]) + (s.unit == "V" ? 1e-12 : 1e-15));
      if (e > c.worst) {
        c.worst = e;
        c.worst_name = s.name;
      }
    }
    ++c.compared;
  }
  return c;
}

// Tightens Newton's convergence test: two runs of the same equations then agree to far below the default
// tolerances, whatever path each Newton iteration took (the op-amp device limits its tanh arguments, the
// B sources of its export do not).
FlatNetlist tight(FlatNetlist fn) {
  fn.options.reltol = 1e-7;
  fn.options.vntol = 1e-12;
  fn.options.abstol = 1e-15;
  return fn;
}

// The exported deck of an op-amp example, read back by anasim: it agrees with ngspice on the deck, and (both
// at tight tolerances) gives the YAML's results.
void check_deck_readback(const std::string& file, const FlatNetlist& yaml_fn, const fs::path& deck,
                         const std::vector<RawPlot>& plots) {
  const FlatNetlist fn = elaborate_file(deck.string());
  const RunResults r = simulate_flat(fn);
  const RunResults yaml_tight = simulate_flat(tight(yaml_fn));
  const RunResults deck_tight = simulate_flat(tight(fn));
  REQUIRE(r.analyses.size() == yaml_tight.analyses.size());
  REQUIRE(deck_tight.analyses.size() == yaml_tight.analyses.size());
  for (size_t k = 0; k < r.analyses.size(); ++k) {
    const AnalysisResult& a = yaml_tight.analyses[k];
    const AnalysisResult& b = r.analyses[k];
    INFO(file << " " << a.group << " (exported deck read back)");
    REQUIRE(a.kind == b.kind);
    if (a.kind == "ac") continue;
    const Comparison self = compare_runs(a, deck_tight.analyses[k]);
    const double tol = a.kind == "tran" ? 1e-6 : 1e-9;
    MESSAGE(file << " " << a.group << ": deck vs YAML, " << self.compared << " signals, worst " << self.worst << " ("
                 << self.worst_name << "), tolerance " << tol);
    CHECK(self.compared > 0);
    CHECK(self.worst <= tol);
    const RawPlot* n = nullptr;
    for (const RawPlot& p : plots)
      if (b.kind == plot_kind(p.plotname)) n = &p;
    REQUIRE(n != nullptr);
    const Comparison ng = b.kind == "tran" ? compare_tran(b, *n) : compare_points(b, *n, 1e-3, 1e-6);
    const double ng_tol = b.kind == "tran" ? 1e-3 : 1e-6;
    MESSAGE(file << " " << b.group << ": deck in anasim vs ngspice, " << ng.compared << " signals, worst " << ng.worst
                 << " (" << ng.worst_name << "), tolerance " << ng_tol);
    CHECK(ng.compared > 0);
    CHECK(ng.worst <= ng_tol);
    for (const std::string& m : ng.missing)  // dotted deck names ("i(b.u1_io)") are not re-prefixed: voltages only
      CHECK_MESSAGE(m.rfind("i(", 0) == 0, "ngspice lacks " << m);
  }
}

void check_example(const std::string& file) {
  const FlatNetlist fn = elaborate_file((kExamples / file).string());
  std::vector<std::string> opamps;  // signals only anasim has: the level-0 output branch current
  for (const FlatDevice& fd : fn.devices)
    if (fd.type->key == "opamp") opamps.push_back("i(" + fd.name + ")");

  const fs::path dir = scratch_dir("opamp_" + fs::path(file).stem().string());
  RunResults r;
  const fs::path deck = dir / (fs::path(file).stem().string() + ".cir");
  const std::vector<RawPlot> plots = [&] {
    r = simulate_flat(fn);
    REQUIRE(export_spice(fn, deck.string()).ok());
    return run_ngspice(deck);
  }();
  if (file.rfind("opamp_", 0) == 0) check_deck_readback(file, fn, deck, plots);
  REQUIRE(plots.size() == r.analyses.size());
  for (const AnalysisResult& a : r.analyses) {
    const RawPlot* n = nullptr;
    for (const RawPlot& p : plots)
      if (a.kind == plot_kind(p.plotname)) n = &p;
    INFO(file << " " << a.group);
    REQUIRE(n != nullptr);
    Comparison c;
    double tol = 1e-3;
    if (a.kind == "op" || a.kind == "dc") {
      c = compare_points(a, *n, 1e-3, 1e-6);  // |a - n| <= 1e-6 |n| + 1 nV (1 pA)
      tol = 1e-6;
    } else if (a.kind == "tran") {
      c = compare_tran(a, *n);
    } else {
      c = compare_ac(a, *n);
    }
    MESSAGE(file << " " << a.group << ": " << c.compared << " signals, worst " << c.worst << " (" << c.worst_name
                 << "), tolerance " << tol);
    CHECK(c.compared > 0);
    CHECK(c.worst <= tol);
    for (const std::string& m : c.missing) {
      if (a.kind != "op" && a.kind != "dc" && m.rfind("i(", 0) == 0) continue;  // tran/ac compare voltages
      CHECK_MESSAGE(std::find(opamps.begin(), opamps.end(), m) != opamps.end(), "ngspice lacks " << m);
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace

TEST_CASE("examples: every example netlist agrees with ngspice") {
  if (!ngspice_available()) {
    FAIL_CHECK("ngspice is not on PATH: the op-amp examples cannot be cross-checked (install ngspice 39)");
    return;
  }
  const std::vector<std::string> files = example_files();
  CHECK(files.size() >= 10);
  for (const std::string& file : files) {
    SUBCASE(file.c_str()) { check_example(file); }
  }
}
