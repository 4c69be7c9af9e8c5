// MLP forward/backward passes. Matrix products go through the chunked helpers below so that results do not
// depend on the OpenMP thread count: chunks are fixed by the shapes, each is a serial Eigen product.
#include "nn/mlp.hpp"
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace anasim::nn {

namespace {

constexpr Eigen::Index kRowChunk = 32;  // rows of a batch per chunk (forward, input gradient)
constexpr Eigen::Index kColChunk = 64;  // weight columns per chunk (weight gradient)
constexpr double kParallelFlops = 2e6;  // products smaller than this run on one thread (not worth a fork/join)

// Keeps Eigen's own threading off while alive (it would change the blocking, hence the rounding, with the
// thread count); restores the previous setting.
class SerialEigen {
 public:
  SerialEigen() : saved_(Eigen::nbThreads()) { Eigen::setNbThreads(1); }
  ~SerialEigen() { Eigen::setNbThreads(saved_); }
  SerialEigen(const SerialEigen&) = delete;
  SerialEigen& operator=(const SerialEigen&) = delete;

 private:
  int saved_;
};

Eigen::Index chunks(Eigen::Index n, Eigen::Index size) { return (n + size - 1) / size; }

// z = x * w^T + 1 b^T  (x: batch x in, w: out x in, z: batch x out), chunked over batch rows.
void affine(const MatrixRd& x, const DenseLayer& l, MatrixRd& z) {
  const Eigen::Index n = x.rows();
  z.resize(n, l.weight.rows());
  const Eigen::Index nc = chunks(n, kRowChunk);
  const bool par = 2.0 * static_cast<double>(n) * static_cast<double>(l.weight.size()) >= kParallelFlops;
#pragma omp parallel for schedule(static) if (par)
  for (Eigen::Index c = 0; c < nc; ++c) {
    const Eigen::Index r0 = c * kRowChunk, nr = std::min(kRowChunk, n - r0);
    z.middleRows(r0, nr).noalias() = x.middleRows(r0, nr) * l.weight.transpose();
    z.middleRows(r0, nr).rowwise() += l.bias.transpose();
  }
}

// dx = dz * w  (dz: batch x out, w: out x in), chunked over batch rows; then masked by the ReLU of `h`
// (the layer input, which is a ReLU output): dx *= (h > 0).
void backprop_relu(const MatrixRd& dz, const MatrixRd& w, const MatrixRd& h, MatrixRd& dx) {
  const Eigen::Index n = dz.rows();
  dx.resize(n, w.cols());
  const Eigen::Index nc = chunks(n, kRowChunk);
  const bool par = 2.0 * static_cast<double>(n) * static_cast<double>(w.size()) >= kParallelFlops;
#pragma omp parallel for schedule(static) if (par)
  for (Eigen::Index c = 0; c < nc; ++c) {
    const Eigen::Index r0 = c * kRowChunk, nr = std::min(kRowChunk, n - r0);
    dx.middleRows(r0, nr).noalias() = dz.middleRows(r0, nr) * w;
    dx.middleRows(r0, nr).array() *= (h.middleRows(r0, nr).array() > 0.0).cast<double>();
  }
}

// gw = dz^T * x  (dz: batch x out, x: batch x in), chunked over weight columns; gb = column sums of dz.
void weight_gradient(const MatrixRd& dz, const MatrixRd& x, DenseLayer& g) {
  const Eigen::Index in = x.cols();
  g.weight.resize(dz.cols(), in);
  const Eigen::Index nc = chunks(in, kColChunk);
  const bool par = 2.0 * static_cast<double>(dz.size()) * static_cast<double>(in) >= kParallelFlops;
#pragma omp parallel for schedule(static) if (par)
  for (Eigen::Index c = 0; c < nc; ++c) {
    const Eigen::Index c0 = c * kColChunk, ncols = std::min(kColChunk, in - c0);
    g.weight.middleCols(c0, ncols).noalias() = dz.transpose() * x.middleCols(c0, ncols);
  }
  g.bias = dz.colwise().sum().transpose();
}

// Turns logits (in place) into dLoss/dlogits for the mean cross-entropy; returns the summed loss.
double softmax_xent_grad(MatrixRd& z, const int* labels, int* correct) {
  const Eigen::Index n = z.rows();
  double total = 0.0;
  int right = 0;
  const double inv_n = 1.0 / static_cast<double>(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    auto row = z.row(r);
    Eigen::Index arg = 0;
    const double m = row.maxCoeff(&arg);
    if (arg == labels[r]) ++right;
    const double zl = row(labels[r]) - m;
    row.array() = (row.array() - m).exp();
    const double s = row.sum();
    total += std::log(s) - zl;  // -log softmax[label]
    row /= s;
    row(labels[r]) -= 1.0;
    row *= inv_n;
  }
  if (correct) *correct = right;
  return total;
}

}  // namespace

std::uint64_t Rng::below(std::uint64_t n) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);  // multiple of n
  std::uint64_t x;
  do x = gen_();
  while (x >= limit);
  return x % n;
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  constexpr double two_pi = 6.283185307179586476925;
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(two_pi * u2);
  has_spare_ = true;
  return r * std::cos(two_pi * u2);
}

