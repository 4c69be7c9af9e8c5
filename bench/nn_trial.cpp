// Benchmark: one Monte Carlo trial of a mapped MLP (fresh mismatch draw, port reduction, every test image through
// the full circuit with the exact fast evaluator), and in the same run the per-image cost of the plain approach on
// the same circuit: factor the full MNA matrix once (KLU) and solve per image, and a full Newton operating point
// per image (what the MNA reference does).
// Usage: anasim_nn_trial [--model data/mlp_784_128_10.h5] [--config data/examples/mnist_hw.yaml] [--data DIR]
//                        [--images N] [--plain K] [--trials T] [--products K]
// --products K: in the same run, K timings of the network's float matrix products over the same images (the digital
// network's floor: what an evaluation of an ideal periphery compares with, issue 19).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <omp.h>
#include "devices/dac.hpp"
#include "devices/registry.hpp"
#include "engine/circuit.hpp"
#include "engine/newton.hpp"
#include "engine/sparse_lu.hpp"
#include "nn/dataset.hpp"
#include "nn/evaluate.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/model_io.hpp"
#include "nn/netlist_builder.hpp"

using namespace anasim;
using namespace anasim::nn;
using Clock = std::chrono::steady_clock;

namespace {
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double cpu() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
int fail(const Status& st) {
  fmt::print(stderr, "{}\n", st.to_string());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  std::string model = std::string(ANASIM_SOURCE_DIR) + "/data/mlp_784_128_10.h5";
  std::string config = std::string(ANASIM_SOURCE_DIR) + "/data/examples/mnist_hw.yaml";
  std::string data;
  int images = 0, plain = 3, trials = 1, products = 0;
  FastOptions fopt;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") model = v;
    else if (k == "--config") config = v;
    else if (k == "--data") data = v;
    else if (k == "--images") images = std::atoi(v.c_str());
    else if (k == "--plain") plain = std::atoi(v.c_str());
    else if (k == "--trials") trials = std::atoi(v.c_str());
    else if (k == "--products") products = std::atoi(v.c_str());
    else if (k == "--reltol") fopt.reltol = std::atof(v.c_str());
    else {
      fmt::print(stderr, "unknown option {}\n", k);
      return 2;
    }
  }
  Mlp net;
  if (Status st = load_model(model, net); !st) return fail(st);
  HardwareConfig cfg;
  if (Status st = load_hardware_config(config, cfg); !st) return fail(st);
  std::string dir;
  if (Status st = find_data_dir(DatasetKind::Mnist, data, true, dir); !st) return fail(st);
  Dataset train, test;
  if (Status st = load_split(dir, Split::Train, train); !st) return fail(st);
  if (Status st = load_split(dir, Split::Test, test); !st) return fail(st);
  const int n = images > 0 ? std::min(images, test.size()) : test.size();
  MappedNetwork map;
  if (Status st = map_network(net, cfg, train.images, map); !st) return fail(st);
  fmt::print("anasim_nn_trial: {} on {} ({} mode, op-amp {} level {}), {} test images, {} threads\n",
             fmt::join(map.sizes, "-"), config, mode_name(cfg.mode), cfg.opamp_part, opamp_param(cfg, "level"), n,
             omp_get_max_threads());

  // Trial 0 pays the symbolic analyses (orderings); the timed trials reuse them, as `nn mc` does.
  FastEvaluator fe;
  {
    HardwareInstance hw;
    realize(map, cfg.seed, 0, hw);
    const auto t0 = Clock::now();
    if (Status st = fe.prepare(hw, fopt); !st) return fail(st);
    fmt::print("  first port reduction (orderings + symbolic analysis + numeric): {:.3f} s\n", since(t0));
  }
  for (int t = 1; t <= trials; ++t) {
    fe.reset_stats();
    const auto t0 = Clock::now();
    const double c0 = cpu();
    HardwareInstance hw;
    realize(map, cfg.seed, t, hw);
    const double t_draw = since(t0);
    const double c1 = cpu();
    if (Status st = fe.prepare(hw, fopt); !st) return fail(st);
    const double t_prep = since(t0) - t_draw, c_prep = cpu() - c1;
    std::vector<int> cls;
    if (Status st = fe.classify(test.images, 0, n, 0, cls); !st) return fail(st);
    const double wall = since(t0), cpus = cpu() - c0;
    long right = 0;
    for (int i = 0; i < n; ++i) right += cls[i] == test.labels[i];
    const FastStats& s = fe.stats();
    fmt::print("  Monte Carlo trial {}: {:.3f} s wall ({:.3f} s CPU): draw {:.3f} s, port reduction {:.3f} s ({:.3f} s "
               "CPU), {} images {:.3f} s ({:.1f} us/image, {:.1f} us CPU/image); accuracy {:.2f}%; {:.2f} sweeps and "
               "{:.1f} Newton iterations per image, {} failures\n",
               t, wall, cpus, t_draw, t_prep, c_prep, n, s.seconds_eval, 1e6 * s.seconds_eval / n,
               1e6 * (cpus - c_prep) / n, 100.0 * right / n,
               static_cast<double>(s.sweeps) / n, static_cast<double>(s.newton) / n, s.failures);
  }

