// `nn_eval` and `nn_mc` as netlist analyses (see analyses.hpp): argument tables, checks during elaboration
// (files, hardware, data set, sweep), and runs that turn EvalReport / McReport into AnalysisResult tables.
#include "nn/analyses.hpp"
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include "engine/elaborate.hpp"
#include "nn/dataset.hpp"
#include "nn/energy.hpp"
#include "nn/evaluate.hpp"
#include "nn/hardware.hpp"

namespace anasim::nn {

namespace {

namespace fs = std::filesystem;

// Arguments shared by both analyses, first in both tables.
enum { kModel, kKeras, kConfig, kMode, kDataset, kSamples, kNumCommon };
// nn_eval, after the common ones.
enum { kReference = kNumCommon };
// nn_mc, after the common ones.
enum { kTrials = kNumCommon, kSeed, kSweep };
// nn_energy, after the common ones.
enum { kFromPrevious = kNumCommon, kTstop };

ParamTable common_params() {
  return {
      {"model", "", 0, 0, 0, "model file (anasim-mlp-1 HDF5 from `anasim nn train`), relative to this file",
       ParamKind::Text},
      {"keras", "", 0, 0, 1, "the model is a Keras HDF5 file of dense layers", ParamKind::Flag},
      {"config", "", 0, 0, 0, "hardware config (YAML with a hardware: section); default: this netlist's hardware:",
       ParamKind::Text},
      {"mode", "", 0, 0, 0, "analog or hybrid (overrides the hardware's mode)", ParamKind::Text},
      {"dataset", "", 0, 0, 0, "mnist (default) or fashion-mnist", ParamKind::Text},
      {"samples", "", 0, 0, 1e9, "test images, the first N of the test split (0 = all)"},
  };
}

// An error without a location gets `at`.
Status located(Status st, const SourceLoc& at) {
  for (Diag& d : st.errors)
    if (!d.loc.valid() && d.loc.file().empty()) d.loc = at;
  return st;
}

// Argument i's file name, resolved against the directory of the file it is written in.
std::string resolve(const ParamValues& a, int i, const AnalysisRequest& req) {
  const fs::path p(a.text()[i]);
  if (p.is_absolute()) return p.string();
  const std::string& base = a.loc[i].file().empty() ? req.netlist->file : a.loc[i].file();
  return (fs::path(base).parent_path() / p).lexically_normal().string();
}

bool is_integer(double x) { return std::floor(x) == x; }

class NnAnalysis : public AnalysisType {
 public:
  explicit NnAnalysis(std::string data_dir) : data_dir_(std::move(data_dir)) {}

  // Everything a run needs except the data: model path, hardware (with `mode`), data set kind.
  struct Inputs {
    std::string model;
    std::string hardware;    // where the hardware came from, for the summary
    HardwareConfig cfg;
    DatasetKind kind = DatasetKind::Mnist;
  };

  Status inputs(const AnalysisRequest& req, Inputs& in) const {
    const ParamValues& a = *req.args;
    if (!a.has(kModel) || a.text()[kModel].empty())
      return Status::input(fmt::format("{} analysis needs 'model: FILE' (a model from `anasim nn train`)", name),
                           req.loc);
    in.model = resolve(a, kModel, req);
    std::error_code ec;
    if (!fs::is_regular_file(in.model, ec))
      return Status::input(fmt::format("cannot open the model file '{}'", in.model), a.loc[kModel]);
    // Hardware keys are evaluated in the netlist's top-level scope, as the arguments are.
    Scope scope;
    for (const auto& [pname, pvalue] : req.netlist->params) scope.set(pname, pvalue);
    if (a.has(kConfig)) {
      const std::string path = resolve(a, kConfig, req);
      if (!fs::is_regular_file(path, ec))
        return Status::input(fmt::format("cannot open the hardware config '{}'", path), a.loc[kConfig]);
      if (Status st = load_hardware_config(path, in.cfg, &scope); !st) return located(st, a.loc[kConfig]);
      in.hardware = path;
    } else {
      const ParsedSection* section = req.netlist->section("hardware");
      if (!section)
        return Status::input(fmt::format("{} analysis needs a hardware mapping: a top-level 'hardware:' section in "
                                         "the netlist (keys as in data/examples/mnist_hw.yaml) or 'config: FILE'",
                                         name),
                             req.loc);
      if (Status st = hardware_from_section(*section, scope, in.cfg); !st) return located(st, section->loc);
      in.hardware = fmt::format("{}: hardware", section->loc.file());
    }
    if (a.has(kMode))
      if (Status st = set_hardware_param(in.cfg, "mode", a.text()[kMode], scope); !st)
        return located(st, a.loc[kMode]);
    if (a.has(kDataset))
      if (Status st = parse_dataset_kind(a.text()[kDataset], in.kind); !st) return located(st, a.loc[kDataset]);
    for (int i : integer_args())
      if (!is_integer(a[i]))
        return Status::input(fmt::format("'{}' of the {} analysis must be an integer, got {}", params[i].name, name,
                                         a[i]),
                             a.loc[i]);
    return {};
  }

