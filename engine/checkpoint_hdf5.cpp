// The HDF5 side of the Monte Carlo checkpoints (engine/checkpoint.hpp: the layout there), in the HDF5 module
// (engine/hdf5_module.hpp): reading a checkpoint into the item table, writing one.
#include <cstdint>
#include <H5Cpp.h>
#include <fmt/format.h>
#include "engine/checkpoint.hpp"
#include "engine/distribute.hpp"
#include "engine/output_hdf5.hpp"

namespace anasim {

namespace {

constexpr const char* kFormat = "anasim-checkpoint-1";

std::string read_string_attr(const H5::H5Object& o, const std::string& name) {
  H5::Attribute a = o.openAttribute(name);
  std::string v;
  a.read(a.getStrType(), v);
  return v;
}

template <class T>
std::vector<T> read_vector(const H5::Group& g, const char* name, const H5::PredType& type) {
  H5::DataSet d = g.openDataSet(name);
  hsize_t n = 0;
  d.getSpace().getSimpleExtentDims(&n);
  std::vector<T> v(n);
  if (n > 0) d.read(v.data(), type);
  return v;
}

template <class T>
void write_vector(H5::Group& g, const char* name, const std::vector<T>& v, const H5::PredType& file_type,
                  const H5::PredType& mem_type) {
  const hsize_t n = v.size();
  H5::DataSet d = g.createDataSet(name, file_type, H5::DataSpace(1, &n));
  if (n > 0) d.write(v.data(), mem_type);
}

// The reader itself, run by load_checkpoint in its isolated child process (the file exists); digest: id.digest().
Status load_checkpoint_here(const std::string& path, const RunIdentity& id, const std::string& digest,
                            dist::ItemTable& table, long* resumed) {
  const auto unreadable = [&](const std::string& why) {
    return Status::input(fmt::format("cannot resume from checkpoint '{}': {} (remove it to start afresh)", path, why));
  };
  try {
    H5::Exception::dontPrint();
    H5::H5File file(path, H5F_ACC_RDONLY);
    H5::Group g = file.openGroup("/checkpoint");
    if (!g.attrExists("format") || read_string_attr(g, "format") != kFormat)
      return unreadable(fmt::format("not an {} file", kFormat));
    if (read_string_attr(g, "identity_digest") != digest) {
      H5::Group gi = g.openGroup("identity");
      std::vector<std::string> diffs;
      for (const auto& [name, value] : id.fields) {
        const std::string was = gi.attrExists(name) ? read_string_attr(gi, name) : std::string("(absent)");
        if (was != value) diffs.push_back(fmt::format("{} differ (checkpoint: {}; this run: {})", name, was, value));
      }
      if (diffs.empty()) diffs.push_back("its identity fields differ from this run's");
      return Status::input(fmt::format("checkpoint '{}' belongs to another run: {}; remove it or give another "
                                       "--checkpoint file", path, fmt::join(diffs, "; ")));
    }
    std::int64_t items = 0;
    g.openAttribute("items").read(H5::PredType::NATIVE_INT64, &items);
    if (items != table.size())
      return unreadable(fmt::format("it holds {} items, this run has {}", items, table.size()));
    const auto item = read_vector<std::int64_t>(g, "item", H5::PredType::NATIVE_INT64);
    const auto length = read_vector<std::int64_t>(g, "length", H5::PredType::NATIVE_INT64);
    const auto value = read_vector<double>(g, "value", H5::PredType::NATIVE_DOUBLE);
    if (item.size() != length.size()) return unreadable("its item and length datasets differ in size");
    std::size_t at = 0;
    for (std::size_t k = 0; k < item.size(); ++k) {
      if (item[k] < 0 || item[k] >= items || length[k] < 0 || at + length[k] > value.size())
        return unreadable("its item table is inconsistent");
      table.values[item[k]].assign(value.begin() + at, value.begin() + at + length[k]);
      table.done[item[k]] = 1;
      at += length[k];
    }
    *resumed = static_cast<long>(item.size());
    return {};
  } catch (const H5::Exception& e) {
    return unreadable(hdf5_error_text(e));
  }
}

Status save_checkpoint_file(const std::string& path, const RunIdentity& id, const std::string& digest,
                            const dist::ItemTable& table) {
  std::vector<std::int64_t> item, length;
  std::vector<double> value;
  for (long i = 0; i < table.size(); ++i) {
    if (!table.done[i]) continue;
    item.push_back(i);
    length.push_back(static_cast<std::int64_t>(table.values[i].size()));
    value.insert(value.end(), table.values[i].begin(), table.values[i].end());
  }
  try {
    H5::Exception::dontPrint();
    Hdf5Image image(value.size() * sizeof(double) + item.size() * 16 + (1 << 16));
    H5::H5File file(path, H5F_ACC_TRUNC, H5::FileCreatPropList::DEFAULT, image.access());
    {  // every object closed before the file is
      H5::Group g = file.createGroup("/checkpoint");
      attr_string(g, "format", kFormat, H5T_CSET_ASCII);
      attr_string(g, "identity_digest", digest, H5T_CSET_ASCII);
      attr_int64(g, "items", table.size());
      H5::Group gi = g.createGroup("identity");
      for (const auto& [name, v] : id.fields) attr_string(gi, name.c_str(), v, H5T_CSET_ASCII);
      write_vector(g, "item", item, H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64);
      write_vector(g, "length", length, H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64);
      write_vector(g, "value", value, H5::PredType::IEEE_F64LE, H5::PredType::NATIVE_DOUBLE);
    }
    return image.save(file, path);
  } catch (const H5::Exception& e) {
    return Status::fail(ErrorKind::Other, fmt::format("cannot write checkpoint '{}': {}", path, hdf5_error_text(e)));
  }
}

}  // namespace

}  // namespace anasim

ANASIM_MODULE_EXPORT void anasim_hdf5_load_checkpoint(const std::string& path, const anasim::RunIdentity& id,
                                                      const std::string& digest, anasim::dist::ItemTable& table,
                                                      long* resumed, anasim::Status* st) {
  *st = anasim::load_checkpoint_here(path, id, digest, table, resumed);
}

ANASIM_MODULE_EXPORT void anasim_hdf5_save_checkpoint(const std::string& path, const anasim::RunIdentity& id,
                                                      const std::string& digest, const anasim::dist::ItemTable& table,
                                                      anasim::Status* st) {
  *st = anasim::save_checkpoint_file(path, id, digest, table);
}
