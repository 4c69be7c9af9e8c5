// Helpers shared by the nn tests: a small 64-16-10 network, exact-code inputs, an 8x8 "MNIST" written as IDX
// files, and running the anasim executable.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include "nn/mlp.hpp"

namespace anasim::nn_test {

using nn::MatrixRf;
using nn::Mlp;
using nn::Rng;
namespace fs = std::filesystem;

// Inputs that are exact DAC codes (k / 255) so that the ideal circuit sees exactly the network's inputs.
inline MatrixRf code_inputs(int n, int d, std::uint64_t seed) {
  Rng rng(seed);
  MatrixRf x(n, d);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < d; ++k) x(i, k) = static_cast<float>(rng.below(256)) / 255.0f;
  return x;
}


inline Mlp net_64_16_10() {
  Mlp net;
  REQUIRE(make_mlp({64, 16, 10}, 3, net).ok());
  Rng rng(5);
  for (auto& l : net.layers)
    for (int j = 0; j < l.bias.size(); ++j) l.bias(j) = 0.05 * rng.normal();
  return net;
}


// Runs a shell command line; its stdout and stderr together, rc its exit code (-1 if it did not exit).
inline std::string shell(const std::string& cmd, int& rc) {
  const fs::path out = fs::temp_directory_path() / fmt::format("anasim_nn_cli_{}.txt", ::getpid());
  const int st = std::system(fmt::format("{} > '{}' 2>&1", cmd, out.string()).c_str());
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  fs::remove(out);
  return ss.str();
}

inline std::string run(const std::string& args, int& rc) { return shell(fmt::format("{} {}", ANASIM_BINARY, args), rc); }

inline void write_idx(const fs::path& p, std::uint32_t magic, const std::vector<std::uint32_t>& dims,
               const std::vector<unsigned char>& data) {
  std::ofstream f(p, std::ios::binary);
  auto be = [&f](std::uint32_t v) {
    const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                                static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
    f.write(reinterpret_cast<const char*>(b), 4);
  };
  be(magic);
  for (auto d : dims) be(d);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// A side x side "MNIST" in dir (8x8 for net_64_16_10; net.inputs() == side * side): train and t10k splits, labels
// from a fixed network so the classes are learnable.
inline void write_tiny_mnist(const fs::path& dir, const Mlp& net, int side = 8) {
  const int d = side * side;
  REQUIRE(net.inputs() == d);
  for (const auto& [split, n, seed] : {std::tuple<const char*, int, int>{"train", 120, 1}, {"t10k", 60, 2}}) {
    const MatrixRf x = code_inputs(n, d, seed);
    const std::vector<int> cls = predict(net, x);
    std::vector<unsigned char> px, lab;
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < d; ++k) px.push_back(static_cast<unsigned char>(std::lround(x(i, k) * 255.0f)));
      lab.push_back(static_cast<unsigned char>(cls[i]));
    }
    const auto s = static_cast<std::uint32_t>(side);
    write_idx(dir / fmt::format("{}-images-idx3-ubyte", split), 0x803, {static_cast<std::uint32_t>(n), s, s}, px);
    write_idx(dir / fmt::format("{}-labels-idx1-ubyte", split), 0x801, {static_cast<std::uint32_t>(n)}, lab);
  }
}


}  // namespace anasim::nn_test
