// Training loop: epochs of shuffled minibatches, optional shifts and weight noise, Adam or SGD updates.
// All random draws are sequential, from Rng streams derived from the seed, so runs repeat bit for bit.
#include "nn/train.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <fmt/format.h>

namespace anasim::nn {

namespace {

// Derives independent stream seeds from one user seed (splitmix64 finaliser).
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Copies the samples idx[0..n) of `data` into the rows of x (double), each moved by a random shift of up to
// +-shift pixels (pixels moved in from outside are 0).
void gather(const Dataset& data, const int* idx, int n, int shift, Rng& rng, MatrixRd& x, std::vector<int>& y) {
  const Eigen::Index d = data.images.cols();
  x.resize(n, d);
  y.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    y[static_cast<std::size_t>(i)] = data.labels[static_cast<std::size_t>(idx[i])];
    const auto src = data.images.row(idx[i]);
    if (shift == 0) {
      x.row(i) = src.cast<double>();
      continue;
    }
    const int dx = static_cast<int>(rng.below(2 * shift + 1)) - shift;
    const int dy = static_cast<int>(rng.below(2 * shift + 1)) - shift;
    const int R = data.rows, C = data.cols;
    for (int r = 0; r < R; ++r) {
      const int sr = r - dy;
      for (int c = 0; c < C; ++c) {
        const int sc = c - dx;
        x(i, r * C + c) = (sr >= 0 && sr < R && sc >= 0 && sc < C) ? double{src(sr * C + sc)} : 0.0;
      }
    }
  }
}

// Optimiser state: one moment (or velocity) pair per parameter array.
struct OptimizerState {
  Mlp m, v;  // Adam: first and second moments; SGD: m is the velocity
  long step = 0;
};

void update(Mlp& net, const Mlp& g, OptimizerState& s, const TrainOptions& o, double lr) {
  ++s.step;
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(s.step));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(s.step));
  auto step = [&](auto& w, const auto& gw, auto& m, auto& v, bool decay) {
    if (decay && o.weight_decay > 0.0) w.array() *= 1.0 - lr * o.weight_decay;
    if (o.optimizer == Optimizer::Adam) {
      m.array() = o.beta1 * m.array() + (1.0 - o.beta1) * gw.array();
      v.array() = o.beta2 * v.array() + (1.0 - o.beta2) * gw.array().square();
      w.array() -= (lr / bc1) * m.array() / ((v.array() / bc2).sqrt() + o.epsilon);
    } else {
      m.array() = o.momentum * m.array() + gw.array();
      w.array() -= lr * m.array();
    }
  };
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    step(net.layers[l].weight, g.layers[l].weight, s.m.layers[l].weight, s.v.layers[l].weight, true);
    step(net.layers[l].bias, g.layers[l].bias, s.m.layers[l].bias, s.v.layers[l].bias, false);
  }
}

Mlp zeros_like(const Mlp& net) {
  Mlp z;
  for (const auto& l : net.layers)
    z.layers.push_back({MatrixRd::Zero(l.weight.rows(), l.weight.cols()), Eigen::VectorXd::Zero(l.bias.size())});
  return z;
}

}  // namespace

Status validate(const TrainOptions& o) {
  if (o.epochs < 1) return Status::input(fmt::format("epochs must be at least 1, got {}", o.epochs));
  if (o.batch < 1) return Status::input(fmt::format("batch size must be at least 1, got {}", o.batch));
  if (!(o.lr > 0.0) || !std::isfinite(o.lr)) return Status::input(fmt::format("learning rate must be > 0, got {}", o.lr));
  if (!(o.momentum >= 0.0 && o.momentum < 1.0))
    return Status::input(fmt::format("momentum must be in [0, 1), got {}", o.momentum));
  if (!(o.beta1 >= 0.0 && o.beta1 < 1.0 && o.beta2 >= 0.0 && o.beta2 < 1.0))
    return Status::input("Adam betas must be in [0, 1)");
  if (!(o.epsilon > 0.0)) return Status::input("Adam epsilon must be > 0");
  if (!(o.weight_decay >= 0.0) || !std::isfinite(o.weight_decay))
    return Status::input(fmt::format("weight decay must be >= 0, got {}", o.weight_decay));
  if (!(o.noise >= 0.0) || !std::isfinite(o.noise))
    return Status::input(fmt::format("weight noise sigma must be >= 0, got {}", o.noise));
  if (o.shift < 0) return Status::input(fmt::format("shift must be >= 0 pixels, got {}", o.shift));
  return Status::success();
}

