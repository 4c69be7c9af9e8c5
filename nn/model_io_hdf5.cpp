// HDF5 reading and writing of MLP models (anasim-mlp-1) and the Keras dense-model importer, in the HDF5 module
// (engine/hdf5_module.hpp; the public functions are nn/model_io.cpp's). Every HDF5 call sits inside a try block;
// failures become Input/Other errors naming the file and object.
#include "nn/model_io.hpp"
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <system_error>
#include <H5Cpp.h>
#include <fmt/format.h>
#include "engine/output_hdf5.hpp"

namespace anasim::nn {

namespace fs = std::filesystem;

namespace {

// Thrown inside this file only, caught at the entry points and turned into a Status.
struct FormatError {
  std::string message;
};

Status file_error(const std::string& path, const std::string& msg, ErrorKind kind = ErrorKind::Input) {
  return Status::fail(kind, msg, g_host ? g_host->whole_file(path) : SourceLoc{});
}

// Mlp::sizes and Mlp::parameter_count (nn/mlp.cpp, not in the module).
std::vector<int> layer_sizes(const Mlp& net) {
  std::vector<int> s;
  if (net.layers.empty()) return s;
  s.push_back(static_cast<int>(net.layers[0].weight.cols()));
  for (const DenseLayer& l : net.layers) s.push_back(static_cast<int>(l.weight.rows()));
  return s;
}

std::size_t parameter_count(const Mlp& net) {
  std::size_t n = 0;
  for (const DenseLayer& l : net.layers) n += static_cast<std::size_t>(l.weight.size() + l.bias.size());
  return n;
}

// ---- writing ----

void write_matrix(H5::Group& g, const char* name, const double* data, hsize_t rows, hsize_t cols, int rank) {
  const hsize_t dims[2] = {rows, cols};
  H5::DataSpace space(rank, dims);
  H5::DataSet d = g.createDataSet(name, H5::PredType::IEEE_F64LE, space);
  d.write(data, H5::PredType::NATIVE_DOUBLE);
}

// ---- reading ----

std::string trim_nul(std::string s) {
  const auto p = s.find('\0');
  if (p != std::string::npos) s.resize(p);
  while (!s.empty() && s.back() == ' ') s.pop_back();  // numpy 'S' arrays may be space padded
  return s;
}

bool read_string_attr(const H5::H5Object& o, const char* name, std::string& out) {
  if (!o.attrExists(name)) return false;
  H5::Attribute a = o.openAttribute(name);
  if (a.getTypeClass() != H5T_STRING || a.getSpace().getSimpleExtentNpoints() != 1)
    throw FormatError{fmt::format("attribute '{}' is not a string", name)};
  H5::StrType t = a.getStrType();
  a.read(t, out);
  out = trim_nul(out);
  return true;
}

// The element count of an attribute's dataspace, checked against the bytes the attribute occupies in the file
// (every element takes at least `min_bytes`): a corrupt dataspace claiming 2^60 elements is a FormatError instead
// of a buffer size that wraps around (a heap overflow, found by fuzz/fuzz_model) or exhausts memory.
std::size_t attr_elements(const H5::Attribute& a, const char* name, std::size_t min_bytes) {
  const hssize_t n = a.getSpace().getSimpleExtentNpoints();
  const hsize_t stored = a.getStorageSize();
  if (n < 0 || min_bytes == 0 || static_cast<hsize_t>(n) > stored / min_bytes)
    throw FormatError{fmt::format("attribute '{}' claims {} elements in {} bytes", name, n, stored)};
  return static_cast<std::size_t>(n);
}

// A string or string-array attribute (fixed-length as written by h5py for numpy 'S' arrays, or variable-length).
std::vector<std::string> read_string_array_attr(const H5::H5Object& o, const char* name) {
  H5::Attribute a = o.openAttribute(name);
  if (a.getTypeClass() != H5T_STRING) throw FormatError{fmt::format("attribute '{}' is not a string array", name)};
  H5::StrType t = a.getStrType();
  const std::size_t n = attr_elements(a, name, t.isVariableStr() ? 1 : t.getSize());
  std::vector<std::string> out;
  if (t.isVariableStr()) {
    std::vector<char*> ptrs(n, nullptr);
    a.read(t, ptrs.data());
    for (char* p : ptrs) {
      out.push_back(trim_nul(p ? p : ""));
      if (p) H5free_memory(p);
    }
  } else {
    const std::size_t len = t.getSize();
    std::vector<char> buf(n * len);
    if (n > 0) a.read(t, buf.data());
    for (std::size_t i = 0; i < n; ++i) out.push_back(trim_nul(std::string(buf.data() + i * len, len)));
  }
  return out;
}

template <class T>
bool read_scalar_attr(const H5::H5Object& o, const char* name, const H5::PredType& mem, T& out) {
  if (!o.attrExists(name)) return false;
  H5::Attribute a = o.openAttribute(name);
  const H5T_class_t c = a.getTypeClass();
  if ((c != H5T_INTEGER && c != H5T_FLOAT) || a.getSpace().getSimpleExtentNpoints() != 1)
    throw FormatError{fmt::format("attribute '{}' is not a number", name)};
  a.read(mem, &out);
  return true;
}

std::vector<int> read_int_array_attr(const H5::H5Object& o, const char* name) {
  H5::Attribute a = o.openAttribute(name);
  H5::DataSpace s = a.getSpace();
  if (a.getTypeClass() != H5T_INTEGER || s.getSimpleExtentNdims() > 1)
    throw FormatError{fmt::format("attribute '{}' is not a 1-D integer array", name)};
  std::vector<int> v(attr_elements(a, name, 1));
  if (!v.empty()) a.read(H5::PredType::NATIVE_INT, v.data());
  return v;
}

// Reads a floating-point dataset of the given rank; its dimensions go to `dims`.
std::vector<double> read_dataset(const H5::Group& g, const std::string& name, int rank, std::vector<hsize_t>& dims,
                                 const std::string& where) {
  if (!g.nameExists(name)) throw FormatError{fmt::format("{}: missing dataset '{}'", where, name)};
  H5::DataSet d = g.openDataSet(name);
  if (d.getTypeClass() != H5T_FLOAT && d.getTypeClass() != H5T_INTEGER)
    throw FormatError{fmt::format("{}/{}: not a numeric dataset", where, name)};
  H5::DataSpace s = d.getSpace();
  const int r = s.getSimpleExtentNdims();
  if (r != rank) throw FormatError{fmt::format("{}/{}: rank {}, expected {}", where, name, r, rank)};
  dims.assign(static_cast<std::size_t>(r), 0);
  if (r > 0) s.getSimpleExtentDims(dims.data());
  // A corrupt dataspace may claim more elements than the file holds (fuzz/fuzz_model: more than a vector can
  // hold): at most 1024 per stored byte (compression), a format error beyond.
  const hssize_t points = s.getSimpleExtentNpoints();
  const hsize_t stored = d.getStorageSize();
  if (points < 0 || static_cast<hsize_t>(points) / 1024 > stored)
    throw FormatError{fmt::format("{}/{}: {} elements claimed in {} bytes", where, name, points, stored)};
  std::vector<double> v(static_cast<std::size_t>(points));
  if (!v.empty()) d.read(v.data(), H5::PredType::NATIVE_DOUBLE);
  return v;
}

H5::H5File open_for_reading(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw FormatError{"no such file"};
  if (!H5::H5File::isHdf5(path)) throw FormatError{"not an HDF5 file"};
  return H5::H5File(path, H5F_ACC_RDONLY);
}

std::string h5_message(const H5::Exception& e) {
  return fmt::format("HDF5 error: {} ({})", e.getDetailMsg(), e.getFuncName());
}

// True if the slash-separated `path` exists below g (every intermediate group checked first, since H5Lexists
// fails rather than answering "no" for a path through a missing group).
bool path_exists(const H5::Group& g, const std::string& path) {
  std::string prefix;
  std::size_t pos = 0;
  while (true) {
    const std::size_t slash = path.find('/', pos);
    prefix = path.substr(0, slash);
    if (prefix.empty() || !g.nameExists(prefix)) return false;
    if (slash == std::string::npos) return true;
    pos = slash + 1;
  }
}

// Keras: the kernel and bias of one layer group, located through "weight_names" or the usual paths
// ("<layer>/kernel:0", "kernel:0", ...). Returns false if the layer has no weights at all.
bool keras_layer(const H5::Group& layer, const std::string& name, const std::string& where, DenseLayer& out,
                 Status& warnings) {
  std::vector<std::string> names;
  if (layer.attrExists("weight_names")) {
    names = read_string_array_attr(layer, "weight_names");
  } else {
    for (const char* leaf : {"kernel:0", "bias:0", "kernel", "bias"})
      for (const std::string& p : {name + "/" + leaf, std::string(leaf)})
        if (path_exists(layer, p)) names.push_back(p);
  }
  if (names.empty()) return false;
  std::string kernel, bias;
  for (const auto& p : names) {
    const std::string leaf = p.substr(p.rfind('/') + 1);
    if (kernel.empty() && (leaf == "kernel:0" || leaf == "kernel")) kernel = p;
    if (bias.empty() && (leaf == "bias:0" || leaf == "bias")) bias = p;
  }
  if (kernel.empty())
    throw FormatError{fmt::format("{} has weights ({}) but no kernel; only Dense layers can be imported", where,
                                  fmt::join(names, ", "))};
  std::vector<hsize_t> kd, bd;
  const std::vector<double> k = read_dataset(layer, kernel, 2, kd, where);
  const auto in = static_cast<Eigen::Index>(kd[0]), outs = static_cast<Eigen::Index>(kd[1]);
  out.weight = Eigen::Map<const MatrixRd>(k.data(), in, outs).transpose();
  if (bias.empty()) {
    out.bias = Eigen::VectorXd::Zero(outs);
    warnings.warnings.push_back(fmt::format("Keras layer '{}' has no bias; using zeros", name));
    return true;
  }
  const std::vector<double> b = read_dataset(layer, bias, 1, bd, where);
  if (static_cast<Eigen::Index>(bd[0]) != outs)
    throw FormatError{fmt::format("{}: bias has {} entries, the kernel {} outputs", where, bd[0], outs)};
  out.bias = Eigen::Map<const Eigen::VectorXd>(b.data(), outs);
  return true;
}

Status save_model_file(const std::string& path, const Mlp& net, const ModelInfo& info) {
  H5::Exception::dontPrint();
  try {
    // Built in memory, written by one checked OutputFile (unique temporary, rename when complete).
    Hdf5Image image(parameter_count(net) * sizeof(double) + (1 << 16));
    H5::H5File file(path, H5F_ACC_TRUNC, H5::FileCreatPropList::DEFAULT, image.access());
    attr_string(file, "format", kModelFormat);
    const std::vector<int> sizes = layer_sizes(net);
    {
      const hsize_t n = sizes.size();
      H5::DataSpace s(1, &n);
      file.createAttribute("sizes", H5::PredType::STD_I32LE, s).write(H5::PredType::NATIVE_INT, sizes.data());
    }
    attr_string(file, "activation", "relu");
    attr_string(file, "output", "softmax");
    attr_int64(file, "epochs", info.epochs);
    attr_double(file, "lr", info.lr);
    {
      const std::uint64_t seed = info.seed;
      file.createAttribute("seed", H5::PredType::STD_U64LE, H5::DataSpace(H5S_SCALAR))
          .write(H5::PredType::NATIVE_UINT64, &seed);
    }
    attr_double(file, "noise", info.noise);
    attr_int64(file, "train_samples", info.train_samples);
    attr_double(file, "test_accuracy", info.test_accuracy);
    attr_int64(file, "test_samples", info.test_samples);
    attr_int64(file, "batch", info.batch);
    attr_int64(file, "shift", info.shift);
    attr_double(file, "weight_decay", info.weight_decay);
    attr_string(file, "optimizer", info.optimizer);
    attr_string(file, "schedule", info.schedule);
    attr_string(file, "dataset", info.dataset);
    attr_string(file, "created_by", info.created_by);
    for (std::size_t l = 0; l < net.layers.size(); ++l) {
      const DenseLayer& layer = net.layers[l];
      H5::Group g = file.createGroup(fmt::format("layer{}", l));
      write_matrix(g, "weight", layer.weight.data(), static_cast<hsize_t>(layer.weight.rows()),
                   static_cast<hsize_t>(layer.weight.cols()), 2);
      write_matrix(g, "bias", layer.bias.data(), static_cast<hsize_t>(layer.bias.size()), 1, 1);
    }
    if (Status st = image.save(file, path); !st) return file_error(path, st.errors[0].message, ErrorKind::Other);
  } catch (const H5::Exception& e) {
    return file_error(path, fmt::format("cannot write model file: {}", h5_message(e)), ErrorKind::Other);
  }
  return Status::success();
}

// The readers themselves, run in the isolated child process by the public functions below.
Status load_model_here(const std::string& path, Mlp& net, ModelInfo* info) {
  net.layers.clear();
  H5::Exception::dontPrint();
  try {
    H5::H5File file = open_for_reading(path);
    std::string format;
    if (!read_string_attr(file, "format", format)) {
      if (file.nameExists("model_weights") || file.attrExists("layer_names"))
        throw FormatError{"this is a Keras file, not an anasim model; convert it with `anasim nn import-keras`"};
      throw FormatError{fmt::format("no 'format' attribute: not an anasim model file (expected format \"{}\")",
                                    kModelFormat)};
    }
    if (format != kModelFormat)
      throw FormatError{fmt::format("unsupported model format \"{}\" (expected \"{}\")", format, kModelFormat)};
    if (!file.attrExists("sizes")) throw FormatError{"missing root attribute 'sizes'"};
    const std::vector<int> sizes = read_int_array_attr(file, "sizes");
    if (sizes.size() < 2) throw FormatError{fmt::format("'sizes' has {} entries, at least 2 needed", sizes.size())};
    for (int s : sizes)
      if (s < 1) throw FormatError{fmt::format("'sizes' holds a non-positive layer size {}", s)};
    std::string act;
    if (read_string_attr(file, "activation", act) && act != "relu")
      throw FormatError{fmt::format("activation \"{}\" is not supported (only relu)", act)};
    for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
      const std::string gname = fmt::format("layer{}", l);
      if (!file.nameExists(gname))
        throw FormatError{fmt::format("missing group '/{}' ('sizes' lists {} layers)", gname, sizes.size() - 1)};
      H5::Group g = file.openGroup(gname);
      std::vector<hsize_t> wd, bd;
      const std::vector<double> w = read_dataset(g, "weight", 2, wd, "/" + gname);
      const std::vector<double> b = read_dataset(g, "bias", 1, bd, "/" + gname);
      const auto out = static_cast<hsize_t>(sizes[l + 1]), in = static_cast<hsize_t>(sizes[l]);
      if (wd[0] != out || wd[1] != in)
        throw FormatError{fmt::format("/{}/weight is {}x{}, expected {}x{} (outputs x inputs) from 'sizes'", gname,
                                      wd[0], wd[1], out, in)};
      if (bd[0] != out)
        throw FormatError{fmt::format("/{}/bias has {} entries, expected {} from 'sizes'", gname, bd[0], out)};
      DenseLayer layer;
      layer.weight = Eigen::Map<const MatrixRd>(w.data(), sizes[l + 1], sizes[l]);
      layer.bias = Eigen::Map<const Eigen::VectorXd>(b.data(), sizes[l + 1]);
      if (!layer.weight.allFinite() || !layer.bias.allFinite())
        throw FormatError{fmt::format("/{}: weights or biases are not all finite", gname)};
      net.layers.push_back(std::move(layer));
    }
    if (file.nameExists(fmt::format("layer{}", sizes.size() - 1)))
      throw FormatError{fmt::format("group '/layer{}' is not covered by 'sizes'", sizes.size() - 1)};
    if (info) {
      ModelInfo m;
      std::int64_t i64 = 0;
      if (read_scalar_attr(file, "epochs", H5::PredType::NATIVE_INT64, i64)) m.epochs = static_cast<int>(i64);
      read_scalar_attr(file, "lr", H5::PredType::NATIVE_DOUBLE, m.lr);
      read_scalar_attr(file, "seed", H5::PredType::NATIVE_UINT64, m.seed);
      read_scalar_attr(file, "noise", H5::PredType::NATIVE_DOUBLE, m.noise);
      if (read_scalar_attr(file, "train_samples", H5::PredType::NATIVE_INT64, i64)) m.train_samples = i64;
      read_scalar_attr(file, "test_accuracy", H5::PredType::NATIVE_DOUBLE, m.test_accuracy);
      if (read_scalar_attr(file, "test_samples", H5::PredType::NATIVE_INT64, i64)) m.test_samples = i64;
      if (read_scalar_attr(file, "batch", H5::PredType::NATIVE_INT64, i64)) m.batch = static_cast<int>(i64);
      if (read_scalar_attr(file, "shift", H5::PredType::NATIVE_INT64, i64)) m.shift = static_cast<int>(i64);
      read_scalar_attr(file, "weight_decay", H5::PredType::NATIVE_DOUBLE, m.weight_decay);
      read_string_attr(file, "optimizer", m.optimizer);
      read_string_attr(file, "schedule", m.schedule);
      read_string_attr(file, "dataset", m.dataset);
      read_string_attr(file, "created_by", m.created_by);
      *info = m;
    }
  } catch (const FormatError& e) {
    net.layers.clear();
    return file_error(path, e.message);
  } catch (const H5::Exception& e) {
    net.layers.clear();
    return file_error(path, fmt::format("cannot read model: {}", h5_message(e)));
  }
  return Status::success();
}

Status import_keras_here(const std::string& path, Mlp& net) {
  net.layers.clear();
  H5::Exception::dontPrint();
  Status result;
  try {
    H5::H5File file = open_for_reading(path);
    const bool whole_model = file.nameExists("model_weights");
    H5::Group root = whole_model ? file.openGroup("model_weights") : file.openGroup("/");
    std::vector<std::string> names;
    if (root.attrExists("layer_names")) {
      names = read_string_array_attr(root, "layer_names");
    } else {
      for (hsize_t i = 0; i < root.getNumObjs(); ++i)
        if (root.getObjTypeByIdx(i) == H5G_GROUP) names.push_back(root.getObjnameByIdx(i));
      std::sort(names.begin(), names.end());
    }
    for (const auto& name : names) {
      if (!root.nameExists(name)) throw FormatError{fmt::format("layer '{}' listed in layer_names is missing", name)};
      DenseLayer layer;
      const std::string where = (whole_model ? "/model_weights/" : "/") + name;
      if (keras_layer(root.openGroup(name), name, where, layer, result)) net.layers.push_back(std::move(layer));
    }
    if (net.layers.empty()) throw FormatError{"no Dense layers (kernel and bias) found"};
    std::string config;
    if (read_string_attr(file, "model_config", config)) {
      static const std::regex act_re(R"re("activation"\s*:\s*"([A-Za-z_]+)")re");
      std::vector<std::string> acts;
      for (auto it = std::sregex_iterator(config.begin(), config.end(), act_re); it != std::sregex_iterator(); ++it)
        acts.push_back((*it)[1]);
      for (std::size_t i = 0; i < acts.size(); ++i) {
        const bool last = i + 1 == acts.size();
        const std::string& a = acts[i];
        if (!(a == "relu" || (last && (a == "softmax" || a == "linear"))))
          result.warnings.push_back(fmt::format(
              "Keras model uses activation '{}' in layer {}; anasim applies ReLU between layers", a, i));
      }
    }
  } catch (const FormatError& e) {
    net.layers.clear();
    return file_error(path, e.message);
  } catch (const H5::Exception& e) {
    net.layers.clear();
    return file_error(path, fmt::format("cannot read Keras file: {}", h5_message(e)));
  }
  return result;  // (the host checks that the layers form a chain)
}

}  // namespace

}  // namespace anasim::nn

ANASIM_MODULE_EXPORT void anasim_hdf5_save_model(const std::string& path, const anasim::nn::Mlp& net,
                                                 const anasim::nn::ModelInfo& info, anasim::Status* st) {
  *st = anasim::nn::save_model_file(path, net, info);
}

ANASIM_MODULE_EXPORT void anasim_hdf5_load_model(const std::string& path, anasim::nn::Mlp& net,
                                                 anasim::nn::ModelInfo* info, anasim::Status* st) {
  *st = anasim::nn::load_model_here(path, net, info);
}

ANASIM_MODULE_EXPORT void anasim_hdf5_import_keras(const std::string& path, anasim::nn::Mlp& net,
                                                   anasim::Status* st) {
  *st = anasim::nn::import_keras_here(path, net);
}
