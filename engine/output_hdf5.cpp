// HDF5 writer: one group per analysis holding the sweep variable as a 1-D dataset and the signals as tables, one
// subgroup per unit ("voltages", "currents", ...) with a "names" dataset and a signals x points "values" matrix (AC:
// "magnitude" and "phase" in degrees); a "unit" attribute on every table and sweep, the solver statistics and any
// summary scalars (ResultScalar) as group attributes; .meas results in a subgroup "measurements". A few tables
// instead of one dataset per signal: a 2-million-node operating point is written in seconds, not minutes, and
// names are stored as given ("a/b" next to "a|b"). Built in memory and written by the host's OutputFile.
// Part of the HDF5 module (engine/hdf5_module.hpp), with its entry points at the end.
#include "engine/output.hpp"
#include "engine/output_hdf5.hpp"
#include <malloc.h>
#include "engine/hdf5_module.hpp"
#include "engine/spool.hpp"
#include <algorithm>
#include <stdexcept>
#include <memory>
#include <unistd.h>
#include <fcntl.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <filesystem>
#include <map>
#include <unordered_set>
#include <system_error>
#include <H5Cpp.h>
#include <fmt/format.h>

namespace anasim {

namespace {

namespace fs = std::filesystem;

// HDF5 link names may hold anything but '/' (and must not be empty or ".").
std::string link_name(std::string s, const char* fallback) {
  for (auto& c : s)
    if (c == '/') c = '|';
  if (s.empty() || s == ".") return fallback;
  return s;
}

// Datasets up to this size [bytes] are stored compact (in the object header): one metadata block instead of a
// header plus a data block, for the one-value datasets of an operating point.
constexpr hsize_t kCompactBytes = 4096;

void dataset(H5::Group& g, const std::string& name, const std::vector<double>& x, const std::string& unit) {
  const hsize_t n = x.size();
  H5::DataSpace space(1, &n);
  H5::DSetCreatPropList dcpl;
  if (n * sizeof(double) <= kCompactBytes) dcpl.setLayout(H5D_COMPACT);
  H5::DataSet d = g.createDataSet(name, H5::PredType::IEEE_F64LE, space, dcpl);
  if (n > 0) d.write(x.data(), H5::PredType::NATIVE_DOUBLE);
  attr_string(d, "unit", unit);
}

// A group whose links are listed in creation order (so h5py and h5dump show the columns as written).
H5::Group create_group(H5::H5File& file, const std::string& name) {
  H5::PropList gcpl(H5P_GROUP_CREATE);
  if (H5Pset_link_creation_order(gcpl.getId(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
    throw H5::GroupIException("create_group", "H5Pset_link_creation_order failed");
  const hid_t id = H5Gcreate2(file.getId(), name.c_str(), H5P_DEFAULT, gcpl.getId(), H5P_DEFAULT);
  if (id < 0) throw H5::GroupIException("create_group", fmt::format("cannot create group '{}'", name));
  H5::Group g(id);  // takes its own reference
  H5Gclose(id);
  return g;
}

// Link names of one group made unique (sweeps, tables, measurements; signal names are data in the tables): a name
// that link_name() changed may meet another ("a/b" and "a|b" both give "a|b"); the later one gets "~2", "~3", ...
// and a measurement whose link name differs keeps its own in a "name" attribute.
class LinkNames {
 public:
  std::string add(const std::string& original, const char* fallback) {
    std::string n = link_name(original, fallback);
    if (!used_.insert(n).second) {
      const std::string base = n;
      for (int k = 2; !used_.insert(n = fmt::format("{}~{}", base, k)).second; ++k) {}
    }
    return n;
  }

 private:
  std::unordered_set<std::string> used_;
};

// The table of one unit: "V" -> "voltages", "A" -> "currents", "W" -> "powers", "J" -> "energies", no unit ->
// "values", any other u -> "values(u)".
std::string table_name(const std::string& unit) {
  if (unit == "V") return "voltages";
  if (unit == "A") return "currents";
  if (unit == "W") return "powers";
  if (unit == "J") return "energies";
  return unit.empty() ? "values" : link_name("values(" + unit + ")", "values");
}

// An n x points matrix dataset (compact when small) with its unit attribute.
H5::DataSet create_matrix(H5::Group& g, const char* name, hsize_t n, hsize_t points, const std::string& unit) {
  const hsize_t dims[2] = {n, points};
  H5::DataSpace space(2, dims);
  H5::DSetCreatPropList dcpl;
  if (n * points * sizeof(double) <= kCompactBytes) dcpl.setLayout(H5D_COMPACT);
  H5::DataSet d = g.createDataSet(name, H5::PredType::IEEE_F64LE, space, dcpl);
  attr_string(d, "unit", unit);
  return d;
}

// buf (count[0] x count[1] values, row-major) into d at start.
void write_block(H5::DataSet& d, const hsize_t start[2], const hsize_t count[2], const double* buf) {
  H5::DataSpace file_space = d.getSpace();
  file_space.selectHyperslab(H5S_SELECT_SET, count, start);
  H5::DataSpace mem_space(2, count);
  d.write(buf, H5::PredType::NATIVE_DOUBLE, mem_space, file_space);
}

// A 2-D dataset of n rows x `points` columns; fill(k, row) writes row k (`points` values). Written in slabs of
// about 8 MB, so a large result is never held twice beside the file image.
template <class Fill>
void matrix_dataset(H5::Group& g, const char* name, hsize_t n, hsize_t points, const std::string& unit, Fill fill) {
  H5::DataSet d = create_matrix(g, name, n, points, unit);
  if (n == 0 || points == 0) return;
  const hsize_t slab = std::max<hsize_t>(1, (hsize_t(1) << 20) / points);  // rows per write
  std::vector<double> buf(std::min(slab, n) * points);
  for (hsize_t k0 = 0; k0 < n; k0 += slab) {
    const hsize_t rows = std::min(slab, n - k0);
    for (hsize_t k = 0; k < rows; ++k) fill(k0 + k, buf.data() + k * points);
    const hsize_t start[2] = {k0, 0}, count[2] = {rows, points};
    write_block(d, start, count, buf.data());
  }
}

// A 1-D dataset of UTF-8 strings (variable length), e.g. a table's signal names.
void names_dataset(H5::Group& g, const char* name, const std::vector<const Signal*>& signals) {
  std::vector<const char*> p;
  p.reserve(signals.size());
  for (const Signal* s : signals) p.push_back(s->name.c_str());
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  const hsize_t n = p.size();
  H5::DataSet d = g.createDataSet(name, type, H5::DataSpace(1, &n));
  if (n > 0) d.write(p.data(), type);
}

// A table's group: its unit as an attribute and the signals' "names".
H5::Group table_group(H5::Group& parent, const std::string& link, const std::string& unit,
                      const std::vector<const Signal*>& signals) {
  H5::Group t = parent.createGroup(link);
  attr_string(t, "unit", unit);
  names_dataset(t, "names", signals);
  return t;
}

// The signals of one unit as a table group: "names" (size n), "values" (n x points) or, for AC, "magnitude" and
// "phase" [deg] (n x points each); the unit as an attribute of the group and of each matrix.
// `release`: each signal's values are freed once copied (write_hdf5(RunResults&&)), and the freed heap pages handed
// back every 64 MB.
void signal_table(H5::Group& parent, const std::string& link, const std::string& unit,
                  const std::vector<const Signal*>& signals, hsize_t points, bool complex, bool release) {
  H5::Group t = table_group(parent, link, unit, signals);
  const hsize_t n = signals.size();
  if (!complex) {
    std::size_t freed = 0;
    matrix_dataset(t, "values", n, points, unit, [&](hsize_t k, double* row) {
      std::copy(signals[k]->re.begin(), signals[k]->re.end(), row);
      if (!release) return;
      std::vector<double>& re = const_cast<Signal*>(signals[k])->re;  // a non-const result (RunResults&&)
      freed += re.capacity() * sizeof(double);
      std::vector<double>().swap(re);
      if (freed >= (std::size_t(64) << 20)) {
        ::malloc_trim(0);
        freed = 0;
      }
    });
    return;
  }
  constexpr double deg = 180.0 / 3.14159265358979323846;
  auto im = [&](hsize_t k, hsize_t j) { return j < signals[k]->im.size() ? signals[k]->im[j] : 0.0; };
  matrix_dataset(t, "magnitude", n, points, unit, [&](hsize_t k, double* row) {
    for (hsize_t j = 0; j < points; ++j) row[j] = std::hypot(signals[k]->re[j], im(k, j));
  });
  matrix_dataset(t, "phase", n, points, "deg", [&](hsize_t k, double* row) {
    for (hsize_t j = 0; j < points; ++j) row[j] = std::atan2(im(k, j), signals[k]->re[j]) * deg;
  });
}

// Column c of every spooled row (the sweep: c = 0).
std::vector<double> spooled_column(const Spool& sp, size_t c) {
  std::vector<double> v(sp.rows());
  sp.for_blocks(1, [&](size_t p0, size_t m, const double* rows) {
    for (size_t j = 0; j < m; ++j) v[p0 + j] = rows[j * sp.width() + c];
  });
  return v;
}

// A spooled analysis's signals x points matrix of the signals at columns `cols` of the spool's rows (1 + signal
// index), written a block of time points (all signals) at a time: each block is contiguous in the spool.
void spooled_matrix(H5::Group& g, const char* name, const Spool& sp, const std::vector<size_t>& cols,
                    const std::string& unit) {
  const hsize_t n = cols.size(), points = sp.rows();
  H5::DataSet d = create_matrix(g, name, n, points, unit);
  if (n == 0 || points == 0) return;
  // Blocks of at least 64 points: each block's write is n pieces of that many values in the file.
  std::vector<double> buf;
  sp.for_blocks(64, [&](size_t p0, size_t m, const double* rows) {
    buf.resize(n * m);
    for (hsize_t k = 0; k < n; ++k)
      for (size_t j = 0; j < m; ++j) buf[k * m + j] = rows[j * sp.width() + cols[k]];
    const hsize_t start[2] = {0, p0}, count[2] = {n, m};
    write_block(d, start, count, buf.data());
  });
}

void write_analysis(H5::H5File& file, const AnalysisResult& a, bool release, const Spool* spool) {
  H5::Group g = create_group(file, link_name(a.group, "analysis"));
  LinkNames names;
  attr_string(g, "kind", a.kind);
  const SolverStats& st = a.stats;
  attr_int64(g, "newton_iterations", st.newton_iterations);
  attr_int64(g, "factorizations", st.factorizations);
  attr_int64(g, "refactorizations", st.refactorizations);
  attr_int64(g, "solves", st.solves);
  attr_int64(g, "cg_iterations", st.cg_iterations);
  attr_int64(g, "lu_reuses", st.lu_reuses);
  attr_int64(g, "gmres_iterations", st.gmres_iterations);
  attr_int64(g, "timepoints", st.timepoints);
  attr_int64(g, "rejected", st.rejected);
  attr_double(g, "seconds", st.seconds);

  if (!a.notes.empty()) attr_string(g, "notes", fmt::format("{}", fmt::join(a.notes, "\n")));
  for (const ResultScalar& x : a.scalars)  // extension analyses' summary values (units in the docs)
    attr_double(g, link_name(x.name, "value").c_str(), x.value);

  if (!a.measures.empty()) {  // .meas results: <group>/measurements/<name>, one value each (NaN: failed)
    H5::Group mg = g.createGroup(names.add("measurements", "measurements"));
    LinkNames mnames;
    for (const MeasureResult& m : a.measures) {
      const std::string n = mnames.add(m.name, "measure");
      dataset(mg, n, {m.value}, m.unit);
      if (!m.error.empty() || n != m.name) {
        H5::DataSet d = mg.openDataSet(n);
        if (!m.error.empty()) attr_string(d, "error", m.error);
        if (n != m.name) attr_string(d, "name", m.name);
      }
    }
  }

  if (a.kind != "op") {
    const std::string sweep = names.add(a.sweep_name, "sweep");
    attr_string(g, "sweep", sweep);
    dataset(g, sweep, spool ? spooled_column(*spool, 0) : a.sweep, a.sweep_unit);
    if (!a.sweep2.empty() || !a.sweep2_name.empty()) {
      const std::string sweep2 = names.add(a.sweep2_name, "sweep2");
      attr_string(g, "sweep2", sweep2);
      const char c = a.sweep2_name.empty() ? ' ' : a.sweep2_name[0];  // outer source: "v..." or "i..."
      dataset(g, sweep2, a.sweep2, c == 'i' ? "A" : c == 'v' ? "V" : "");
    }
  }

  // One table per unit, in the order the units first appear; every kept signal has the analysis's number of points
  // (a spooled analysis's are the spool's rows).
  std::vector<std::pair<std::string, std::vector<const Signal*>>> tables;
  const hsize_t points = a.signals.empty() ? 0 : a.signals[0].re.size();
  for (const auto& s : a.signals) {
    if (!spool && (s.re.size() != points || (a.complex() && !s.im.empty() && s.im.size() != points)))
      throw H5::DataSetIException("write_hdf5", fmt::format("/{}: signal '{}' has {} points, '{}' {}", a.group,
                                                            s.name, s.re.size(), a.signals[0].name, points));
    auto it = std::find_if(tables.begin(), tables.end(), [&](const auto& t) { return t.first == s.unit; });
    if (it == tables.end()) it = tables.insert(tables.end(), {s.unit, {}});
    it->second.push_back(&s);
  }
  for (const auto& [unit, signals] : tables) {
    const std::string link = names.add(table_name(unit), "values");
    if (!spool) {
      signal_table(g, link, unit, signals, points, a.complex(), release);
      continue;
    }
    H5::Group t = table_group(g, link, unit, signals);
    std::vector<size_t> cols;  // the signals' columns in the spooled rows (after the sweep)
    for (const Signal* s : signals) cols.push_back(1 + static_cast<size_t>(s - a.signals.data()));
    spooled_matrix(t, "values", *spool, cols, unit);
  }
}

// /mc: per-trial values of every measurement ("/" in measurement names becomes a subgroup).
void write_mc(H5::H5File& file, const McResults& r_mc) {
  H5::Group mc = create_group(file, "mc");
  attr_int64(mc, "trials", r_mc.trials);
  attr_int64(mc, "seed", static_cast<long>(r_mc.seed));
  std::map<std::string, H5::Group> sub;
  for (const auto& m : r_mc.measurements) {
    auto slash = m.name.find('/');
    std::string gname = slash == std::string::npos ? "" : m.name.substr(0, slash);
    std::string dname = link_name(slash == std::string::npos ? m.name : m.name.substr(slash + 1), "value");
    H5::Group* g = &mc;
    if (!gname.empty()) {
      auto it = sub.find(gname);
      if (it == sub.end()) it = sub.emplace(gname, mc.createGroup(link_name(gname, "group"))).first;
      g = &it->second;
    }
    dataset(*g, dname, m.values, m.unit);
    H5::DataSet d = g->openDataSet(dname);
    for (auto [nm, v] : {std::pair<const char*, double>{"mean", m.mean}, {"std", m.std}, {"min", m.min}, {"max", m.max}})
      attr_double(d, nm, v);
  }
}

// Upper estimate of the file size [bytes]: the data, the names (a global heap entry of ~32 bytes plus the name
// each) and about 1 KiB of metadata per dataset.
// `spools`: the spooled analyses' rows by group (may be null).
std::size_t expected_hdf5_bytes(const RunResults& r, const Spools* spools) {
  std::size_t bytes = 1 << 16;
  for (const auto& a : r.analyses) {
    if (spools && spools->count(a.group)) {
      const Spool& sp = *spools->at(a.group);
      bytes += sp.rows() * sp.width() * sizeof(double) + 64 * 1024;
    }
    const std::size_t n = a.sweep.size() + a.sweep2.size() + 8;
    bytes += 4 * (n * sizeof(double) + 1024) + 8 * 1024;
    for (const auto& s : a.signals) bytes += (a.complex() ? 2 : 1) * s.re.size() * sizeof(double) + 32 + s.name.size();
    bytes += 1024 * a.measures.size();
  }
  for (const auto& m : r.mc.measurements) bytes += m.values.size() * sizeof(double) + 1024;
  // A margin for the names' heap and the object headers (the 256x256 crossbar transient's file is 0.5% above the
  // sum of its data): one step of the core driver then holds the file (Hdf5Image).
  return bytes + bytes / 32 + (std::size_t(1) << 20);
}

}  // namespace

void attr_string(H5::H5Object& obj, const char* name, const std::string& value, H5T_cset_t cset) {
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(cset);
  obj.createAttribute(name, type, H5::DataSpace(H5S_SCALAR)).write(type, value);
}

void attr_int64(H5::H5Object& obj, const char* name, long value) {
  const std::int64_t v = value;
  obj.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR)).write(H5::PredType::NATIVE_INT64, &v);
}

void attr_double(H5::H5Object& obj, const char* name, double value) {
  obj.createAttribute(name, H5::PredType::IEEE_F64LE, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_DOUBLE, &value);
}

Hdf5Image::Hdf5Image(std::size_t expected_bytes) {
  // The core driver grows its buffer a step at a time and zeroes each new step whole: one step of the (upper)
  // estimate touches about the file's size once; a smaller cap made a 1.27 GB file touch 2 GB.
  const std::size_t step = std::max<std::size_t>(expected_bytes, 1 << 20);
  if (H5Pset_fapl_core(fapl_.getId(), step, /*backing_store=*/false) < 0)
    throw H5::FileIException("Hdf5Image", "H5Pset_fapl_core failed");
  H5FD_file_image_callbacks_t cb = {&cb_malloc, &cb_memcpy, &cb_realloc, &cb_free, &cb_udata_copy, &cb_udata_free, this};
  if (H5Pset_file_image_callbacks(fapl_.getId(), &cb) < 0)
    throw H5::FileIException("Hdf5Image", "H5Pset_file_image_callbacks failed");
}

Hdf5Image::~Hdf5Image() { std::free(closed_); }

void* Hdf5Image::cb_malloc(std::size_t size, H5FD_file_image_op_t, void* udata) {
  auto* self = static_cast<Hdf5Image*>(udata);
  self->buffer_ = std::malloc(size);
  self->size_ = self->buffer_ ? size : 0;
  return self->buffer_;
}

void* Hdf5Image::cb_memcpy(void* dest, const void* src, std::size_t size, H5FD_file_image_op_t, void*) {
  return std::memcpy(dest, src, size);
}

void* Hdf5Image::cb_realloc(void* ptr, std::size_t size, H5FD_file_image_op_t, void* udata) {
  auto* self = static_cast<Hdf5Image*>(udata);
  void* p = std::realloc(ptr, size);
  if (p || size == 0) {
    self->buffer_ = p;
    self->size_ = size;
  }
  return p;
}

herr_t Hdf5Image::cb_free(void* ptr, H5FD_file_image_op_t op, void* udata) {
  auto* self = static_cast<Hdf5Image*>(udata);
  if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && ptr && ptr == self->buffer_) {
    std::free(self->closed_);
    self->closed_ = ptr;  // the complete file: kept for save()
    self->closed_size_ = self->size_;
  } else {
    std::free(ptr);
  }
  if (ptr == self->buffer_) self->buffer_ = nullptr;
  return 0;
}

namespace {

// The file's end-of-file address from its superblock (format spec, "Superblock"): the buffer beyond it is unused.
// 0 when the superblock is not one this code knows.
std::size_t superblock_eof(const unsigned char* p, std::size_t n) {
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (n < 64 || std::memcmp(p, sig, 8) != 0) return 0;
  const int version = p[8];
  const std::size_t at = version == 0 ? 40 : version == 1 ? 44 : 28;  // v0/v1: after K values, flags, 2 addresses
  const int offsets = version <= 1 ? p[13] : p[9];                    // size of offsets [bytes]
  if (version > 3 || offsets != 8) return 0;
  std::uint64_t eof = 0;
  for (int k = 7; k >= 0; --k) eof = (eof << 8) | p[at + k];  // little-endian
  return eof <= n ? static_cast<std::size_t>(eof) : 0;
}

}  // namespace

Status Hdf5Image::save(H5::H5File& file, const std::string& path) {
  file.close();  // memory only: nothing can fail on disk here
  if (!closed_) throw H5::FileIException("Hdf5Image::save", "the in-memory file image was not handed back on close");
  const auto* p = static_cast<const unsigned char*>(closed_);
  std::size_t n = superblock_eof(p, closed_size_);
  if (n == 0) n = closed_size_;
  if (!g_host) throw H5::FileIException("Hdf5Image::save", "the HDF5 module was not initialized");
  return g_host->write_file(path, std::string_view(static_cast<const char*>(closed_), n));
}

std::string hdf5_error_text(const H5::Exception& e) {
  std::string msg = e.getDetailMsg();
  // The innermost message of HDF5's error stack says why (e.g. "unable to open file: ... errno = 28").
  struct Walk {
    static herr_t cb(unsigned, const H5E_error2_t* err, void* data) {
      auto* out = static_cast<std::string*>(data);
      if (out->empty() && err->desc && *err->desc) *out = err->desc;
      return 0;
    }
  };
  std::string inner;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, &Walk::cb, &inner);
  if (!inner.empty() && inner != msg) msg += ": " + inner;
  if (!e.getFuncName().empty()) msg += fmt::format(" ({})", e.getFuncName());
  return msg;
}

