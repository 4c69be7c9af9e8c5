// Tests for nn/analyses.cpp and the extension-analysis mechanism (engine/analysis_type.hpp): nn_eval / nn_mc
// entries of a YAML netlist parse with located errors for bad keys and values, find the hardware in the netlist
// or a config file, stop with the searched places when the data set is missing, and through `anasim run` give
// the same accuracies as `anasim nn eval` / `anasim nn mc` on the same model, hardware and data.
#include <doctest/doctest.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <H5Cpp.h>
#include <fmt/format.h>
#include <unistd.h>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/parse.hpp"
#include "engine/simulate.hpp"
#include "nn/analyses.hpp"
#include "nn/model_io.hpp"
#include "tests/hdf5_tables.hpp"
#include "tests/nn_test_support.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
using namespace anasim::nn_test;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_support::scratch_dir("nn_analyses", name); }

using test_support::contains;

// A model file and an 8x8 data set in `dir` (m.h5, IDX files), and a hardware config hw.yaml.
void write_fixture(const fs::path& dir) {
  const nn::Mlp net = net_64_16_10();
  write_tiny_mnist(dir, net);
  nn::ModelInfo info;
  REQUIRE(nn::save_model((dir / "m.h5").string(), net, info).ok());
  std::ofstream f(dir / "hw.yaml");
  f << "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: 0.02\n";
}

// Parses and elaborates `text` as dir/net.yaml with the nn analyses (data directory `data`).
Status load(const fs::path& dir, const std::string& text, const std::string& data, FlatNetlist& fn) {
  const fs::path p = dir / "net.yaml";
  {
    std::ofstream f(p);
    f << text;
  }
  AnalysisCatalog cat;
  nn::add_analyses(cat, data);
  ParsedNetlist pn;
  Status st = parse_yaml(p.string(), builtin_catalog(), pn, &cat);
  if (!st) return st;
  return elaborate(pn, builtin_catalog(), fn);
}

}  // namespace

