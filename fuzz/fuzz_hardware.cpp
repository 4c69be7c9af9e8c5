// libFuzzer target: the hardware config reader (nn/hardware.hpp parse_hardware_config) on arbitrary YAML text.
#include <cstddef>
#include <cstdint>
#include <string>
#include "nn/hardware.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  anasim::SourceScope scope;  // this input's texts freed after it (declared before everything pointing into them)
  const std::string text(reinterpret_cast<const char*>(data), size);
  anasim::nn::HardwareConfig cfg;
  (void)anasim::nn::parse_hardware_config(text, "fuzz_hw.yaml", cfg);
  return 0;
}
