// Shared by the libFuzzer targets (fuzz/*.cpp): an in-memory file for readers that take a path, so the reader's
// own path-based code is fuzzed without a disk write per execution.
#pragma once
#include <sys/mman.h>
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace anasim::fuzz {

// Puts the input into an anonymous in-memory file (memfd_create, the same one for every run of this process) and
// returns a path that opens it, /proc/self/fd/<n>: open, stat (a regular file of the input's size), read and
// close behave as on a file on disk. Nothing is left behind when the process dies. (A file in /tmp cost most of
// an IDX execution in ext4's truncate and writeback, and left one file per crashed fork-mode job.)
inline std::string input_file(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("anasim_fuzz_input", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) {
    std::perror("fuzz input: memfd_create/ftruncate");
    std::abort();
  }
  std::size_t done = 0;
  while (done < size) {
    const ssize_t k = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (k <= 0) {
      std::perror("fuzz input: pwrite");
      std::abort();
    }
    done += static_cast<std::size_t>(k);
  }
  return path;
}

}  // namespace anasim::fuzz
