// Minibatch training of an Mlp (nn/mlp.hpp): Adam or SGD with momentum, optional random-shift augmentation and
// multiplicative weight noise (hardware-aware training). Deterministic for a seed and any OpenMP thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include "nn/dataset.hpp"
#include "nn/mlp.hpp"

namespace anasim::nn {

enum class Optimizer { Adam, Sgd };
enum class LrSchedule { Constant, Cosine };

struct TrainOptions {
  int epochs = 20;                        // passes over the training set
  int batch = 128;                        // samples per minibatch (the last one of an epoch may be smaller)
  double lr = 1e-3;                       // Adam step size / SGD learning rate, at the start
  LrSchedule schedule = LrSchedule::Cosine;  // Cosine: lr * (1 + cos(pi * epoch / epochs)) / 2, per epoch
  Optimizer optimizer = Optimizer::Adam;
  double momentum = 0.9;                  // SGD only (v = momentum v + g; w -= lr v)
  double beta1 = 0.9, beta2 = 0.999;      // Adam moment decay rates
  double epsilon = 1e-8;                  // Adam denominator guard
  double weight_decay = 0.0;              // decoupled (AdamW-style): w -= lr * weight_decay * w per step; not biases
  double noise = 0.0;                     // sigma: forward passes use w * (1 + sigma N(0,1)), fresh per minibatch
  int shift = 0;                          // augmentation: each image moved by up to +-shift pixels in x and y
  std::uint64_t seed = 1;                 // seeds the initialisation (caller), order, shifts and noise streams
};

// Progress after one epoch.
struct EpochReport {
  int epoch = 0;                // 1-based
  int epochs = 0;
  double lr = 0.0;              // learning rate used in this epoch
  double loss = 0.0;            // mean training loss over the epoch's minibatches (as trained: shifted, noisy)
  double train_accuracy = 0.0;  // fraction of the epoch's samples classified right as trained (shifted, noisy
                                // weights, each minibatch before its update), as Keras reports it
  double test_accuracy = -1.0;  // on the test set after the epoch; -1 without a test set
  double seconds = 0.0;         // wall time of the epoch including evaluation
};

// Checks the options (positive epochs/batch/lr, noise >= 0, shift < image side, ...). Input errors.
Status validate(const TrainOptions& opt);

// Trains `net` in place on `train` (its inputs must match the images, its outputs exceed every label).
// `test` may be null. `on_epoch` (may be empty) is called after every epoch.
// The shuffling, shift and noise draws use separate Rng streams derived from opt.seed, so turning noise or
// shifts on does not change the sample order.
Status train(Mlp& net, const Dataset& train, const Dataset* test, const TrainOptions& opt,
             const std::function<void(const EpochReport&)>& on_epoch);

}  // namespace anasim::nn
