// Helpers every test file may use: per-process scratch directories, substring checks, the OpenMP thread limit.
#pragma once
#include <omp.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <unistd.h>

namespace anasim::test_support {

// The OpenMP thread limit set to n while the object lives (the large-input paths take a second thread only where
// the limit allows one: tests compare one thread with two).
struct OmpThreads {
  explicit OmpThreads(int n) : saved(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(saved); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;
  int saved;
};

// A fresh, empty directory <tmp>/anasim_tests_<pid>/<area>/<name>; the per-process root is removed when the test
// program exits, whether its tests passed or failed (ANASIM_KEEP_SCRATCH=1 in the environment keeps it, for
// looking at a failure's files). `area` keeps the test files' names apart (one binary runs them all).
inline std::filesystem::path scratch_dir(const std::string& area, const std::string& name) {
  namespace fs = std::filesystem;
  struct Root {
    fs::path dir = fs::temp_directory_path() / ("anasim_tests_" + std::to_string(::getpid()));
    ~Root() {
      if (std::getenv("ANASIM_KEEP_SCRATCH")) return;
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  };
  static Root root;
  const fs::path d = root.dir / area / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The bytes of a file ("" if it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// True if `part` occurs in `s`.
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace anasim::test_support
