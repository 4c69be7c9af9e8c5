// libFuzzer target: the model file reader (nn/model_io.hpp load_model, then import_keras) on arbitrary file
// contents. Crashes inside libhdf5 itself are HDF5 findings, not anasim's (see bench/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include "fuzz_common.hpp"
#include "nn/mlp.hpp"
#include "nn/model_io.hpp"

// The readers run in this process, not in the child engine/isolated_read forks for them: the fuzzer sees their
// coverage, and the sanitizers see anasim's own errors. (libhdf5's own crashes and hangs, which the child turns
// into errors, then stop the fuzzer: bench/fuzz.sh runs this target with -fork and -ignore_crashes.)
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("ANASIM_READ_ISOLATION", "0", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = anasim::fuzz::input_file(data, size);
  anasim::nn::Mlp net;
  (void)anasim::nn::load_model(path, net);
  (void)anasim::nn::import_keras(path, net);
  return 0;
}
