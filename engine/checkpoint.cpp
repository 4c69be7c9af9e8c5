// Checkpoint files of the Monte Carlo drivers (see checkpoint.hpp). Layout: group /checkpoint with attributes
// format ("anasim-checkpoint-1"), items (table size), identity_digest and one string attribute per identity field
// in its subgroup /checkpoint/identity; datasets item (int64, the done items), length (int64, values per item) and
// value (float64, every done item's values in item order). The HDF5 reading and writing are the HDF5 module's
// (engine/checkpoint_hdf5.cpp); the reader runs in an isolated child process (engine/isolated_read.hpp).
#include "engine/checkpoint.hpp"
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include "engine/isolated_read.hpp"
#include "engine/hdf5_module.hpp"

#ifndef ANASIM_VERSION
#define ANASIM_VERSION "unknown"
#endif

namespace anasim {

namespace {

struct Fnv1a {
  std::uint64_t h = 1469598103934665603ull;
  void add(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  std::string hex() const { return fmt::format("{:016x}", h); }
};

}  // namespace

std::string RunIdentity::digest() const {
  Fnv1a f;
  for (const auto& [name, value] : fields) {
    f.add(name.data(), name.size() + 1);  // with the terminating zero: ("ab","c") != ("a","bc")
    f.add(value.data(), value.size() + 1);
  }
  return f.hex();
}

std::string bytes_digest(const void* data, std::size_t n) {
  Fnv1a f;
  f.add(data, n);
  return "fnv1a64 " + f.hex();
}

std::string file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "unreadable";
  Fnv1a f;
  std::uintmax_t total = 0;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    f.add(buf, static_cast<std::size_t>(in.gcount()));
    total += static_cast<std::uintmax_t>(in.gcount());
  }
  return fmt::format("fnv1a64 {}, {} bytes", f.hex(), total);
}

std::string binary_version() { return "anasim " ANASIM_VERSION; }

Status load_checkpoint(const std::string& path, const RunIdentity& id, dist::ItemTable& table, long* resumed) {
  *resumed = 0;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  // The child fills its own copy of the table and sends back the done items: (item, values) each.
  Wire reply;
  Status st = read_isolated(path, "libhdf5", [&](Wire& w) {
    long r = 0;
    using Load = void(const std::string&, const RunIdentity&, const std::string&, dist::ItemTable&, long*, Status*);
    Status s = hdf5::call<Load>("anasim_hdf5_load_checkpoint", path, id, id.digest(), table, &r);
    if (!s) return s;
    w.put(static_cast<std::int64_t>(r));
    w.put(static_cast<std::int64_t>(table.count_done()));
    for (long i = 0; i < table.size(); ++i)
      if (table.done[i]) {
        w.put(static_cast<std::int64_t>(i));
        w.put(table.values[i]);
      }
    return s;
  }, reply);
  if (!st) return st;
  std::int64_t read = 0, count = 0;
  bool decoded = reply.get(read) && reply.get(count) && count >= 0 && count <= table.size();
  for (std::int64_t k = 0; decoded && k < count; ++k) {
    std::int64_t i = -1;
    decoded = reply.get(i) && i >= 0 && i < table.size() && reply.get(table.values[i]);
    if (decoded) table.done[i] = 1;
  }
  if (!decoded)
    return Status::fail(ErrorKind::Other, fmt::format("checkpoint '{}': internal error: the reader's reply does "
                                                      "not decode", path));
  *resumed = static_cast<long>(read);
  return st;
}

Status save_checkpoint(const std::string& path, const RunIdentity& id, const dist::ItemTable& table) {
  using Save = void(const std::string&, const RunIdentity&, const std::string&, const dist::ItemTable&, Status*);
  return hdf5::call<Save>("anasim_hdf5_save_checkpoint", path, id, id.digest(), table);
}

}  // namespace anasim
