// Multilayer perceptron: dense layers with ReLU between them and softmax cross-entropy on the output.
// The numerical core only (forward, backward, prediction); the training loop lives in nn/train.hpp.
// Results are bit-identical for any OpenMP thread count: every matrix product is split into fixed chunks
// (a function of the shapes only) and each chunk is an ordinary single-threaded Eigen product.
#pragma once
#include <cstdint>
#include <random>
#include <vector>
#include <Eigen/Dense>
#include "engine/types.hpp"
#include "nn/dataset.hpp"

namespace anasim::nn {

// Portable random draws: std::mt19937_64 is fully specified by the standard, but the std:: distributions are not,
// so the few draws needed are made here to give the same numbers with every standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::uint64_t below(std::uint64_t n);  // uniform integer in [0, n), n > 0 (rejection sampling)
  double normal();                       // N(0, 1), Box-Muller (pairs: the second value is cached)
  template <class T>
  void shuffle(std::vector<T>& v) {  // Fisher-Yates
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// Row-major double matrix: a batch holds one sample per row.
using MatrixRd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One dense layer y = W x + b.
struct DenseLayer {
  MatrixRd weight;       // outputs x inputs
  Eigen::VectorXd bias;  // size outputs
};

// A stack of dense layers; layer l feeds layer l+1 through a ReLU, the last layer gives the logits.
struct Mlp {
  std::vector<DenseLayer> layers;
  std::vector<int> sizes() const;  // {inputs, hidden..., outputs}; empty if there are no layers
  int inputs() const { return layers.empty() ? 0 : static_cast<int>(layers.front().weight.cols()); }
  int outputs() const { return layers.empty() ? 0 : static_cast<int>(layers.back().weight.rows()); }
  long parameter_count() const;
};

// Checks that there is at least one layer, consecutive shapes agree, each bias matches its layer and every
// value is finite. Errors are Input errors naming the layer.
Status validate(const Mlp& net);

// A network with the given layer sizes ({784, 128, 10}: one hidden layer), He-normal weights
// (N(0, 2/fan_in)) drawn from Rng(seed) in layer, row, column order, zero biases.
// Error if fewer than two sizes or a size < 1.
Status make_mlp(const std::vector<int>& sizes, std::uint64_t seed, Mlp& net);

// Intermediate results of a forward pass, kept for the backward pass (reused between calls).
struct MlpWorkspace {
  std::vector<MatrixRd> act;  // act[l]: input of layer l (batch x inputs of l); act[L]: logits (batch x outputs)
  MatrixRd delta;             // batch x outputs of the current layer: dLoss/d(pre-activation)
  MatrixRd delta_prev;        // the same for the layer below
};

// Logits (batch x outputs) for a batch x (batch x inputs).
void forward(const Mlp& net, const MatrixRd& x, MlpWorkspace& ws);

// Mean softmax cross-entropy of the batch against `labels` (size x.rows(), each in 0..outputs-1), and its
// gradient with respect to every weight and bias, written into `grad` (reshaped like `net`).
// If `correct` is given it receives the number of rows whose largest logit is the label.
double loss_and_gradient(const Mlp& net, const MatrixRd& x, const int* labels, Mlp& grad, MlpWorkspace& ws,
                         int* correct = nullptr);

// Mean softmax cross-entropy of the batch, without gradient.
double loss(const Mlp& net, const MatrixRd& x, const int* labels);

// Class with the largest logit for every row of x (float images, e.g. Dataset::images); evaluated in batches.
std::vector<int> predict(const Mlp& net, const MatrixRf& x);

// Fraction of rows of x classified as their label (0 if x is empty).
double accuracy(const Mlp& net, const MatrixRf& x, const std::vector<int>& labels);

// Multiplies every weight (not the biases) by (1 + sigma N(0,1)), drawn in layer, row, column order:
// the device-variation model that hardware-aware training (TrainOptions::noise) prepares a network for.
void perturb_weights(Mlp& net, double sigma, Rng& rng);

}  // namespace anasim::nn
