// Shared by the libFuzzer targets (fuzz/*.cpp): a scratch file in memory (tmpfs) for readers that take a path, so
// the reader's own path-based code is fuzzed without a disk write per execution.
#pragma once
#include <sys/stat.h>
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace anasim::fuzz {

// Writes the input to <dir>/anasim_fuzz_<pid> (the same file for every run of this process) and returns its path.
// <dir> is /dev/shm (tmpfs) where it exists, else $TMPDIR or /tmp: a file in /tmp on ext4 cost most of an IDX
// execution in truncate and writeback. Not an anonymous memfd: libhdf5 resolves /proc/self/fd/<n> with realpath
// and cannot open it. A crashed process leaves its file behind; bench/fuzz.sh removes them after a run.
inline std::string input_file(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    struct stat st {};
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : tmp ? tmp : "/tmp";
    return dir + "/anasim_fuzz_" + std::to_string(::getpid());
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace anasim::fuzz
