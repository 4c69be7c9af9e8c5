// Reading and writing of MLP models (anasim-mlp-1) and the Keras dense-model importer: the HDF5 work is the HDF5
// module's (nn/model_io_hdf5.cpp); the readers run in an isolated child process (engine/isolated_read.hpp).
#include "nn/model_io.hpp"
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <system_error>
#include <fmt/format.h>
#include "engine/isolated_read.hpp"
#include "engine/hdf5_module.hpp"

namespace anasim::nn {

namespace {

Status file_error(const std::string& path, const std::string& msg, ErrorKind kind = ErrorKind::Input) {
  return Status::fail(kind, msg, SourceLoc::whole(path));
}

}  // namespace

Status save_model(const std::string& path, const Mlp& net, const ModelInfo& info) {
  if (Status st = validate(net); !st) return st;
  using Save = void(const std::string&, const Mlp&, const ModelInfo&, Status*);
  return hdf5::call<Save>("anasim_hdf5_save_model", path, net, info);
}

namespace {

// The network and training record through the isolation's Wire (engine/isolated_read.hpp).
void put_net(Wire& w, const Mlp& net) {
  w.put(static_cast<std::uint64_t>(net.layers.size()));
  for (const DenseLayer& l : net.layers) {
    w.put(static_cast<std::int64_t>(l.weight.rows()));
    w.put(static_cast<std::int64_t>(l.weight.cols()));
    w.put_array(l.weight.data(), static_cast<std::size_t>(l.weight.size()));
    w.put_array(l.bias.data(), static_cast<std::size_t>(l.bias.size()));
  }
}

bool get_net(Wire& w, Mlp& net) {
  std::uint64_t n = 0;
  if (!w.get(n) || n > w.bytes().size()) return false;
  net.layers.resize(n);
  for (DenseLayer& l : net.layers) {
    std::int64_t rows = 0, cols = 0;
    if (!w.get(rows) || !w.get(cols) || rows < 0 || cols < 0) return false;
    if (static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) > w.bytes().size()) return false;
    l.weight.resize(rows, cols);
    l.bias.resize(rows);
    if (!w.get_array(l.weight.data(), static_cast<std::size_t>(l.weight.size())) ||
        !w.get_array(l.bias.data(), static_cast<std::size_t>(l.bias.size())))
      return false;
  }
  return true;
}

void put_info(Wire& w, const ModelInfo& m) {
  w.put(m.epochs);
  w.put(m.lr);
  w.put(m.seed);
  w.put(m.noise);
  w.put(m.train_samples);
  w.put(m.test_accuracy);
  w.put(m.test_samples);
  w.put(m.batch);
  w.put(m.shift);
  w.put(m.weight_decay);
  w.put(m.optimizer);
  w.put(m.schedule);
  w.put(m.dataset);
  w.put(m.created_by);
}

bool get_info(Wire& w, ModelInfo& m) {
  return w.get(m.epochs) && w.get(m.lr) && w.get(m.seed) && w.get(m.noise) && w.get(m.train_samples) &&
         w.get(m.test_accuracy) && w.get(m.test_samples) && w.get(m.batch) && w.get(m.shift) &&
         w.get(m.weight_decay) && w.get(m.optimizer) && w.get(m.schedule) && w.get(m.dataset) &&
         w.get(m.created_by);
}

// A reply that does not decode is the isolation's failure, not the file's; it should never happen.
Status garbled(const std::string& path) {
  return file_error(path, "internal error: the model reader's reply does not decode", ErrorKind::Other);
}

}  // namespace

Status load_model(const std::string& path, Mlp& net, ModelInfo* info) {
  net.layers.clear();
  Wire reply;
  Status st = read_isolated(path, "libhdf5", [&](Wire& w) {
    Mlp n;
    ModelInfo m;
    using Load = void(const std::string&, Mlp&, ModelInfo*, Status*);  // the record only when asked (as it was read)
    Status s = hdf5::call<Load>("anasim_hdf5_load_model", path, n, info ? &m : nullptr);
    if (s) {
      put_net(w, n);
      put_info(w, m);
    }
    return s;
  }, reply);
  if (!st) return st;
  ModelInfo m;
  if (!get_net(reply, net) || !get_info(reply, m)) {
    net.layers.clear();
    return garbled(path);
  }
  if (info) *info = m;
  return st;
}

Status import_keras(const std::string& path, Mlp& net) {
  net.layers.clear();
  Wire reply;
  Status st = read_isolated(path, "libhdf5", [&](Wire& w) {
    Mlp n;
    using Import = void(const std::string&, Mlp&, Status*);
    Status s = hdf5::call<Import>("anasim_hdf5_import_keras", path, n);
    if (s) put_net(w, n);
    return s;
  }, reply);
  if (!st) return st;
  if (!get_net(reply, net)) {
    net.layers.clear();
    return garbled(path);
  }
  if (Status v = validate(net); !v) {
    net.layers.clear();
    return file_error(path, "Keras layers do not form a chain: " + v.errors[0].message);
  }
  return st;
}

}  // namespace anasim::nn