  // Checks the arguments, the files and that the data set can be found, so that a netlist fails before its
  // first analysis rather than after.
  Status check(const AnalysisRequest& req) const override {
    Inputs in;
    if (Status st = inputs(req, in); !st) return st;
    if (Status st = check_more(req, in); !st) return st;
    std::string dir;
    return located(find_data_dir(in.kind, data_dir_, false, dir), req.loc);
  }

  // Loads model and data for a run.
  Status setup(const AnalysisRequest& req, Inputs& in, EvalSetup& s) const {
    if (Status st = inputs(req, in); !st) return st;
    s.cfg = in.cfg;
    Status st = load_eval_setup(in.model, (*req.args)[kKeras] != 0, in.kind, data_dir_, s);
    return located(st, req.loc);
  }

 protected:
  virtual std::vector<int> integer_args() const { return {kSamples}; }
  virtual Status check_more(const AnalysisRequest&, const Inputs&) const { return {}; }
  std::string data_dir_;
};

void add_scalar(AnalysisResult& r, const char* name, const char* unit, double v) {
  r.scalars.push_back(ResultScalar{name, unit, v});
}

class EvalAnalysis : public NnAnalysis {
 public:
  explicit EvalAnalysis(std::string data_dir) : NnAnalysis(std::move(data_dir)) {
    name = "nn_eval";
    description = "accuracy of an MLP through the mapped crossbar circuit (as `anasim nn eval --config`)";
    params = common_params();
    params.push_back({"reference", "", 0, 0, 1e9, "compare the first N images with the full MNA solve"});
  }

  Status run(const AnalysisRequest& req, AnalysisResult& out) const override {
    Inputs in;
    EvalSetup s;
    Status ld = setup(req, in, s);
    if (!ld) return ld;
    const ParamValues& a = *req.args;
    EvalReport r;
    if (Status st = run_eval(s.net, s.cfg, s.calib(), s.test, static_cast<int>(a[kSamples]),
                             static_cast<int>(a[kReference]), r, true);
        !st)
      return located(st, req.loc);
    out.sweep_name = "sample";
    out.sweep_unit = "";
    Signal label{"label", "", {}, {}}, digital{"digital", "", {}, {}}, analog{"analog", "", {}, {}};
    for (int i = 0; i < r.samples; ++i) {
      out.sweep.push_back(i);
      label.re.push_back(s.test.labels[i]);
      digital.re.push_back(i < static_cast<int>(r.digital_class.size()) ? r.digital_class[i] : -1);
      analog.re.push_back(i < static_cast<int>(r.analog_class.size()) ? r.analog_class[i] : -1);
    }
    out.signals = {std::move(label), std::move(digital), std::move(analog)};
    add_scalar(out, "samples", "", r.samples);
    add_scalar(out, "digital_accuracy", "%", 100 * r.digital_accuracy);
    add_scalar(out, "analog_accuracy", "%", 100 * r.analog_accuracy);
    add_scalar(out, "agreement", "%", 100 * r.agreement);
    add_scalar(out, "opamps", "", r.opamps);
    add_scalar(out, "seconds_fast", "s", r.seconds);  // fast path: port reduction + images
    add_scalar(out, "seconds_prepare", "s", r.seconds_prepare);
    add_scalar(out, "us_per_image", "us", 1e6 * (r.seconds - r.seconds_prepare) / std::max(1, r.samples));
    if (r.has_reference) {
      add_scalar(out, "reference_samples", "", r.reference.samples);
      add_scalar(out, "reference_max_rel_diff", "", r.reference.max_rel);
      add_scalar(out, "reference_max_abs_diff", "V", r.reference.max_abs);
      add_scalar(out, "reference_seconds_per_sample", "s", r.reference.seconds_per_sample);
    }
    out.notes.push_back(fmt::format("model {} ({}), {} mode", in.model, fmt::join(s.net.sizes(), "-"),
                                    mode_name(s.cfg.mode)));
    out.notes.push_back(fmt::format("hardware {}", in.hardware));
    out.notes.push_back(fmt::format("{} test images from {}", r.samples, s.dir));
    for (const auto& w : ld.warnings) out.notes.push_back("warning: " + w);
    out.stats.timepoints = r.samples;
    return {};
  }

