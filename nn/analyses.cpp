// `nn_eval` and `nn_mc` as netlist analyses (see analyses.hpp): argument tables, checks during elaboration
// (files, hardware, data set, sweep), and runs that turn EvalReport / McReport into AnalysisResult tables.
#include "nn/analyses.hpp"
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include "engine/checkpoint.hpp"
#include "engine/elaborate.hpp"
#include "nn/dataset.hpp"
#include "nn/energy.hpp"
#include "nn/evaluate.hpp"
#include "nn/hardware.hpp"

namespace anasim::nn {

namespace {

namespace fs = std::filesystem;

// The arguments of the nn analyses: one struct for the three kinds, each table binding the lines it has (the
// common ones first). Integer members are checked as integers by apply_params.
struct NnArgs {
  std::string model;           // model file (anasim-mlp-1 HDF5), relative to the netlist
  bool keras = false;          // the model is a Keras HDF5 file
  std::string config;          // hardware config file; "" = the netlist's hardware: section
  std::string mode;            // "analog" or "hybrid" override; "" = the hardware's
  std::string dataset;         // "mnist" (default, "") or "fashion-mnist"
  long samples = 0;            // first N test images, 0 = all
  long reference = 0;          // nn_eval: images compared with the full MNA solve
  long trials = 10;            // nn_mc: trials per sweep point
  std::uint64_t seed = 1;      // nn_mc: seed of the mismatch draws
  std::string sweep;           // nn_mc: PARAM=v1,v2,...
  bool from_previous = false;  // nn_energy: step from the previous image's settled state
  bool engine = false;         // nn_energy: the engine's transient of the full netlist (slow reference)
  double tstop = 0;            // [s] nn_energy: transient length, 0 = automatic
  std::string checkpoint;      // nn_mc, nn_energy: checkpoint file (HDF5) relative to the netlist, "" = none
};

ParamTable common_params() {
  return {
      ParamDecl("model").kind(ParamKind::Text)
          .doc("model file (anasim-mlp-1 HDF5 from `anasim nn train`), relative to this file").bind<&NnArgs::model>(),
      ParamDecl("keras").kind(ParamKind::Flag).range(0, 1).doc("the model is a Keras HDF5 file of dense layers")
          .bind<&NnArgs::keras>(),
      ParamDecl("config").kind(ParamKind::Text)
          .doc("hardware config (YAML with a hardware: section); default: this netlist's hardware:")
          .bind<&NnArgs::config>(),
      ParamDecl("mode").kind(ParamKind::Text).doc("analog or hybrid (overrides the hardware's mode)")
          .bind<&NnArgs::mode>(),
      ParamDecl("dataset").kind(ParamKind::Text).doc("mnist (default) or fashion-mnist").bind<&NnArgs::dataset>(),
      ParamDecl("samples").range(0, 1e9).doc("test images, the first N of the test split (0 = all)")
          .bind<&NnArgs::samples>(),
  };
}

// Where argument `name` was written (the analysis's location if it was not).
SourceLoc arg_loc(const AnalysisRequest& req, const char* name) {
  const int i = req.args->index_of(name);
  return i >= 0 && req.args->loc(i).valid() ? req.args->loc(i) : req.loc;
}

// An error without a location gets `at`.
Status located(Status st, const SourceLoc& at) {
  for (Diag& d : st.errors)
    if (!d.loc.valid() && d.loc.file().empty()) d.loc = at;
  return st;
}

// A file name written in argument `name`, resolved against the directory of the file it is written in.
std::string resolve(const std::string& file, const char* name, const AnalysisRequest& req) {
  const fs::path p(file);
  if (p.is_absolute()) return p.string();
  const SourceLoc at = arg_loc(req, name);
  const std::string& base = at.file().empty() ? req.netlist->file : at.file();
  return (fs::path(base).parent_path() / p).lexically_normal().string();
}

class NnAnalysis : public AnalysisType {
 public:
  explicit NnAnalysis(std::string data_dir) : data_dir_(std::move(data_dir)) {}

  // Everything a run needs except the data: the arguments (read once), model path, hardware (with `mode`), data
  // set kind.
  struct Inputs {
    NnArgs args;
    std::string model;
    std::string hardware;    // where the hardware came from, for the summary
    HardwareConfig cfg;
    DatasetKind kind = DatasetKind::Mnist;
  };

