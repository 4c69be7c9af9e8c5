// Checkpoints of the Monte Carlo drivers (--checkpoint FILE): the item table of a distributed loop
// (dist::ItemTable) and the identity of the run that wrote it, in HDF5, replaced atomically after every round
// (written in memory, then through OutputFile's temporary-then-rename), so a kill at any moment leaves the last
// complete checkpoint. A rerun with the same identity continues from it; another identity is refused.
#pragma once
#include <string>
#include <utility>
#include <vector>
#include "engine/distribute.hpp"
#include "engine/types.hpp"

namespace anasim {

// What a run's results depend on, as named human-readable fields ("command", "arguments", "model", "hardware",
// "data", "version", ...), compared one by one on resume. Values that stand for files carry a digest of the
// contents (file_digest), so an edited file with the same name is told apart.
struct RunIdentity {
  std::vector<std::pair<std::string, std::string>> fields;  // (name, value) in the order added
  void add(std::string name, std::string value) { fields.emplace_back(std::move(name), std::move(value)); }
  std::string digest() const;  // FNV-1a 64 over every name and value, 16 hex digits
};

// "fnv1a64 <16 hex digits>, <n> bytes" of the file's contents; "unreadable" when it cannot be read.
std::string file_digest(const std::string& path);
// "fnv1a64 <16 hex digits>" of n bytes in memory.
std::string bytes_digest(const void* data, std::size_t n);
// The running binary's version: "anasim <project version> (<git commit at configure time>)".
std::string binary_version();

// Loads the checkpoint at `path` into `table` when the file exists (*resumed = its completed items; 0 and the
// table untouched when there is no file). A checkpoint of another run is an Input error naming every field that
// differs with both values ("checkpoint c.h5 belongs to another run: arguments differ (checkpoint: trials=4 ...,
// this run: trials=8 ...)"); an unreadable file is an Input error too, as is one that crashes or hangs libhdf5
// (read in a child process, engine/isolated_read.hpp).
Status load_checkpoint(const std::string& path, const RunIdentity& id, dist::ItemTable& table, long* resumed);

// Writes `table` and `id` to `path` atomically (the previous checkpoint stays until the new one is complete).
Status save_checkpoint(const std::string& path, const RunIdentity& id, const dist::ItemTable& table);

}  // namespace anasim