 protected:
  std::vector<int> integer_args() const override { return {kSamples, kReference}; }
};

class McAnalysis : public NnAnalysis {
 public:
  explicit McAnalysis(std::string data_dir) : NnAnalysis(std::move(data_dir)) {
    name = "nn_mc";
    description = "Monte Carlo accuracy of the mapped circuit over mismatch draws (as `anasim nn mc`)";
    params = common_params();
    params.push_back({"trials", "", 10, 1, 1e6, "trials per sweep point"});
    params.push_back({"seed", "", 1, 0, 9007199254740992.0, "seed of the mismatch draws"});
    params.push_back({"sweep", "", 0, 0, 0, "PARAM=v1,v2,...: a hardware parameter (or opamp.<name>) to sweep",
                      ParamKind::Text});
  }

  Status run(const AnalysisRequest& req, AnalysisResult& out) const override {
    Inputs in;
    EvalSetup s;
    Status ld = setup(req, in, s);
    if (!ld) return ld;
    McOptions o;
    if (Status st = options(*req.args, s.cfg, o); !st) return st;
    McReport r;
    if (Status st = run_mc(s.net, s.cfg, s.calib(), s.test, o, r); !st) return located(st, req.loc);
    out.sweep_name = "trial";
    for (int t = 0; t < o.trials; ++t) out.sweep.push_back(t);
    add_scalar(out, "trials", "", o.trials);
    add_scalar(out, "samples", "", r.samples);
    add_scalar(out, "digital_accuracy", "%", 100 * r.digital_accuracy);
    add_scalar(out, "seconds_per_trial", "s", r.seconds_per_trial);
    for (const McPoint& p : r.points) {
      const std::string at = p.param.empty() ? "" : fmt::format("({}={})", p.param, p.value);
      Signal sig{"accuracy" + at, "%", {}, {}};
      for (double x : p.accuracy) sig.re.push_back(100 * x);
      out.signals.push_back(std::move(sig));
      for (auto [nm, v] : {std::pair<const char*, double>{"mean", p.mean}, {"std", p.std}, {"min", p.min},
                           {"p5", p.p5}})
        out.scalars.push_back(ResultScalar{nm + at, "%", 100 * v});
    }
    out.notes.push_back(fmt::format("model {} ({}), {} mode, seed {}", in.model, fmt::join(s.net.sizes(), "-"),
                                    mode_name(s.cfg.mode), o.seed));
    out.notes.push_back(fmt::format("hardware {}", in.hardware));
    out.notes.push_back(fmt::format("{} trials x {} test images from {}", o.trials, r.samples, s.dir));
    for (const auto& w : ld.warnings) out.notes.push_back("warning: " + w);
    out.stats.timepoints = static_cast<long>(o.trials) * static_cast<long>(r.points.size());
    return {};
  }

 protected:
  std::vector<int> integer_args() const override { return {kSamples, kTrials, kSeed}; }

  Status options(const ParamValues& a, const HardwareConfig& cfg, McOptions& o) const {
    o.trials = static_cast<int>(a[kTrials]);
    o.seed = static_cast<std::uint64_t>(a[kSeed]);
    o.samples = static_cast<int>(a[kSamples]);
    if (a.has(kSweep))
      if (Status st = parse_mc_sweep(a.text()[kSweep], cfg, o); !st) return located(st, a.loc[kSweep]);
    return {};
  }