std::vector<int> Mlp::sizes() const {
  std::vector<int> s;
  if (layers.empty()) return s;
  s.push_back(inputs());
  for (const auto& l : layers) s.push_back(static_cast<int>(l.weight.rows()));
  return s;
}

long Mlp::parameter_count() const {
  long n = 0;
  for (const auto& l : layers) n += static_cast<long>(l.weight.size() + l.bias.size());
  return n;
}

Status validate(const Mlp& net) {
  if (net.layers.empty()) return Status::input("network has no layers");
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const DenseLayer& l = net.layers[i];
    if (l.weight.rows() < 1 || l.weight.cols() < 1)
      return Status::input(fmt::format("layer {}: empty weight matrix ({}x{})", i, l.weight.rows(), l.weight.cols()));
    if (l.bias.size() != l.weight.rows())
      return Status::input(fmt::format("layer {}: bias has {} entries, the weight matrix {} rows (outputs)", i,
                                       l.bias.size(), l.weight.rows()));
    if (i > 0 && l.weight.cols() != net.layers[i - 1].weight.rows())
      return Status::input(fmt::format("layer {}: {} inputs, but layer {} has {} outputs", i, l.weight.cols(), i - 1,
                                       net.layers[i - 1].weight.rows()));
    if (!l.weight.allFinite() || !l.bias.allFinite())
      return Status::input(fmt::format("layer {}: weights or biases are not all finite", i));
  }
  return Status::success();
}

Status make_mlp(const std::vector<int>& sizes, std::uint64_t seed, Mlp& net) {
  net.layers.clear();
  if (sizes.size() < 2)
    return Status::input(fmt::format("an MLP needs at least 2 layer sizes (inputs, outputs), got {}", sizes.size()));
  for (int s : sizes)
    if (s < 1) return Status::input(fmt::format("layer size {} is not positive", s));
  Rng rng(seed);
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    DenseLayer l;
    l.weight.resize(sizes[i + 1], sizes[i]);
    const double scale = std::sqrt(2.0 / sizes[i]);
    for (Eigen::Index r = 0; r < l.weight.rows(); ++r)
      for (Eigen::Index c = 0; c < l.weight.cols(); ++c) l.weight(r, c) = scale * rng.normal();
    l.bias = Eigen::VectorXd::Zero(sizes[i + 1]);
    net.layers.push_back(std::move(l));
  }
  return Status::success();
}

void forward(const Mlp& net, const MatrixRd& x, MlpWorkspace& ws) {
  SerialEigen serial;
  const std::size_t L = net.layers.size();
  ws.act.resize(L + 1);
  ws.act[0] = x;
  for (std::size_t l = 0; l < L; ++l) {
    affine(ws.act[l], net.layers[l], ws.act[l + 1]);
    if (l + 1 < L) ws.act[l + 1] = ws.act[l + 1].cwiseMax(0.0);
  }
}

double loss_and_gradient(const Mlp& net, const MatrixRd& x, const int* labels, Mlp& grad, MlpWorkspace& ws,
                         int* correct) {
  forward(net, x, ws);
  SerialEigen serial;
  const std::size_t L = net.layers.size();
  grad.layers.resize(L);
  ws.delta = ws.act[L];
  const double total = softmax_xent_grad(ws.delta, labels, correct);
  for (std::size_t l = L; l-- > 0;) {
    weight_gradient(ws.delta, ws.act[l], grad.layers[l]);
    if (l == 0) break;
    backprop_relu(ws.delta, net.layers[l].weight, ws.act[l], ws.delta_prev);
    std::swap(ws.delta, ws.delta_prev);
  }
  return total / static_cast<double>(x.rows());
}

double loss(const Mlp& net, const MatrixRd& x, const int* labels) {
  MlpWorkspace ws;
  forward(net, x, ws);
  MatrixRd& z = ws.act.back();
  return softmax_xent_grad(z, labels, nullptr) / static_cast<double>(x.rows());
}

std::vector<int> predict(const Mlp& net, const MatrixRf& x) {
  constexpr Eigen::Index kBatch = 1024;
  std::vector<int> out(static_cast<std::size_t>(x.rows()));
  MlpWorkspace ws;
  for (Eigen::Index r0 = 0; r0 < x.rows(); r0 += kBatch) {
    const Eigen::Index nr = std::min(kBatch, x.rows() - r0);
    forward(net, x.middleRows(r0, nr).cast<double>(), ws);
    const MatrixRd& z = ws.act.back();
    for (Eigen::Index r = 0; r < nr; ++r) {
      Eigen::Index arg = 0;
      z.row(r).maxCoeff(&arg);
      out[static_cast<std::size_t>(r0 + r)] = static_cast<int>(arg);
    }
  }
  return out;
}

double accuracy(const Mlp& net, const MatrixRf& x, const std::vector<int>& labels) {
  if (x.rows() == 0) return 0.0;
  const std::vector<int> p = predict(net, x);
  long right = 0;
  for (std::size_t i = 0; i < p.size(); ++i) right += p[i] == labels[i];
  return static_cast<double>(right) / static_cast<double>(p.size());
}

void perturb_weights(Mlp& net, double sigma, Rng& rng) {
  for (auto& l : net.layers)
    for (Eigen::Index i = 0; i < l.weight.size(); ++i) l.weight.data()[i] *= 1.0 + sigma * rng.normal();
}

}  // namespace anasim::nn
