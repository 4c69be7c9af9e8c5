// MLP model files (HDF5, format "anasim-mlp-1") and import of Keras HDF5 weight files of dense models.
//
// anasim-mlp-1 layout:
//   /layer0, /layer1, ...   one group per dense layer, each with
//       weight   double, outputs x inputs
//       bias     double, outputs
//   root attributes: format "anasim-mlp-1", sizes (int32 array {inputs, hidden..., outputs}),
//       activation "relu" (hidden layers), output "softmax", and the training record below.
#pragma once
#include <cstdint>
#include <string>
#include "engine/types.hpp"
#include "nn/mlp.hpp"

namespace anasim::nn {

inline constexpr const char* kModelFormat = "anasim-mlp-1";

// How a model was made; stored as root attributes. Unknown numbers are -1 (or empty strings).
struct ModelInfo {
  int epochs = -1;
  double lr = -1.0;              // initial learning rate
  std::uint64_t seed = 0;
  double noise = 0.0;            // training weight-noise sigma (0 = plain training)
  long train_samples = -1;       // number of training images
  double test_accuracy = -1.0;   // fraction (0..1) on the test set after training
  long test_samples = -1;        // size of that test set
  int batch = -1;
  int shift = 0;                 // augmentation shift, pixels
  double weight_decay = 0.0;
  std::string optimizer;         // "adam" / "sgd"
  std::string schedule;          // "cosine" / "constant"
  std::string dataset;           // "MNIST", "Fashion-MNIST", "keras import", ...
  std::string created_by;        // e.g. the command line
};

// Writes `net` (validated first) and `info` to `path`: built in memory, written through a unique temporary and
// renamed into place when complete (engine/output_file.hpp).
Status save_model(const std::string& path, const Mlp& net, const ModelInfo& info);

// The readers below run libhdf5 in a child process (engine/isolated_read.hpp): a file that crashes libhdf5 or
// makes it loop is an Input error naming the file, and the result is the same as a read in this process.

// Reads an anasim-mlp-1 file. Checks the format attribute, that every layer group listed by "sizes" exists,
// the dataset shapes agree with "sizes" and the values are finite. Errors name the file and the object.
// `info` (optional) receives the stored training record; missing attributes keep their defaults.
Status load_model(const std::string& path, Mlp& net, ModelInfo* info = nullptr);

// Reads the dense layers of a Keras HDF5 file (a whole model saved with model.save(), weights under
// "model_weights", or a save_weights() file with the layers at the root). Layer order: the "layer_names"
// attribute if present, else the group names sorted. Layers without a kernel (Flatten, Dropout, ...) are skipped.
// Each kernel ("<layer>/<layer>/kernel:0" or as listed in "weight_names") is inputs x outputs and is transposed.
// The hidden activations are taken to be ReLU (a warning is added if model_config names others).
Status import_keras(const std::string& path, Mlp& net);

}  // namespace anasim::nn