  for (int k = 0; k < products; ++k) {
    // The network's own products in float, layer by layer over all n images at once (Eigen's GEMM, the same threads):
    // A = relu(A W^T + b), without quantization.
    using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    std::vector<MatF> W;
    std::vector<Eigen::RowVectorXf> B;
    for (const DenseLayer& l : net.layers) {
      W.push_back(l.weight.cast<float>());
      B.push_back(l.bias.cast<float>().transpose());
    }
    const auto t0 = Clock::now();
    MatF A = test.images.topRows(n), Z;
    for (size_t l = 0; l < W.size(); ++l) {
      Z.noalias() = A * W[l].transpose();
      Z.rowwise() += B[l];
      A = l + 1 < W.size() ? MatF(Z.cwiseMax(0.0f)) : Z;
    }
    long right = 0;
    for (int i = 0; i < n; ++i) {
      Eigen::Index c;
      A.row(i).maxCoeff(&c);
      right += c == test.labels[i];
    }
    fmt::print("  float products of the network (reference): {} images {:.4f} s; accuracy {:.2f}%\n", n, since(t0),
               100.0 * right / n);
  }
  if (plain > 0) {
    // The plain approach on the same circuit: the full MNA matrix (every crossbar wire node) factored by KLU once
    // and solved per image, and the full Newton operating point per image. The Newton is started from the fast
    // path's voltages at the nonlinear devices (2 iterations, each a KLU refactorization); a cold start from zero
    // takes tens of iterations.
    HardwareInstance hw;
    realize(map, cfg.seed, 1, hw);
    if (Status st = fe.prepare(hw, fopt); !st) return fail(st);
    ReferenceReport rep;
    auto t0 = Clock::now();
    if (Status st = compare_reference(hw, fe, test.images, plain, rep, true); !st) return fail(st);
    fmt::print("  plain MNA: {} unknowns; Newton operating point per image {:.3f} s ({:.1f} iterations, warm start); "
               "agreement with the fast path: max rel diff {:.3g}, max abs diff {:.3g} V\n",
               rep.unknowns, rep.seconds_per_sample, static_cast<double>(rep.newton_iterations) / rep.samples,
               rep.max_rel, rep.max_abs);
    std::vector<LayerVoltages> v;
    LayerCodes codes;
    if (Status st = fe.evaluate_one(test.images.row(0).data(), 0, v, &codes); !st) return fail(st);
    FlatNetlist fn;
    NetlistNames names;
    if (Status st = build_netlist(hw, codes, 0, fn, names); !st) return fail(st);
    t0 = Clock::now();
    Circuit c;
    if (Status st = c.build(fn, builtin_catalog()); !st) return fail(st);
    const double t_build = since(t0);
    NewtonSolver solver(c, fn.options);
    solver.load();  // the Jacobian at x = 0: the same sparsity and conditioning as at any operating point
    std::vector<double> A(solver.ctx().A, solver.ctx().A + c.nnz());
    SparseLU<double> lu;
    t0 = Clock::now();
    lu.analyze(c.n(), c.Ap().data(), c.Ai().data());
    const double t_analyze = since(t0);
    t0 = Clock::now();
    if (!lu.factor(A.data())) return fail(Status::numerical("KLU: singular matrix"));
    const double t_factor = since(t0);
    std::vector<double> b(solver.ctx().b, solver.ctx().b + c.n());
    double t_solve = 0;
    for (int k = 0; k < plain; ++k) {
      std::vector<double> x = b;
      t0 = Clock::now();
      lu.solve(x.data());
      t_solve += since(t0);
    }
    fmt::print("  plain MNA, factor once + solve per image: circuit build {:.3f} s, KLU analysis {:.3f} s, factor "
               "{:.3f} s, solve {:.4f} s/image ({} nonzeros; {})\n",
               t_build, t_analyze, t_factor, t_solve / plain, c.nnz(),
               lu.split() ? fmt::format("split in two halves, separator of {}", lu.separator_size()) : "one KLU factorization");
  }
  return 0;
}
