// libFuzzer target: the model file reader (nn/model_io.hpp load_model, then import_keras) on arbitrary file
// contents. Crashes inside libhdf5 itself are HDF5 findings, not anasim's (see bench/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include "fuzz_common.hpp"
#include "nn/mlp.hpp"
#include "nn/model_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = anasim::fuzz::input_file(data, size, ".h5");
  anasim::nn::Mlp net;
  (void)anasim::nn::load_model(path, net);
  (void)anasim::nn::import_keras(path, net);
  return 0;
}