Status train(Mlp& net, const Dataset& data, const Dataset* test, const TrainOptions& opt,
             const std::function<void(const EpochReport&)>& on_epoch) {
  if (Status st = validate(opt); !st) return st;
  if (Status st = validate(net); !st) return st;
  if (data.size() == 0) return Status::input("the training set is empty");
  if (data.images.rows() != data.size()) return Status::input("training images and labels differ in number");
  for (const Dataset* d : {&data, test}) {
    if (!d) continue;
    if (d->images.cols() != net.inputs())
      return Status::input(fmt::format("the network has {} inputs, the {} images {} pixels", net.inputs(),
                                       d == &data ? "training" : "test", d->images.cols()));
    for (int y : d->labels)
      if (y < 0 || y >= net.outputs())
        return Status::input(fmt::format("label {} does not fit a network with {} outputs", y, net.outputs()));
  }
  if (opt.shift > 0 && (data.rows * data.cols != data.images.cols() || opt.shift >= std::min(data.rows, data.cols)))
    return Status::input(fmt::format("shift augmentation needs images of known size larger than the shift ({}x{})",
                                     data.rows, data.cols));

  Rng order_rng(stream_seed(opt.seed, 1)), shift_rng(stream_seed(opt.seed, 2)), noise_rng(stream_seed(opt.seed, 3));
  std::vector<int> order(static_cast<std::size_t>(data.size()));
  std::iota(order.begin(), order.end(), 0);
  OptimizerState state{zeros_like(net), zeros_like(net), 0};
  Mlp grad, noisy;
  std::vector<MatrixRd> factor(net.layers.size());  // 1 + sigma N(0,1) per weight, this minibatch
  MlpWorkspace ws;
  MatrixRd xb;
  std::vector<int> yb;
  constexpr double pi = 3.14159265358979323846;

  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    const double lr = opt.schedule == LrSchedule::Cosine
                          ? opt.lr * 0.5 * (1.0 + std::cos(pi * (epoch - 1) / static_cast<double>(opt.epochs)))
                          : opt.lr;
    order_rng.shuffle(order);
    double loss_sum = 0.0;
    long right = 0;
    for (int b0 = 0; b0 < data.size(); b0 += opt.batch) {
      const int n = std::min(opt.batch, data.size() - b0);
      gather(data, order.data() + b0, n, opt.shift, shift_rng, xb, yb);
      double batch_loss;
      int correct = 0;
      if (opt.noise > 0.0) {
        noisy = net;
        for (std::size_t l = 0; l < net.layers.size(); ++l) {
          MatrixRd& f = factor[l];
          f.resize(net.layers[l].weight.rows(), net.layers[l].weight.cols());
          for (Eigen::Index i = 0; i < f.size(); ++i) f.data()[i] = 1.0 + opt.noise * noise_rng.normal();
          noisy.layers[l].weight.array() *= f.array();
        }
        batch_loss = loss_and_gradient(noisy, xb, yb.data(), grad, ws, &correct);
        // d(loss)/dw = d(loss)/d(w_noisy) * (1 + sigma n)
        for (std::size_t l = 0; l < net.layers.size(); ++l) grad.layers[l].weight.array() *= factor[l].array();
      } else {
        batch_loss = loss_and_gradient(net, xb, yb.data(), grad, ws, &correct);
      }
      if (!std::isfinite(batch_loss))
        return Status::numerical(fmt::format("training diverged in epoch {} (loss {}); try a smaller learning rate",
                                             epoch, batch_loss));
      loss_sum += batch_loss * n;
      right += correct;
      update(net, grad, state, opt, lr);
    }
    EpochReport rep;
    rep.epoch = epoch;
    rep.epochs = opt.epochs;
    rep.lr = lr;
    rep.loss = loss_sum / data.size();
    rep.train_accuracy = static_cast<double>(right) / data.size();
    if (test) rep.test_accuracy = accuracy(net, test->images, test->labels);
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (on_epoch) on_epoch(rep);
  }
  return validate(net);
}

}  // namespace anasim::nn