TEST_CASE("nn analyses: keys and values are checked with locations") {
  const fs::path dir = scratch("errors");
  write_fixture(dir);
  FlatNetlist fn;
  struct Case {
    const char* yaml;
    const char* where;  // "line:col"
    const char* message;
  };
  const Case cases[] = {
      {"analyses:\n  - type: nn_eval\n    model: m.h5\n    sampels: 10\n", ":4:5", "unknown key 'sampels' in nn_eval analysis; expected one of: model,"},
      {"analyses:\n  - type: nn_evl\n", ":2:11", "expected op, dc, tran, ac, nn_eval, nn_mc"},
      {"analyses:\n  - type: nn_eval\n    model: m.h5\n    config: hw.yaml\n    samples: -3\n", ":5:14", "samples"},
      {"analyses:\n  - type: nn_eval\n    model: m.h5\n    config: hw.yaml\n    samples: 2.5\n", ":5:5", "must be an integer"},
      {"analyses:\n  - type: nn_eval\n    config: hw.yaml\n", ":2:5", "needs 'model: FILE'"},
      {"analyses:\n  - type: nn_eval\n    model: nosuch.h5\n    config: hw.yaml\n", ":3:12", "cannot open the model file"},
      {"analyses:\n  - type: nn_eval\n    model: m.h5\n", ":2:5", "needs a hardware mapping"},
      {"analyses:\n  - type: nn_eval\n    model: m.h5\n    config: hw.yaml\n    mode: digital\n", ":5:11", "mode must be analog or hybrid"},
      {"analyses:\n  - type: nn_mc\n    model: m.h5\n    config: hw.yaml\n    sweep: nosuch=1,2\n", ":5:12", "nosuch"},
      {"analyses:\n  - type: nn_mc\n    model: m.h5\n    trials: [1, 2]\n", ":4:13", "expected a single value"},
      {"analyses:\n  - type: nn_eval\n    model: m.h5\nhardware:\n  tile_rowz: 4\n", ":5:3", "tile_rowz"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    Status st = load(dir, c.yaml, dir.string(), fn);
    REQUIRE_FALSE(st.ok());
    const std::string msg = st.to_string();
    CAPTURE(msg);
    CHECK(st.errors[0].kind == ErrorKind::Input);
    CHECK(contains(msg, fmt::format("net.yaml{}", c.where)));
    CHECK(contains(msg, c.message));
  }
  fs::remove_all(dir);
}

TEST_CASE("nn analyses: a missing data set names every place searched and how to point at a copy") {
  const fs::path dir = scratch("nodata");
  write_fixture(dir);
  const std::string yaml = "analyses:\n  - type: nn_eval\n    model: m.h5\n    config: hw.yaml\n";
  FlatNetlist fn;
  const fs::path nowhere = dir / "nowhere";
  Status st = load(dir, yaml, nowhere.string(), fn);
  REQUIRE_FALSE(st.ok());
  std::string msg = st.to_string();
  CAPTURE(msg);
  CHECK(contains(msg, "net.yaml:2:5"));
  CHECK(contains(msg, nowhere.string() + " (--data): no such directory"));
  CHECK(contains(msg, "--data DIR"));
  CHECK(contains(msg, "ANASIM_DATA"));

  // Through the executable: exit 2, and $ANASIM_DATA is the place searched without --data.
  int rc = 0;
  setenv("ANASIM_DATA", nowhere.string().c_str(), 1);
  const std::string out2 = run(fmt::format("run '{}'", (dir / "net.yaml").string()), rc);
  unsetenv("ANASIM_DATA");
  CAPTURE(out2);
  CHECK(rc == 2);
  CHECK(contains(out2, nowhere.string() + " (ANASIM_DATA)"));
  CHECK(contains(out2, "--data DIR or the ANASIM_DATA environment variable"));
  fs::remove_all(dir);
}

TEST_CASE("nn analyses: anasim run gives the accuracies of anasim nn eval and nn mc") {
  const fs::path dir = scratch("run");
  write_fixture(dir);
  {
    // The hardware as a section of the netlist (same keys as hw.yaml), paths relative to the netlist.
    std::ofstream f(dir / "net.yaml");
    f << "title: nn analyses\n"
         "analyses:\n"
         "  - type: nn_eval\n    model: m.h5\n    samples: 50\n    reference: 1\n"
         "  - type: nn_eval\n    model: m.h5\n    config: hw.yaml\n    mode: hybrid\n"
         "  - type: nn_mc\n    model: m.h5\n    trials: 2\n    seed: 7\n    sweep: sigma_g=0,0.1\n"
         "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: 0.02\n";
  }
  const std::string csv = (dir / "csv").string();
  int rc = 0;
  std::string out = run(fmt::format("run '{}' --data '{}' -o '{}' --csv '{}'", (dir / "net.yaml").string(),
                                    dir.string(), (dir / "r.h5").string(), csv),
                        rc);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(fs::exists(dir / "r.h5"));
  auto read = [](const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  // name,value,unit rows of a summary file -> value of `name`.
  auto value = [&](const std::string& file, const std::string& name) {
    const std::string s = read(fs::path(csv) / file);
    const size_t p = s.find("\n" + name + ",");
    REQUIRE_MESSAGE(p != std::string::npos, file << " lacks " << name);
    return std::strtod(s.c_str() + p + name.size() + 2, nullptr);
  };
  const std::string common = fmt::format("--model '{}' --config '{}' --data '{}'", (dir / "m.h5").string(),
                                         (dir / "hw.yaml").string(), dir.string());
  auto json = [](const std::string& s, const std::string& key) {
    const size_t p = s.find("\"" + key + "\": ");
    REQUIRE_MESSAGE(p != std::string::npos, key);
    return std::strtod(s.c_str() + p + key.size() + 4, nullptr);
  };
  std::string ref = run("nn eval " + common + " --samples 50 --json", rc);
  INFO(ref);
  REQUIRE(rc == 0);
  CHECK(value("nn_eval_summary.csv", "samples") == 50);
  CHECK(value("nn_eval_summary.csv", "analog_accuracy") == doctest::Approx(100 * json(ref, "analog_accuracy")));
  CHECK(value("nn_eval_summary.csv", "digital_accuracy") == doctest::Approx(100 * json(ref, "digital_accuracy")));
  CHECK(value("nn_eval_summary.csv", "reference_max_rel_diff") <= 1e-6);
  ref = run("nn eval " + common + " --mode hybrid --json", rc);
  REQUIRE(rc == 0);
  CHECK(value("nn_eval2_summary.csv", "samples") == 60);
  CHECK(value("nn_eval2_summary.csv", "analog_accuracy") == doctest::Approx(100 * json(ref, "analog_accuracy")));
  // Per-sample table: sample,label,digital,analog.
  const std::string table = read(fs::path(csv) / "nn_eval.csv");
  CHECK(table.rfind("sample,label,digital,analog\n", 0) == 0);
  CHECK(std::count(table.begin(), table.end(), '\n') == 51);

  ref = run("nn mc " + common + " --trials 2 --seed 7 --sweep sigma_g=0,0.1", rc);
  INFO(ref);
  REQUIRE(rc == 0);
  // nn mc prints "0.1  <mean>% ..." per point; compare the means.
  for (const char* v : {"0", "0.1"}) {
    const double mean = value("nn_mc_summary.csv", fmt::format("mean(sigma_g={})", v));
    CHECK(contains(ref, fmt::format("{:.2f}%", mean)));
  }
  const std::string mc = read(fs::path(csv) / "nn_mc.csv");
  CHECK(mc.rfind("trial,accuracy(sigma_g=0),accuracy(sigma_g=0.1)\n", 0) == 0);

  // HDF5: the same tables as datasets, the summary values as group attributes.
  H5::H5File h((dir / "r.h5").string(), H5F_ACC_RDONLY);
  H5::Group g = h.openGroup("nn_eval");
  double acc = 0;
  g.openAttribute("analog_accuracy").read(H5::PredType::NATIVE_DOUBLE, &acc);
  CHECK(acc == value("nn_eval_summary.csv", "analog_accuracy"));
  CHECK(test_support::read_signal(g, "analog").size() == 50);
  CHECK(test_support::read_signal(h.openGroup("nn_mc"), "accuracy(sigma_g=0.1)").size() == 2);
  CHECK(h.nameExists("nn_eval2"));
  fs::remove_all(dir);
}

TEST_CASE("nn analyses: nn_mc and nn mc report the compensation the trials' draws start from") {
  const fs::path dir = scratch("program");
  write_fixture(dir);
  {
    std::ofstream f(dir / "net.yaml");
    f << "title: compensated Monte Carlo\n"
         "analyses:\n"
         "  - type: nn_mc\n    model: m.h5\n    trials: 2\n    seed: 7\n    sweep: program=ideal,compensated\n"
         "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: 0.02\n  rwire: 5\n";
  }
  {
    std::ofstream f(dir / "hw5.yaml");
    f << "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: 0.02\n  rwire: 5\n";
  }
  const std::string csv = (dir / "csv").string();
  int rc = 0;
  std::string out = run(fmt::format("run '{}' --data '{}' --csv '{}'", (dir / "net.yaml").string(), dir.string(), csv),
                        rc);
  INFO(out);
  REQUIRE(rc == 0);
  std::ifstream f(fs::path(csv) / "nn_mc_summary.csv");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  CHECK(!contains(s, "program_residual_layer0(program=ideal)"));
  std::string cli = run(fmt::format("nn mc --model '{}' --config '{}' --data '{}' --trials 2 --seed 7 "
                                    "--sweep program=ideal,compensated", (dir / "m.h5").string(),
                                    (dir / "hw5.yaml").string(), dir.string()),
                        rc);
  INFO(cli);
  REQUIRE(rc == 0);
  for (int l : {0, 1}) {
    const std::string name = fmt::format("program_residual_layer{}(program=compensated)", l);
    const size_t p = s.find("\n" + name + ",");
    REQUIRE_MESSAGE(p != std::string::npos, name);
    const double residual = std::strtod(s.c_str() + p + name.size() + 2, nullptr);
    CHECK(residual <= 1e-9);
    CHECK(contains(cli, fmt::format("compensated programming (program=compensated, before the draws), layer {}: "
                                    "residual weight error {:.3g}", l, residual)));
  }
  fs::remove_all(dir);
}
