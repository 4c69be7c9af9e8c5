// `anasim nn train | eval | import-keras`: parses options, calls nn/, prints progress and results.
#include "cli/nn_commands.hpp"
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iterator>
#include <omp.h>
#include <unistd.h>
#include "engine/checkpoint.hpp"
#include "engine/distribute.hpp"
#include "engine/export_spice.hpp"
#include "engine/output_file.hpp"
#include "nn/dataset.hpp"
#include "nn/energy.hpp"
#include "nn/evaluate.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/netlist_builder.hpp"
#include "nn/mlp.hpp"
#include "nn/model_io.hpp"
#include "nn/train.hpp"

namespace anasim {

namespace {

using namespace anasim::nn;

int report(const Status& st) {
  for (const auto& w : st.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (st.ok()) return 0;
  fmt::print(stderr, "{}\n", st.to_string());
  switch (st.errors[0].kind) {
    case ErrorKind::Input: return 2;
    case ErrorKind::Numerical: return 3;
    default: return 1;
  }
}

// Everything the nn subcommands read from the command line.
struct NnArgs {
  CLI::App* train = nullptr;
  CLI::App* eval = nullptr;
  CLI::App* import = nullptr;
  CLI::App* export_spice = nullptr;
  CLI::App* mc = nullptr;
  CLI::App* energy = nullptr;
  std::string per_sample;              // energy: per-sample CSV
  bool from_previous = false;          // energy: step from the previous image's settled state
  bool engine = false;                 // energy: the engine's transient of the full netlist (slow reference)
  double tstop = 0;                    // energy: run length [s] (0 = automatic)
  bool tran = false;                   // export-spice: the transient deck
  std::string config;                  // eval / export-spice / mc: hardware config (YAML)
  std::string mode;                    // --mode analog|hybrid (overrides the config)
  int samples = 0;                     // eval / mc: test images (0 = all)
  int reference = 0;                   // eval: samples compared with the MNA solve
  bool reference_cold = false;         // eval: MNA reference from scratch (operating_point) on every sample
  bool json = false;                   // eval: machine-readable summary
  int sample = 0;                      // export-spice: test image index
  std::string yaml_out;                // export-spice: also write the netlist as YAML
  int mc_trials = 10;
  unsigned long long mc_seed = 1;
  std::string sweep;                   // mc: PARAM=v1,v2,...
  std::string checkpoint;              // mc, energy: checkpoint file (resume from it when present)
  bool progress = false;               // mc, energy: progress on stderr also when it is not a terminal
  std::string data_dir;                // --data
  std::string dataset = "mnist";       // --dataset
  std::string output;                  // -o
  std::string model;                   // eval: model file; import-keras: Keras file
  bool keras = false;                  // eval: the model is a Keras file
  double eval_noise = 0.0;             // eval: also test with multiplicative weight noise of this sigma
  int trials = 10;                     // eval: number of noise draws
  int hidden = 128;
  int hidden2 = 0;                     // 0 = no second hidden layer
  std::vector<int> layers;             // overrides hidden/hidden2
  std::string optimizer = "adam";
  std::string schedule = "cosine";
  TrainOptions opt;
};

std::string percent(double a) { return fmt::format("{:.2f}%", 100.0 * a); }

Status load_data(const NnArgs& a, bool need_train, DatasetKind& kind, std::string& dir, Dataset* train,
                 Dataset& test) {
  if (Status st = parse_dataset_kind(a.dataset, kind); !st) return st;
  if (Status st = find_data_dir(kind, a.data_dir, need_train, dir); !st) return st;
  if (train)
    if (Status st = load_split(dir, Split::Train, *train); !st) return st;
  return load_split(dir, Split::Test, test);
}

int cmd_train(NnArgs& a) {
  TrainOptions& o = a.opt;
  if (a.optimizer == "adam") o.optimizer = Optimizer::Adam;
  else if (a.optimizer == "sgd") o.optimizer = Optimizer::Sgd;
  else return report(Status::input(fmt::format("unknown optimizer '{}' (expected adam or sgd)", a.optimizer)));
  if (a.schedule == "cosine") o.schedule = LrSchedule::Cosine;
  else if (a.schedule == "constant") o.schedule = LrSchedule::Constant;
  else return report(Status::input(fmt::format("unknown schedule '{}' (expected cosine or constant)", a.schedule)));
  if (Status st = validate(o); !st) return report(st);

  DatasetKind kind;
  std::string dir;
  Dataset train, test;
  const auto t_load = std::chrono::steady_clock::now();
  if (Status st = load_data(a, true, kind, dir, &train, test); !st) return report(st);
  const int pixels = static_cast<int>(train.images.cols());
  if (test.images.cols() != pixels)
    return report(Status::input(fmt::format("training images have {} pixels, test images {}", pixels,
                                            test.images.cols())));
  constexpr int kClasses = 10;
  std::vector<int> sizes = a.layers;
  if (sizes.empty()) {
    if (a.hidden < 1) return report(Status::input(fmt::format("--hidden must be at least 1, got {}", a.hidden)));
    if (a.hidden2 < 0) return report(Status::input(fmt::format("--hidden2 must be >= 0, got {}", a.hidden2)));
    sizes = {pixels, a.hidden};
    if (a.hidden2 > 0) sizes.push_back(a.hidden2);
    sizes.push_back(kClasses);
  } else if (sizes.size() < 2 || sizes.front() != pixels || sizes.back() != kClasses) {
    return report(Status::input(fmt::format("--layers {} must start with {} (pixels per image) and end with {} (classes)",
                                            fmt::join(sizes, ","), pixels, kClasses)));
  }
  Mlp net;
  if (Status st = make_mlp(sizes, o.seed, net); !st) return report(st);

  const std::string canonical = fmt::format(
      "anasim nn train --dataset {} --layers {} --epochs {} --lr {} --batch {} --seed {} --noise {} --optimizer {} "
      "--schedule {} --shift {} --weight-decay {}{}",
      a.dataset, fmt::join(sizes, ","), o.epochs, o.lr, o.batch, o.seed, o.noise, a.optimizer, a.schedule, o.shift,
      o.weight_decay, o.optimizer == Optimizer::Sgd ? fmt::format(" --momentum {}", o.momentum) : "");
  fmt::print("anasim nn train: {} from {} ({} training, {} test images, {}x{}), loaded in {:.1f} s\n",
             dataset_name(kind), dir, train.size(), test.size(), train.rows, train.cols,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count());
  fmt::print("  network {} ({} parameters), {} threads\n  {}\n", fmt::join(sizes, "-"), net.parameter_count(),
             omp_get_max_threads(), canonical);
  fmt::print("  {:>5} {:>9} {:>8} {:>8} {:>10} {:>8}\n", "epoch", "loss", "train", "test", "lr", "time[s]");
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = nn::train(net, train, &test, o, [](const EpochReport& r) {
    fmt::print("  {:>5} {:>9.5f} {:>8} {:>8} {:>10.3e} {:>8.2f}\n", r.epoch, r.loss, percent(r.train_accuracy),
               percent(r.test_accuracy), r.lr, r.seconds);
    std::fflush(stdout);
  });
  if (!st) return report(st);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<int> pred = predict(net, test.images);
  long right = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) right += pred[i] == test.labels[i];
  const double acc = static_cast<double>(right) / static_cast<double>(test.size());
  fmt::print("final test accuracy: {} ({}/{}), training time {:.1f} s\n", percent(acc), right, test.size(), seconds);

  if (!a.output.empty()) {
    ModelInfo info;
    info.epochs = o.epochs;
    info.lr = o.lr;
    info.seed = o.seed;
    info.noise = o.noise;
    info.train_samples = train.size();
    info.test_accuracy = acc;
    info.test_samples = test.size();
    info.batch = o.batch;
    info.shift = o.shift;
    info.weight_decay = o.weight_decay;
    info.optimizer = a.optimizer;
    info.schedule = a.schedule;
    info.dataset = dataset_name(kind);
    info.created_by = canonical;
    if (Status s = save_model(a.output, net, info); !s) return report(s);
    fmt::print("wrote {}\n", a.output);
  }
  return 0;
}

int cmd_eval_hw(const NnArgs& a);

// Options given on the command line that the chosen kind of evaluation would ignore: an error naming them.
Status check_eval_options(const NnArgs& a) {
  static const char* hw_only[] = {"--mode", "--samples", "--reference", "--reference-cold", "--json"};
  static const char* digital_only[] = {"--noise", "--trials", "--seed"};
  const bool hw = !a.config.empty();
  std::vector<std::string> bad;
  const std::vector<const char*> options = hw ? std::vector<const char*>(std::begin(digital_only), std::end(digital_only))
                                              : std::vector<const char*>(std::begin(hw_only), std::end(hw_only));
  for (const char* o : options)
    if (a.eval->count(o) > 0) bad.push_back(o);
  if (bad.empty()) return {};
  return Status::input(fmt::format("{} {} only with{} --config (the {} evaluation ignores {})", fmt::join(bad, ", "),
                                   bad.size() == 1 ? "applies" : "apply", hw ? "out" : "", hw ? "hardware" : "digital",
                                   bad.size() == 1 ? "it" : "them"));
}

// --samples: 0 = all of the test set's `available` images; negative or more than available is an error.
Status check_samples(int samples, long available) {
  if (samples < 0) return Status::input(fmt::format("--samples must be >= 0 (0 = all), got {}", samples));
  if (samples > available)
    return Status::input(fmt::format("--samples {} exceeds the {} images of the test set", samples, available));
  return {};
}

int cmd_eval(const NnArgs& a) {
  if (Status st = check_eval_options(a); !st) return report(st);
  if (!a.config.empty()) return cmd_eval_hw(a);
  if (a.model.empty()) return report(Status::input("a model file is required (positional or --model)"));
  if (!(a.eval_noise >= 0.0) || a.trials < 1)
    return report(Status::input("--noise must be >= 0 and --trials at least 1"));
  Mlp net;
  ModelInfo info;
  Status ld = a.keras ? import_keras(a.model, net) : load_model(a.model, net, &info);
  if (!ld) return report(ld);
  report(ld);  // warnings
  DatasetKind kind;
  std::string dir;
  Dataset test;
  if (Status st = load_data(a, false, kind, dir, nullptr, test); !st) return report(st);
  if (test.images.cols() != net.inputs())
    return report(Status::input(fmt::format("{}: the model has {} inputs, the {} images {} pixels", a.model,
                                            net.inputs(), dataset_name(kind), test.images.cols())));
  if (net.outputs() < 10)
    return report(Status::input(fmt::format("{}: the model has {} outputs, {} has 10 classes", a.model,
                                            net.outputs(), dataset_name(kind))));
  const std::vector<int> pred = predict(net, test.images);
  long right = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) right += pred[i] == test.labels[i];
  fmt::print("model {} ({}, {} parameters)\n", a.model, fmt::join(net.sizes(), "-"), net.parameter_count());
  if (!info.created_by.empty()) fmt::print("  trained with: {}\n", info.created_by);
  fmt::print("test accuracy on {} ({}): {} ({}/{})\n", dataset_name(kind), dir,
             percent(static_cast<double>(right) / test.size()), right, test.size());
  if (a.eval_noise > 0.0) {
    Rng rng(a.opt.seed);
    std::vector<double> accs;
    for (int t = 0; t < a.trials; ++t) {
      Mlp noisy = net;
      perturb_weights(noisy, a.eval_noise, rng);
      accs.push_back(accuracy(noisy, test.images, test.labels));
    }
    double mean = 0.0, var = 0.0;
    for (double x : accs) mean += x / accs.size();
    for (double x : accs) var += (x - mean) * (x - mean) / std::max<std::size_t>(1, accs.size() - 1);
    fmt::print("with weight noise w*(1+{}*N(0,1)), {} draws (seed {}): mean {}, std {:.2f}%, min {}, max {}\n",
               a.eval_noise, a.trials, a.opt.seed, percent(mean), 100.0 * std::sqrt(var),
               percent(*std::min_element(accs.begin(), accs.end())),
               percent(*std::max_element(accs.begin(), accs.end())));
  }
  return 0;
}

// ---- hardware commands: eval --config, export-spice, mc ----

// Model, hardware config (with --mode), test set and calibration images (nn/evaluate.hpp load_eval_setup).
using HwSetup = EvalSetup;

Status load_hw_setup(const NnArgs& a, HwSetup& h) {
  if (a.model.empty()) return Status::input("--model is required");
  if (a.config.empty()) return Status::input("--config is required (a YAML file with a hardware: section)");
  if (Status st = load_hardware_config(a.config, h.cfg); !st) return st;
  if (!a.mode.empty())
    if (Status st = set_hardware_param(h.cfg, "mode", a.mode); !st) return st;
  DatasetKind kind;
  if (Status st = parse_dataset_kind(a.dataset, kind); !st) return st;
  Status st = load_eval_setup(a.model, a.keras, kind, a.data_dir, h);
  if (st) {
    for (const auto& w : st.warnings) fmt::print(stderr, "warning: {}\n", w);
    st.warnings.clear();
  }
  return st;
}

std::string json_num(double v) { return std::isfinite(v) ? fmt::format("{:.10g}", v) : "null"; }

// Compensated programming (hardware program: compensated): per layer the residual weight error, on `out`
// (stderr by default: stdout may be the --json summary); `what` says whose targets they are.
void print_program(const std::vector<LayerProgram>& program, std::FILE* out = stderr, const std::string& what = "") {
  for (size_t l = 0; l < program.size(); ++l) {
    const LayerProgram& p = program[l];
    fmt::print(out, "compensated programming{}, layer {}: residual weight error {:.3g} (max, relative), {:.3g} "
               "(rms output error on the calibration images), scale x{:.4f}, {} port solves, {:.2f} s\n",
               what, l, p.residual, p.residual_out, p.scale_factor, p.iterations, p.seconds);
  }
}

int cmd_eval_hw(const NnArgs& a) {
  HwSetup h;
  if (Status st = load_hw_setup(a, h); !st) return report(st);
  if (Status st = check_samples(a.samples, h.test.size()); !st) return report(st);
  EvalReport r;
  Status st = run_eval(h.net, h.cfg, h.calib(), h.test, a.samples, a.reference, r, !a.reference_cold);
  if (!st) return report(st);
  print_program(r.program);
  if (a.json) {
    fmt::print("{{\"digital_accuracy\": {}, \"analog_accuracy\": {}, \"agreement\": {}, \"samples\": {}, "
               "\"seconds\": {}, \"seconds_prepare\": {}, \"mode\": \"{}\", \"opamps\": {}",
               json_num(r.digital_accuracy), json_num(r.analog_accuracy), json_num(r.agreement), r.samples,
               json_num(r.seconds), json_num(r.seconds_prepare), mode_name(h.cfg.mode), r.opamps);
    if (!r.program.empty()) {
      std::vector<std::string> layers;
      for (const LayerProgram& p : r.program)
        layers.push_back(fmt::format("{{\"residual\": {}, \"residual_out\": {}, \"scale_factor\": {}, "
                                     "\"iterations\": {}, \"seconds\": {}}}",
                                     json_num(p.residual), json_num(p.residual_out), json_num(p.scale_factor),
                                     p.iterations, json_num(p.seconds)));
      fmt::print(", \"program\": [{}]", fmt::join(layers, ", "));
    }
    if (r.has_reference)
      fmt::print(", \"reference_samples\": {}, \"reference_max_rel_diff\": {}, \"reference_max_abs_diff\": {}, "
                 "\"reference_seconds_per_sample\": {}, \"reference_saturated_samples\": {}, "
                 "\"reference_code_mismatches\": {}",
                 r.reference.samples, json_num(r.reference.max_rel), json_num(r.reference.max_abs),
                 json_num(r.reference.seconds_per_sample), r.reference.saturated, r.reference.code_mismatches);
    fmt::print("}}\n");
    return 0;
  }
  fmt::print("model {} ({}), hardware {} ({} mode, {} op-amps)\n", a.model, fmt::join(h.net.sizes(), "-"), a.config,
             mode_name(h.cfg.mode), r.opamps);
  fmt::print("  test images        {} from {}\n", r.samples, h.dir);
  fmt::print("  digital accuracy   {}\n", percent(r.digital_accuracy));
  fmt::print("  analog accuracy    {}\n", percent(r.analog_accuracy));
  fmt::print("  agreement          {}\n", percent(r.agreement));
  fmt::print("  time               {:.3f} s ({:.3f} s port reduction, {:.1f} us/image; {:.2f} sweeps, {:.1f} Newton "
             "iterations per image; {} threads)\n",
             r.seconds, r.seconds_prepare, 1e6 * (r.seconds - r.seconds_prepare) / std::max(1, r.samples),
             static_cast<double>(r.stats.sweeps) / std::max(1L, r.stats.images),
             static_cast<double>(r.stats.newton) / std::max(1L, r.stats.images), omp_get_max_threads());
  if (r.has_reference)
    fmt::print("  MNA reference      {} samples ({} unknowns, {} start, {:.1f} Newton iterations and {:.3f} s per sample): "
               "max rel diff {:.3g}, max abs diff {:.3g} V, {} with saturated op-amps, {} with other ADC codes\n"
               "    worst: {}\n",
               r.reference.samples, r.reference.unknowns, r.reference.warm_start ? "warm" : "cold",
               static_cast<double>(r.reference.newton_iterations) / std::max(1, r.reference.samples),
               r.reference.seconds_per_sample, r.reference.max_rel, r.reference.max_abs, r.reference.saturated,
               r.reference.code_mismatches, r.reference.worst);
  return 0;
}

int cmd_export_spice(const NnArgs& a) {
  HwSetup h;
  if (Status st = load_hw_setup(a, h); !st) return report(st);
  if (a.sample < 0 || a.sample >= h.test.size())
    return report(Status::input(fmt::format("--sample must lie in 0..{}", h.test.size() - 1)));
  MappedNetwork map;
  if (Status st = map_network(h.net, h.cfg, h.calib(), map); !st) return report(st);
  HardwareInstance hw;
  realize(map, h.cfg.seed, 0, hw);
  FastEvaluator fe;
  if (Status st = fe.prepare(hw); !st) return report(st);
  std::vector<LayerVoltages> v;
  LayerCodes codes;  // hybrid layers take their DAC codes from the evaluation of this sample
  if (Status st = fe.evaluate_one(h.test.images.row(a.sample).data(), static_cast<std::uint64_t>(a.sample), v, &codes);
      !st)
    return report(st);
  FlatNetlist fn;
  NetlistNames names;
  TranSpec ts;  // --tran: the input step from reset over the automatic run length (or --tstop)
  ts.tstop = a.tstop > 0 ? a.tstop : 4 * default_tstop(h.cfg, static_cast<int>(map.layers.size()));
  ts.tmax = ts.tstop / 500;
  if (Status st = build_netlist(hw, codes, static_cast<std::uint64_t>(a.sample), fn, names, a.tran ? &ts : nullptr);
      !st)
    return report(st);
  fn.title = fmt::format("{} - test image {} (label {})", fn.title, a.sample, h.test.labels[a.sample]);
  if (Status st = anasim::export_spice(fn, a.output); !st) return report(st);
  if (!a.yaml_out.empty())
    if (Status st = write_output_file(a.yaml_out, netlist_yaml(fn)); !st) return report(st);
  fmt::print("wrote {} ({} devices, {} nodes): test image {}, label {}; outputs {} ... (pre-ADC)\n", a.output,
             fn.devices.size(), fn.node_names.size() - 1, a.sample, h.test.labels[a.sample],
             names.tia_out.back().front());
  return 0;
}

// `nn energy`: the engine's transient of the full mapped circuit per test image (nn/energy.hpp).
int cmd_energy(const NnArgs& a) {
  HwSetup h;
  if (Status st = load_hw_setup(a, h); !st) return report(st);
  if (Status st = check_samples(a.samples, h.test.size()); !st) return report(st);
  if (!(a.tstop >= 0)) return report(Status::input(fmt::format("--tstop must be >= 0 (0 = automatic), got {}", a.tstop)));
  TransientOptions o;
  o.from_previous = a.from_previous;
  o.tstop = a.tstop;
  o.engine = a.engine;
  o.checkpoint = a.checkpoint;
  o.identity.add("hardware", fmt::format("{} ({}), {} mode", std::filesystem::path(a.config).filename().string(),
                                         file_digest(a.config), mode_name(h.cfg.mode)));
  if (a.progress) dist::set_progress(dist::ProgressMode::Always);
  EnergyReport r;
  if (Status st = run_energy(h.net, h.cfg, h.calib(), h.test, a.samples, o, r); !st) return report(st);
  if (!dist::is_root()) return 0;  // rank 0 prints and writes the results
  if (r.resumed > 0)  // on stderr: stdout may be the --json summary
    fmt::print(stderr, "resumed {} of {} images from the checkpoint {}\n", r.resumed, r.samples, o.checkpoint);
  if (!a.per_sample.empty()) {
    std::string csv = "sample,label,class,latency_s,energy_j\n";
    for (int k = 0; k < r.samples; ++k)
      csv += fmt::format("{},{},{},{:.10g},{:.10g}\n", k, r.labels[k], r.images[k].cls, r.images[k].settle_s,
                         r.images[k].energy_j);
    if (Status st = write_output_file(a.per_sample, csv); !st) return report(st);
  }
  if (a.json) {
    std::vector<std::string> parts, table;
    for (int p = 0; p < kNumEnergyParts; ++p)
      parts.push_back(fmt::format("\"{}\": {}", energy_part_name(p), json_num(r.energy_parts_mean_j[p])));
    for (size_t i = 0; i < r.sample_times_s.size(); ++i)
      table.push_back(fmt::format("[{}, {}]", json_num(r.sample_times_s[i]), json_num(r.accuracy_at[i])));
    const ComponentCounts& c = r.components;
    const std::string components = fmt::format(
        "\"opamps\": {}, \"cells\": {}, \"cells_open\": {}, \"resistors\": {}, \"diodes\": {}, \"dacs\": {}, "
        "\"adcs\": {}", c.opamps, c.cells, c.cells_open, c.resistors, c.diodes, c.dacs, c.adcs);
    fmt::print("{{\"samples\": {}, \"accuracy\": {}, \"latency_mean_s\": {}, \"latency_p99_s\": {}, "
               "\"energy_mean_j\": {}, \"energy_p99_j\": {}, \"energy_breakdown_j\": {{{}}}, \"macs\": {}, "
               "\"tops\": {}, \"tops_per_w\": {}, \"accuracy_vs_sample_time\": [{}], \"shortest_sample_time_s\": {}, "
               "\"components\": {{{}}}, \"seconds\": {}}}\n",
               r.samples, json_num(r.accuracy), json_num(r.latency_mean_s), json_num(r.latency_p99_s),
               json_num(r.energy_mean_j), json_num(r.energy_p99_j), fmt::join(parts, ", "), r.macs, json_num(r.tops),
               json_num(r.tops_per_w), fmt::join(table, ", "), json_num(r.shortest_sample_time_s), components,
               json_num(r.seconds));
    return 0;
  }
  fmt::print("model {} ({}), hardware {} ({} mode): {}, {} test images\n", a.model,
             fmt::join(h.net.sizes(), "-"), a.config, mode_name(h.cfg.mode),
             a.engine ? "engine transient of the full circuit" : "fast transient of the port-reduced circuit", r.samples);
  fmt::print("  accuracy           {}\n", percent(r.accuracy));
  fmt::print("  latency            mean {:.4g} s, p99 {:.4g} s (+-0.5 LSB of the last ADC)\n", r.latency_mean_s,
             r.latency_p99_s);
  fmt::print("  energy/inference   mean {:.4g} J, p99 {:.4g} J\n", r.energy_mean_j, r.energy_p99_j);
  for (int p = 0; p < kNumEnergyParts; ++p)
    fmt::print("    {:<16} {:.4g} J\n", energy_part_name(p), r.energy_parts_mean_j[p]);
  fmt::print("  {} MACs: {:.4g} TOPS, {:.4g} TOPS/W\n", r.macs, r.tops, r.tops_per_w);
  fmt::print("  components         {} op-amps, {} cells ({} open), {} resistors, {} diodes, {} DACs, {} ADCs\n",
             r.components.opamps, r.components.cells, r.components.cells_open, r.components.resistors,
             r.components.diodes, r.components.dacs, r.components.adcs);
  fmt::print("  accuracy vs sampling time (shortest within 0.1 points of settled: {:.4g} s)\n",
             r.shortest_sample_time_s);
  for (size_t i = 0; i < r.sample_times_s.size(); ++i)
    fmt::print("    {:>10.4g} s  {}\n", r.sample_times_s[i], percent(r.accuracy_at[i]));
  fmt::print("  time               {:.2f} s\n", r.seconds);
  return 0;
}

int cmd_mc(const NnArgs& a) {
  HwSetup h;
  if (Status st = load_hw_setup(a, h); !st) return report(st);
  if (a.mc_trials < 1) return report(Status::input("--trials must be at least 1"));
  if (Status st = check_samples(a.samples, h.test.size()); !st) return report(st);
  McOptions o;
  o.trials = a.mc_trials;
  o.seed = a.mc_seed;
  o.samples = a.samples;
  if (!a.sweep.empty())
    if (Status st = parse_mc_sweep(a.sweep, h.cfg, o); !st) return report(st);
  o.checkpoint = a.checkpoint;
  o.identity.add("hardware", fmt::format("{} ({}), {} mode", std::filesystem::path(a.config).filename().string(),
                                         file_digest(a.config), mode_name(h.cfg.mode)));
  if (a.progress) dist::set_progress(dist::ProgressMode::Always);
  McReport r;
  Status st = run_mc(h.net, h.cfg, h.calib(), h.test, o, r);
  if (!st) return report(st);
  if (!dist::is_root()) return 0;  // rank 0 prints and writes the results
  const std::string ranks = dist::size() > 1 ? fmt::format("{} MPI ranks x ", dist::size()) : "";
  fmt::print("Monte Carlo: model {}, hardware {} ({} mode), {} trials x {} test images, seed {}, {}{} threads\n",
             a.model, a.config, mode_name(h.cfg.mode), o.trials, r.samples, o.seed, ranks, omp_get_max_threads());
  fmt::print("digital accuracy {}; {:.2f} s per trial\n", percent(r.digital_accuracy), r.seconds_per_trial);
  if (r.resumed > 0)
    fmt::print("resumed {} of {} trials from the checkpoint {}\n", r.resumed,
               static_cast<long>(o.trials) * static_cast<long>(r.points.size()), o.checkpoint);
  if (dist::size() > 1) {
    const double trials = static_cast<double>(o.trials) * static_cast<double>(r.points.size());
    fmt::print("communication: {:.0f} bytes per trial between ranks\n", dist::bytes_exchanged() / trials);
  }
  const std::string pname = o.sweep_param.empty() ? "point" : o.sweep_param;
  fmt::print("{:>16} {:>9} {:>8} {:>9} {:>9}\n", pname, "mean", "std", "min", "p5");
  for (const auto& p : r.points)
    fmt::print("{:>16} {:>9} {:>7.2f}% {:>9} {:>9}\n", p.value.empty() ? "nominal" : p.value, percent(p.mean),
               100.0 * p.std, percent(p.min), percent(p.p5));
  for (const auto& p : r.points)  // the targets every trial's draw deviates from
    print_program(p.program, stdout,
                  p.value.empty() ? " (before the draws)" : fmt::format(" ({}={}, before the draws)", pname, p.value));
  if (!a.output.empty()) {
    if (Status s = write_mc_hdf5(a.output, r, o); !s) return report(s);
    fmt::print("wrote {}\n", a.output);
  }
  return 0;
}

int cmd_import(const NnArgs& a) {
  Mlp net;
  Status st = import_keras(a.model, net);
  if (!st) return report(st);
  report(st);
  ModelInfo info;
  info.dataset = "keras import";
  info.created_by = "anasim nn import-keras " + a.model;
  if (Status s = save_model(a.output, net, info); !s) return report(s);
  fmt::print("imported {} ({}) into {}\n", a.model, fmt::join(net.sizes(), "-"), a.output);
  return 0;
}

}  // namespace