  Status check_more(const AnalysisRequest& req, const Inputs& in) const override {
    McOptions o;
    return options(*req.args, in.cfg, o);
  }
};

// Latency and energy per inference from the engine's transient of the mapped circuit (as `anasim nn energy`).
class EnergyAnalysis : public NnAnalysis {
 public:
  explicit EnergyAnalysis(std::string data_dir) : NnAnalysis(std::move(data_dir)) {
    name = "nn_energy";
    description = "latency and energy per inference from the transient of the mapped circuit (as `anasim nn energy`)";
    params = common_params();
    params.push_back({"from_previous", "", 0, 0, 1, "step from the previous image's settled state (else from reset)",
                      ParamKind::Flag});
    params.push_back({"tstop", "s", 0, 0, 1e3, "transient length (0 = automatic)"});
  }

  Status run(const AnalysisRequest& req, AnalysisResult& out) const override {
    Inputs in;
    EvalSetup s;
    Status ld = setup(req, in, s);
    if (!ld) return ld;
    const ParamValues& a = *req.args;
    TransientOptions o;
    o.from_previous = a[kFromPrevious] != 0;
    o.tstop = a[kTstop];
    EnergyReport r;
    if (Status st = run_energy(s.net, s.cfg, s.calib(), s.test, static_cast<int>(a[kSamples]), o, r); !st)
      return located(st, req.loc);
    out.sweep_name = "sample";
    out.sweep_unit = "";
    Signal label{"label", "", {}, {}}, cls{"class", "", {}, {}}, lat{"latency", "s", {}, {}}, en{"energy", "J", {}, {}};
    for (int i = 0; i < r.samples; ++i) {
      out.sweep.push_back(i);
      label.re.push_back(r.labels[i]);
      cls.re.push_back(r.images[i].cls);
      lat.re.push_back(r.images[i].settle_s);
      en.re.push_back(r.images[i].energy_j);
    }
    out.signals = {std::move(label), std::move(cls), std::move(lat), std::move(en)};
    add_scalar(out, "samples", "", r.samples);
    add_scalar(out, "accuracy", "%", 100 * r.accuracy);
    add_scalar(out, "latency_mean", "s", r.latency_mean_s);
    add_scalar(out, "latency_p99", "s", r.latency_p99_s);
    add_scalar(out, "energy_mean", "J", r.energy_mean_j);
    add_scalar(out, "energy_p99", "J", r.energy_p99_j);
    for (int p = 0; p < kNumEnergyParts; ++p)
      out.scalars.push_back(ResultScalar{std::string("energy_") + energy_part_name(p), "J", r.energy_parts_mean_j[p]});
    add_scalar(out, "macs", "", static_cast<double>(r.macs));
    add_scalar(out, "tops", "", r.tops);
    add_scalar(out, "tops_per_w", "", r.tops_per_w);
    add_scalar(out, "shortest_sample_time", "s", r.shortest_sample_time_s);
    out.notes.push_back(fmt::format("model {} ({}), {} mode", in.model, fmt::join(s.net.sizes(), "-"),
                                    mode_name(s.cfg.mode)));
    out.notes.push_back(fmt::format("hardware {}", in.hardware));
    out.notes.push_back(fmt::format("{} test images from {}", r.samples, s.dir));
    for (size_t i = 0; i < r.sample_times_s.size(); ++i)
      out.notes.push_back(fmt::format("accuracy sampled at {:.6g} s: {:.2f}%", r.sample_times_s[i],
                                      100 * r.accuracy_at[i]));
    for (const auto& w : ld.warnings) out.notes.push_back("warning: " + w);
    out.stats.timepoints = r.samples;
    return {};
  }
};

}  // namespace

std::unique_ptr<AnalysisType> make_eval_analysis(const std::string& data_dir) {
  return std::make_unique<EvalAnalysis>(data_dir);
}

std::unique_ptr<AnalysisType> make_mc_analysis(const std::string& data_dir) {
  return std::make_unique<McAnalysis>(data_dir);
}

void add_analyses(AnalysisCatalog& cat, const std::string& data_dir) {
  cat.add(make_eval_analysis(data_dir));
  cat.add(make_mc_analysis(data_dir));
  cat.add(std::make_unique<EnergyAnalysis>(data_dir));
}

}  // namespace anasim::nn
