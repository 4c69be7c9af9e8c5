// libFuzzer target: the IDX image and label readers (plain or gzip) on arbitrary file contents.
#include <cstddef>
#include <cstdint>
#include <vector>
#include "fuzz_common.hpp"
#include "nn/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = anasim::fuzz::input_file(data, size);
  anasim::nn::IdxImages images;
  (void)anasim::nn::read_idx_images(path, images);
  std::vector<std::uint8_t> labels;
  (void)anasim::nn::read_idx_labels(path, labels);
  return 0;
}
