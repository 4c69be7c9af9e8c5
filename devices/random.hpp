// Counter-based random numbers for device non-idealities (programming variation, stuck cells, INL, noise).
// Every draw is a pure function of (seed, stream, index): results are identical for the same seed on every
// platform and compiler (no std::*_distribution), and a cell's draw does not depend on the order of draws.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

namespace anasim::rnd {

// Streams keep the draws of different purposes independent for one seed.
enum Stream : std::uint64_t {
  kProgramRel = 1,   // crossbar: relative programming variation
  kProgramAbs = 2,   // crossbar: absolute programming variation
  kStuck = 3,        // crossbar: stuck-on / stuck-off selection
  kInl = 4,          // DAC: random per-code INL
  kDnl = 5,          // DAC: random per-step DNL
  kDacNoise = 6,     // DAC: output noise
  kAdcNoise = 7,     // ADC: comparator noise
};

// splitmix64 finaliser: a bijective 64-bit mixer with full avalanche.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::uint64_t hash(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return mix64(mix64(mix64(seed) ^ (stream * 0xd1b54a32d192ed03ULL)) ^ index);
}

// Uniform in [0, 1), 53 random bits.
inline double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return static_cast<double>(hash(seed, stream, index) >> 11) * 0x1.0p-53;
}

// Standard normal (Box-Muller on two independent uniforms of the same (seed, stream, index)).
inline double normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t h1 = hash(seed, stream, 2 * index), h2 = hash(seed, stream, 2 * index + 1);
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]: log finite
  const double u2 = static_cast<double>(h2 >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// The seed a device uses: `seed` as given, or for seed 0 one derived from the instance name (FNV-1a), so that
// instances left at the default draw differently from each other but identically from run to run.
inline std::uint64_t effective_seed(std::uint64_t seed, const std::string& instance) {
  if (seed != 0) return seed;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : instance) h = (h ^ c) * 0x100000001b3ULL;
  return h | 1;  // never 0 again
}

}  // namespace anasim::rnd