  Status inputs(const AnalysisRequest& req, Inputs& in) const {
    if (Status st = apply_params(*req.args, in.args, "nn analysis"); !st) return st;
    const NnArgs& a = in.args;
    if (a.model.empty())
      return Status::input(fmt::format("{} analysis needs 'model: FILE' (a model from `anasim nn train`)", name),
                           req.loc);
    in.model = resolve(a.model, "model", req);
    std::error_code ec;
    if (!fs::is_regular_file(in.model, ec))
      return Status::input(fmt::format("cannot open the model file '{}'", in.model), arg_loc(req, "model"));
    // Hardware keys are evaluated in the netlist's top-level scope, as the arguments are.
    Scope scope;
    for (const auto& [pname, pvalue] : req.netlist->params) scope.set(pname, pvalue);
    if (!a.config.empty()) {
      const std::string path = resolve(a.config, "config", req);
      if (!fs::is_regular_file(path, ec))
        return Status::input(fmt::format("cannot open the hardware config '{}'", path), arg_loc(req, "config"));
      if (Status st = load_hardware_config(path, in.cfg, &scope); !st) return located(st, arg_loc(req, "config"));
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
    if (!a.mode.empty())
      if (Status st = set_hardware_param(in.cfg, "mode", a.mode, scope); !st) return located(st, arg_loc(req, "mode"));
    if (!a.dataset.empty())
      if (Status st = parse_dataset_kind(a.dataset, in.kind); !st) return located(st, arg_loc(req, "dataset"));
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
    Status st = load_eval_setup(in.model, in.args.keras, in.kind, data_dir_, s);
    return located(st, req.loc);
  }

 protected:
  virtual Status check_more(const AnalysisRequest&, const Inputs&) const { return {}; }

  // The checkpoint file of the `checkpoint` argument ("" = none) and the analysis's part of its identity: the
  // hardware (a config file's name and contents, or those of the netlist whose hardware: section it is) and the
  // mode. The driver adds the arguments, model, images and version (engine/checkpoint.hpp).
  static std::string checkpoint_setup(const AnalysisRequest& req, const Inputs& in, RunIdentity& id) {
    if (in.args.checkpoint.empty()) return "";
    const std::string hw = in.args.config.empty() ? req.netlist->file : resolve(in.args.config, "config", req);
    id.add("hardware", fmt::format("{}{} ({}), {} mode", fs::path(hw).filename().string(),
                                   in.args.config.empty() ? ": hardware" : "", file_digest(hw),
                                   mode_name(in.cfg.mode)));
    return resolve(in.args.checkpoint, "checkpoint", req);
  }

  // `doc`: the argument's description (a string literal: ParamDecl keeps the pointer's text).
  static ParamDecl checkpoint_param(const char* doc) {
    return ParamDecl("checkpoint").kind(ParamKind::Text).doc(doc).bind<&NnArgs::checkpoint>();
  }

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
    params.push_back(ParamDecl("reference").range(0, 1e9).doc("compare the first N images with the full MNA solve")
                         .bind<&NnArgs::reference>());
  }

  Status run(const AnalysisRequest& req, AnalysisResult& out) const override {
    Inputs in;
    EvalSetup s;
    Status ld = setup(req, in, s);
    if (!ld) return ld;
    const NnArgs& a = in.args;
    EvalReport r;
    if (Status st = run_eval(s.net, s.cfg, s.calib(), s.test, static_cast<int>(a.samples),
                             static_cast<int>(a.reference), r, true);
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
      add_scalar(out, "reference_code_mismatches", "", r.reference.code_mismatches);
    }
    out.notes.push_back(fmt::format("model {} ({}), {} mode", in.model, fmt::join(s.net.sizes(), "-"),
                                    mode_name(s.cfg.mode)));
    out.notes.push_back(fmt::format("hardware {}", in.hardware));
    out.notes.push_back(fmt::format("{} test images from {}", r.samples, s.dir));
    for (const auto& w : ld.warnings) out.notes.push_back("warning: " + w);
    out.stats.timepoints = r.samples;
    return {};
  }
};

class McAnalysis : public NnAnalysis {
 public:
  explicit McAnalysis(std::string data_dir) : NnAnalysis(std::move(data_dir)) {
    name = "nn_mc";
    description = "Monte Carlo accuracy of the mapped circuit over mismatch draws (as `anasim nn mc`)";
    params = common_params();
    params.push_back(ParamDecl("trials").def(10).range(1, 1e6).doc("trials per sweep point").bind<&NnArgs::trials>());
    params.push_back(ParamDecl("seed").def(1).range(0, 9007199254740992.0).doc("seed of the mismatch draws")
                         .bind<&NnArgs::seed>());
    params.push_back(ParamDecl("sweep").kind(ParamKind::Text)
                         .doc("PARAM=v1,v2,...: a hardware parameter (or opamp.<name>) to sweep").bind<&NnArgs::sweep>());
    params.push_back(checkpoint_param("HDF5 file (relative to this file) rewritten after every round of trials; a "
                                      "rerun with the same arguments resumes from it"));
  }