const CLI::Validator& seed_validator() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        if (digits) std::strtoull(s.c_str(), nullptr, 10);
        if (!digits || errno == ERANGE)
          return fmt::format("seed '{}' is not an integer from 0 to 18446744073709551615 (2^64 - 1)", s);
        return {};
      },
      "UINT64");
  return v;
}

std::function<int()> add_nn_commands(CLI::App& app) {
  auto a = std::make_shared<NnArgs>();
  CLI::App* nn = app.add_subcommand("nn", "neural networks: train, evaluate and import MLP models");
  nn->require_subcommand(1);

  auto data_options = [a](CLI::App* c) {
    c->add_option("--data", a->data_dir, "directory with the IDX files (default: $ANASIM_DATA, then standard places)");
    c->add_option("--dataset", a->dataset, "mnist or fashion-mnist")->capture_default_str();
  };

  a->train = nn->add_subcommand("train", "train an MLP classifier on MNIST / Fashion-MNIST");
  CLI::App* t = a->train;
  data_options(t);
  t->add_option("--hidden", a->hidden, "neurons in the hidden layer")->capture_default_str();
  t->add_option("--hidden2", a->hidden2, "neurons in a second hidden layer (0: none)")->capture_default_str();
  t->add_option("--layers", a->layers, "all layer sizes, e.g. 784,128,10 (overrides --hidden/--hidden2)")
      ->delimiter(',');
  t->add_option("--epochs", a->opt.epochs, "passes over the training set")->capture_default_str();
  t->add_option("--lr", a->opt.lr, "initial learning rate")->capture_default_str();
  t->add_option("--schedule", a->schedule, "learning-rate schedule: cosine or constant")->capture_default_str();
  t->add_option("--batch", a->opt.batch, "minibatch size")->capture_default_str();
  t->add_option("--seed", a->opt.seed, "random seed (initialisation, order, shifts, noise)")
      ->check(seed_validator())
      ->capture_default_str();
  t->add_option("--noise", a->opt.noise, "hardware-aware training: weight noise sigma, w*(1+sigma*N(0,1))")
      ->capture_default_str();
  t->add_option("--optimizer", a->optimizer, "adam or sgd (with momentum)")->capture_default_str();
  t->add_option("--momentum", a->opt.momentum, "SGD momentum")->capture_default_str();
  t->add_option("--weight-decay", a->opt.weight_decay, "decoupled weight decay per step (times lr)")
      ->capture_default_str();
  t->add_option("--shift", a->opt.shift, "augmentation: random shifts of up to +-N pixels")->capture_default_str();
  t->add_option("-o,--output", a->output, "write the trained model to this HDF5 file");

  a->eval = nn->add_subcommand("eval", "test-set accuracy of a model file");
  a->eval->add_option("model,--model", a->model, "model file (anasim-mlp-1, or Keras with --keras)");
  data_options(a->eval);
  a->eval->add_option("--config", a->config, "hardware config (YAML): evaluate through the mapped circuit");
  a->eval->add_option("--mode", a->mode, "analog or hybrid (overrides the config)");
  a->eval->add_option("--samples", a->samples, "test images (0 = all)")->capture_default_str();
  a->eval->add_option("--reference", a->reference, "compare the first N images with the full MNA solve");
  a->eval->add_flag("--reference-cold", a->reference_cold,
                    "start every MNA solve from scratch (default: Newton from the fast path's voltages)");
  a->eval->add_flag("--json", a->json, "print a machine-readable summary");
  a->eval->add_flag("--keras", a->keras, "the model is a Keras HDF5 file of dense layers");
  a->eval->add_option("--noise", a->eval_noise, "also evaluate with weight noise w*(1+sigma*N(0,1))")
      ->capture_default_str();
  a->eval->add_option("--trials", a->trials, "noise draws to average")->capture_default_str();
  a->eval->add_option("--seed", a->opt.seed, "seed of the noise draws")->check(seed_validator())->capture_default_str();

  a->import = nn->add_subcommand("import-keras", "convert a Keras HDF5 dense model into an anasim model file");
  a->import->add_option("keras_file", a->model, "Keras .h5 file")->required();
  a->import->add_option("-o,--output", a->output, "anasim model file to write")->required();

  a->export_spice = nn->add_subcommand("export-spice", "write the mapped circuit for one test image as an ngspice deck");
  CLI::App* e = a->export_spice;
  e->add_option("--model", a->model, "model file")->required();
  e->add_option("--config", a->config, "hardware config (YAML)")->required();
  data_options(e);
  e->add_option("--mode", a->mode, "analog or hybrid (overrides the config)");
  e->add_option("--sample", a->sample, "test image index")->capture_default_str();
  e->add_option("-o,--output", a->output, "deck to write")->required();
  e->add_option("--yaml", a->yaml_out, "also write the netlist as anasim YAML");
  e->add_flag("--tran", a->tran, "the transient deck: input step from reset at t = 0, rails as sources");
  e->add_option("--tstop", a->tstop, "with --tran: transient length [s] (0 = 4x the automatic first guess)");

  a->mc = nn->add_subcommand("mc", "Monte Carlo accuracy of the mapped circuit over mismatch draws");
  CLI::App* m = a->mc;
  m->add_option("--model", a->model, "model file")->required();
  m->add_option("--config", a->config, "hardware config (YAML)")->required();
  data_options(m);
  m->add_option("--mode", a->mode, "analog or hybrid (overrides the config)");
  m->add_option("--trials", a->mc_trials, "trials per sweep point")->capture_default_str();
  m->add_option("--seed", a->mc_seed, "seed of the mismatch draws")->check(seed_validator())->capture_default_str();
  m->add_option("--samples", a->samples, "test images per trial (0 = all)")->capture_default_str();
  m->add_option("--sweep", a->sweep, "PARAM=v1,v2,...: a hardware parameter (or opamp.<name>) to sweep");
  m->add_option("-o,--output", a->output, "write the per-trial accuracies to this HDF5 file");
  m->add_option("--checkpoint", a->checkpoint,
                "HDF5 file rewritten after every round of trials; a rerun with the same arguments resumes from it");
  m->add_flag("--progress", a->progress, "progress and ETA on stderr also when it is not a terminal");

  a->energy = nn->add_subcommand("energy", "latency and energy per inference from the transient of the mapped circuit");
  CLI::App* en = a->energy;
  en->add_option("--model", a->model, "model file")->required();
  en->add_option("--config", a->config, "hardware config (YAML)")->required();
  data_options(en);
  en->add_option("--mode", a->mode, "analog or hybrid (overrides the config)");
  en->add_option("--samples", a->samples, "test images (0 = all)")->capture_default_str();
  en->add_flag("--json", a->json, "print a machine-readable summary");
  en->add_option("--per-sample", a->per_sample, "write sample,label,class,latency_s,energy_j to this CSV file");
  en->add_flag("--from-previous", a->from_previous,
               "step from the previous image's settled state (default: from reset, input DACs at code 0)");
  en->add_option("--tstop", a->tstop, "nominal transient length [s]: the largest step is 1/500 of it (0 = automatic)")
      ->capture_default_str();
  en->add_flag("--engine", a->engine,
               "run the engine's transient of the full mapped netlist per image (the slow reference of the fast path)");
  en->add_option("--checkpoint", a->checkpoint,
                 "HDF5 file rewritten after every round of images; a rerun with the same arguments resumes from it");
  en->add_flag("--progress", a->progress, "progress and ETA on stderr also when it is not a terminal");

  return [a]() -> int {
    if (*a->energy) return cmd_energy(*a);
    if (*a->export_spice) return cmd_export_spice(*a);
    if (*a->mc) return cmd_mc(*a);
    if (*a->train) return cmd_train(*a);
    if (*a->eval) return cmd_eval(*a);
    if (*a->import) return cmd_import(*a);
    return -1;
  };
}

}  // namespace anasim
