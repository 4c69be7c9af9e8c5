// Every example netlist (data/examples/*.yaml) runs in anasim and, exported with `anasim export --spice`, in
// ngspice 39; every analysis must agree: op/dc to 1e-6 relative + 1 nV (1 pA), tran/ac to 1e-3 of the signal's
// range. Files without a circuit (no `devices:`: hardware configurations, netlists of nn analyses only) are
// skipped; the nn analyses are covered by test_nn_analyses.cpp.
#include <doctest/doctest.h>
#include <algorithm>
#include <string>
#include <vector>
#include "engine/parse.hpp"
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

void check_example(const std::string& file) {
  const FlatNetlist fn = elaborate_file((kExamples / file).string());
  std::vector<std::string> opamps;  // signals only anasim has: the level-0 output branch current
  for (const FlatDevice& fd : fn.devices)
    if (fd.type->key == "opamp") opamps.push_back("i(" + fd.name + ")");

  const fs::path dir = scratch_dir("opamp_" + fs::path(file).stem().string());
  RunResults r;
  const std::vector<RawPlot> plots = [&] {
    r = simulate_flat(fn);
    const fs::path deck = dir / (fs::path(file).stem().string() + ".cir");
    REQUIRE(export_spice(fn, deck.string()).ok());
    return run_ngspice(deck);
  }();
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
