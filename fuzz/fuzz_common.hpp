// Shared by the libFuzzer targets (fuzz/*.cpp): a per-process scratch file for readers that take a path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace anasim::fuzz {

// Writes the input to /tmp/anasim_fuzz_<pid><suffix> (the same file for every run of this process) and returns
// its path. The suffix selects the reader's format (".gz" is not needed: zlib detects gzip by content).
inline std::string input_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  static const std::string path = "/tmp/anasim_fuzz_" + std::to_string(::getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return path;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace anasim::fuzz
