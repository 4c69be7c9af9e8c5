// Checkpoint files of the Monte Carlo drivers (see checkpoint.hpp). Layout: group /checkpoint with attributes
// format ("anasim-checkpoint-1"), items (table size), identity_digest and one string attribute per identity field
// in its subgroup /checkpoint/identity; datasets item (int64, the done items), length (int64, values per item) and
// value (float64, every done item's values in item order).
#include "engine/checkpoint.hpp"
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <H5Cpp.h>
#include <fmt/format.h>
#include "engine/isolated_read.hpp"
#include "engine/output_hdf5.hpp"

#ifndef ANASIM_VERSION
#define ANASIM_VERSION "unknown"
#endif

namespace anasim {

namespace {

constexpr const char* kFormat = "anasim-checkpoint-1";

struct Fnv1a {
  std::uint64_t h = 1469598103934665603ull;
  void add(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  std::string hex() const { return fmt::format("{:016x}", h); }
};

std::string read_string_attr(const H5::H5Object& o, const std::string& name) {
  H5::Attribute a = o.openAttribute(name);
  std::string v;
  a.read(a.getStrType(), v);
  return v;
}

void write_string_attr(H5::H5Object& o, const std::string& name, const std::string& v) {
  H5::StrType st(H5::PredType::C_S1, H5T_VARIABLE);
  o.createAttribute(name, st, H5::DataSpace(H5S_SCALAR)).write(st, v);
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

namespace {

// The reader itself, run in the isolated child process by load_checkpoint (the file exists).
Status load_checkpoint_here(const std::string& path, const RunIdentity& id, dist::ItemTable& table, long* resumed) {
  const auto unreadable = [&](const std::string& why) {
    return Status::input(fmt::format("cannot resume from checkpoint '{}': {} (remove it to start afresh)", path, why));
  };
  try {
    H5::Exception::dontPrint();
    H5::H5File file(path, H5F_ACC_RDONLY);
    H5::Group g = file.openGroup("/checkpoint");
    if (!g.attrExists("format") || read_string_attr(g, "format") != kFormat)
      return unreadable(fmt::format("not an {} file", kFormat));
    if (read_string_attr(g, "identity_digest") != id.digest()) {
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

}  // namespace

Status load_checkpoint(const std::string& path, const RunIdentity& id, dist::ItemTable& table, long* resumed) {
  *resumed = 0;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  // The child fills its own copy of the table and sends back the done items: (item, values) each.
  Wire reply;
  Status st = read_isolated(path, "libhdf5", [&](Wire& w) {
    long r = 0;
    Status s = load_checkpoint_here(path, id, table, &r);
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
      write_string_attr(g, "format", kFormat);
      write_string_attr(g, "identity_digest", id.digest());
      const std::int64_t n = table.size();
      g.createAttribute("items", H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR))
          .write(H5::PredType::NATIVE_INT64, &n);
      H5::Group gi = g.createGroup("identity");
      for (const auto& [name, v] : id.fields) write_string_attr(gi, name, v);
      write_vector(g, "item", item, H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64);
      write_vector(g, "length", length, H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64);
      write_vector(g, "value", value, H5::PredType::IEEE_F64LE, H5::PredType::NATIVE_DOUBLE);
    }
    return image.save(file, path);
  } catch (const H5::Exception& e) {
    return Status::fail(ErrorKind::Other, fmt::format("cannot write checkpoint '{}': {}", path, hdf5_error_text(e)));
  }
}

}  // namespace anasim