  Status run(const AnalysisRequest& req, AnalysisResult& out) const override {
    Inputs in;
    EvalSetup s;
    Status ld = setup(req, in, s);
    if (!ld) return ld;
    McOptions o;
    if (Status st = options(req, in.args, s.cfg, o); !st) return st;
    o.checkpoint = checkpoint_setup(req, in, o.identity);
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
      // program: compensated: what the targets were compensated to, once, before every trial's draw.
      for (size_t l = 0; l < p.program.size(); ++l) {
        const LayerProgram& lp = p.program[l];
        out.scalars.push_back(ResultScalar{fmt::format("program_residual_layer{}{}", l, at), "", lp.residual});
        out.scalars.push_back(ResultScalar{fmt::format("program_residual_out_layer{}{}", l, at), "", lp.residual_out});
        out.scalars.push_back(ResultScalar{fmt::format("program_scale_factor_layer{}{}", l, at), "", lp.scale_factor});
      }
    }
    out.notes.push_back(fmt::format("model {} ({}), {} mode, seed {}", in.model, fmt::join(s.net.sizes(), "-"),
                                    mode_name(s.cfg.mode), o.seed));
    out.notes.push_back(fmt::format("hardware {}", in.hardware));
    out.notes.push_back(fmt::format("{} trials x {} test images from {}", o.trials, r.samples, s.dir));
    if (r.resumed > 0) out.notes.push_back(fmt::format("resumed {} trials from the checkpoint {}", r.resumed, o.checkpoint));
    for (const auto& w : ld.warnings) out.notes.push_back("warning: " + w);
    out.stats.timepoints = static_cast<long>(o.trials) * static_cast<long>(r.points.size());
    return {};
  }

 protected:
  Status options(const AnalysisRequest& req, const NnArgs& a, const HardwareConfig& cfg, McOptions& o) const {
    o.trials = static_cast<int>(a.trials);
    o.seed = a.seed;
    o.samples = static_cast<int>(a.samples);
    if (!a.sweep.empty())
      if (Status st = parse_mc_sweep(a.sweep, cfg, o); !st) return located(st, arg_loc(req, "sweep"));
    return {};
  }

  Status check_more(const AnalysisRequest& req, const Inputs& in) const override {
    McOptions o;
    return options(req, in.args, in.cfg, o);
  }
};

// Latency and energy per inference from the transient of the mapped circuit (as `anasim nn energy`).
class EnergyAnalysis : public NnAnalysis {
 public:
  explicit EnergyAnalysis(std::string data_dir) : NnAnalysis(std::move(data_dir)) {
    name = "nn_energy";
    description = "latency and energy per inference from the transient of the mapped circuit (as `anasim nn energy`)";
    params = common_params();
    params.push_back(ParamDecl("from_previous").kind(ParamKind::Flag).range(0, 1)
                         .doc("step from the previous image's settled state (else from reset)")
                         .bind<&NnArgs::from_previous>());
    params.push_back(ParamDecl("tstop").unit("s").range(0, 1e3)
                         .doc("nominal transient length: the largest step is 1/500 of it (0 = automatic)")
                         .bind<&NnArgs::tstop>());
    params.push_back(ParamDecl("engine").kind(ParamKind::Flag).range(0, 1)
                         .doc("the engine's transient of the full mapped netlist per image (the fast path's reference)")
                         .bind<&NnArgs::engine>());
    params.push_back(checkpoint_param("HDF5 file (relative to this file) rewritten after every round of images; a "
                                      "rerun with the same arguments resumes from it"));
  }

  Status run(const AnalysisRequest& req, AnalysisResult& out) const override {
    Inputs in;
    EvalSetup s;
    Status ld = setup(req, in, s);
    if (!ld) return ld;
    const NnArgs& a = in.args;
    TransientOptions o;
    o.from_previous = a.from_previous;
    o.tstop = a.tstop;
    o.engine = a.engine;
    o.checkpoint = checkpoint_setup(req, in, o.identity);
    EnergyReport r;
    if (Status st = run_energy(s.net, s.cfg, s.calib(), s.test, static_cast<int>(a.samples), o, r); !st)
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
    if (r.resumed > 0) out.notes.push_back(fmt::format("resumed {} images from the checkpoint {}", r.resumed, o.checkpoint));
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