const hdf5::Host* g_host = nullptr;

namespace {

// The target was checked by the host (engine/hdf5_module.cpp).
Status write_file(const RunResults& r, const std::string& path, bool release, const Spools* spools) {
  H5::Exception::dontPrint();
  try {
    H5::FileCreatPropList fcpl;
    if (H5Pset_link_creation_order(fcpl.getId(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
      throw H5::FileIException("write_hdf5", "H5Pset_link_creation_order failed");
    // The 1.8+ file format keeps large groups (10^4-10^5 signals) in indexed dense storage.
    Hdf5Image image(expected_hdf5_bytes(r, spools));
    H5::FileAccPropList& fapl = image.access();
    if (H5Pset_libver_bounds(fapl.getId(), H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0)
      throw H5::FileIException("write_hdf5", "H5Pset_libver_bounds failed");
    H5::H5File file(path, H5F_ACC_TRUNC, fcpl, fapl);
    attr_string(file, "title", r.title);
    attr_string(file, "netlist", r.netlist);
    {
      H5::Attribute u = file.createAttribute("unknowns", H5::PredType::STD_I32LE, H5::DataSpace(H5S_SCALAR));
      u.write(H5::PredType::NATIVE_INT, &r.unknowns);
    }
    for (const auto& a : r.analyses) {
      if (a.streamed && !(spools && spools->count(a.group)))
        throw std::runtime_error(fmt::format("internal: analysis '{}' was streamed elsewhere", a.group));
      write_analysis(file, a, release, a.streamed ? spools->at(a.group).get() : nullptr);
    }
    if (r.mc.trials > 0) write_mc(file, r.mc);
    return image.save(file, path);
  } catch (const H5::Exception& e) {
    return Status::fail(ErrorKind::Other, fmt::format("cannot write HDF5 file '{}': {}", path, hdf5_error_text(e)));
  } catch (const std::exception& e) {
    return Status::fail(ErrorKind::Other, fmt::format("cannot write HDF5 file '{}': {}", path, e.what()));
  }
}

}  // namespace

}  // namespace anasim

// ---- the module's entry points (engine/hdf5_module.hpp) ----

ANASIM_MODULE_EXPORT int anasim_module_abi() { return anasim::module::kModuleAbi; }

ANASIM_MODULE_EXPORT void anasim_hdf5_init(const anasim::hdf5::Host* host) { anasim::g_host = host; }

ANASIM_MODULE_EXPORT void anasim_hdf5_write_results(const anasim::RunResults& r, const std::string& path,
                                                    bool release, const anasim::Spools* spools, anasim::Status* st) {
  *st = anasim::write_file(r, path, release, spools);
}
