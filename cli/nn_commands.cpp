// `anasim nn train | eval | import-keras`: parses options, calls nn/, prints progress and results.
#include "cli/nn_commands.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <omp.h>
#include "nn/dataset.hpp"
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

int cmd_eval(const NnArgs& a) {
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
  t->add_option("--seed", a->opt.seed, "random seed (initialisation, order, shifts, noise)")->capture_default_str();
  t->add_option("--noise", a->opt.noise, "hardware-aware training: weight noise sigma, w*(1+sigma*N(0,1))")
      ->capture_default_str();
  t->add_option("--optimizer", a->optimizer, "adam or sgd (with momentum)")->capture_default_str();
  t->add_option("--momentum", a->opt.momentum, "SGD momentum")->capture_default_str();
  t->add_option("--weight-decay", a->opt.weight_decay, "decoupled weight decay per step (times lr)")
      ->capture_default_str();
  t->add_option("--shift", a->opt.shift, "augmentation: random shifts of up to +-N pixels")->capture_default_str();
  t->add_option("-o,--output", a->output, "write the trained model to this HDF5 file");

  a->eval = nn->add_subcommand("eval", "test-set accuracy of a model file");
  a->eval->add_option("model", a->model, "model file (anasim-mlp-1, or Keras with --keras)")->required();
  data_options(a->eval);
  a->eval->add_flag("--keras", a->keras, "the model is a Keras HDF5 file of dense layers");
  a->eval->add_option("--noise", a->eval_noise, "also evaluate with weight noise w*(1+sigma*N(0,1))")
      ->capture_default_str();
  a->eval->add_option("--trials", a->trials, "noise draws to average")->capture_default_str();
  a->eval->add_option("--seed", a->opt.seed, "seed of the noise draws")->capture_default_str();

  a->import = nn->add_subcommand("import-keras", "convert a Keras HDF5 dense model into an anasim model file");
  a->import->add_option("keras_file", a->model, "Keras .h5 file")->required();
  a->import->add_option("-o,--output", a->output, "anasim model file to write")->required();

  return [a]() -> int {
    if (*a->train) return cmd_train(*a);
    if (*a->eval) return cmd_eval(*a);
    if (*a->import) return cmd_import(*a);
    return -1;
  };
}

}  // namespace anasim
