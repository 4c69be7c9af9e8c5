// HDF5 writer: one group per analysis holding the sweep variable and one 1-D double dataset per signal
// (AC: magnitude "vm(x)" and phase "vp(x)" in degrees), a "unit" attribute on every dataset and the solver
// statistics and any summary scalars (ResultScalar) as group attributes. Written to "<path>.tmp" and renamed into place when complete.
#include "engine/output.hpp"
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <system_error>
#include <H5Cpp.h>
#include <fmt/format.h>

namespace anasim {

namespace {

// HDF5 link names may hold anything but '/' (and must not be empty or ".").
std::string link_name(std::string s, const char* fallback) {
  for (auto& c : s)
    if (c == '/') c = '|';
  if (s.empty() || s == ".") return fallback;
  return s;
}

// AC dataset names for one signal: "v(x)" -> "vm(x)", "vp(x)"; "i(d)" -> "im(d)", "ip(d)";
// anything else gets the v/i prefix from its unit and the whole name in parentheses.
std::pair<std::string, std::string> ac_names(const Signal& s) {
  const std::string& n = s.name;
  if (n.size() > 3 && (n[0] == 'v' || n[0] == 'i') && n[1] == '(' && n.back() == ')') {
    std::string inner = n.substr(1);  // "(x)"
    return {std::string(1, n[0]) + "m" + inner, std::string(1, n[0]) + "p" + inner};
  }
  const char p = s.unit == "A" ? 'i' : 'v';
  return {fmt::format("{}m({})", p, n), fmt::format("{}p({})", p, n)};
}

void attr_string(H5::H5Object& obj, const char* name, const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  H5::Attribute a = obj.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  a.write(type, value);
}

void attr_int64(H5::H5Object& obj, const char* name, long value) {
  const std::int64_t v = value;
  H5::Attribute a = obj.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_INT64, &v);
}

void dataset(H5::Group& g, const std::string& name, const std::vector<double>& x, const std::string& unit) {
  const hsize_t n = x.size();
  H5::DataSpace space(1, &n);
  H5::DataSet d = g.createDataSet(name, H5::PredType::IEEE_F64LE, space);
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

void write_analysis(H5::H5File& file, const AnalysisResult& a) {
  H5::Group g = create_group(file, link_name(a.group, "analysis"));
  attr_string(g, "kind", a.kind);
  const SolverStats& st = a.stats;
  attr_int64(g, "newton_iterations", st.newton_iterations);
  attr_int64(g, "factorizations", st.factorizations);
  attr_int64(g, "refactorizations", st.refactorizations);
  attr_int64(g, "solves", st.solves);
  attr_int64(g, "timepoints", st.timepoints);
  attr_int64(g, "rejected", st.rejected);
  {
    H5::Attribute s = g.createAttribute("seconds", H5::PredType::IEEE_F64LE, H5::DataSpace(H5S_SCALAR));
    s.write(H5::PredType::NATIVE_DOUBLE, &st.seconds);
  }

  if (!a.notes.empty()) attr_string(g, "notes", fmt::format("{}", fmt::join(a.notes, "\n")));
  for (const ResultScalar& x : a.scalars) {  // extension analyses' summary values (units in the docs)
    H5::Attribute s = g.createAttribute(link_name(x.name, "value"), H5::PredType::IEEE_F64LE, H5::DataSpace(H5S_SCALAR));
    s.write(H5::PredType::NATIVE_DOUBLE, &x.value);
  }

  if (a.kind != "op") {
    const std::string sweep = link_name(a.sweep_name, "sweep");
    attr_string(g, "sweep", sweep);
    dataset(g, sweep, a.sweep, a.sweep_unit);
    if (!a.sweep2.empty() || !a.sweep2_name.empty()) {
      const std::string sweep2 = link_name(a.sweep2_name, "sweep2");
      attr_string(g, "sweep2", sweep2);
      const char c = a.sweep2_name.empty() ? ' ' : a.sweep2_name[0];  // outer source: "v..." or "i..."
      dataset(g, sweep2, a.sweep2, c == 'i' ? "A" : c == 'v' ? "V" : "");
    }
  }

  if (!a.complex()) {
    for (const auto& s : a.signals) dataset(g, link_name(s.name, "signal"), s.re, s.unit);
    return;
  }
  constexpr double deg = 180.0 / 3.14159265358979323846;
  for (const auto& s : a.signals) {
    std::vector<double> mag(s.re.size()), ph(s.re.size());
    for (size_t k = 0; k < s.re.size(); ++k) {
      const double re = s.re[k], im = k < s.im.size() ? s.im[k] : 0.0;
      mag[k] = std::hypot(re, im);
      ph[k] = std::atan2(im, re) * deg;
    }
    auto [m, p] = ac_names(s);
    dataset(g, link_name(m, "magnitude"), mag, s.unit);
    dataset(g, link_name(p, "phase"), ph, "deg");
  }
}

}  // namespace

Status write_hdf5(const RunResults& r, const std::string& path) {
  namespace fs = std::filesystem;
  H5::Exception::dontPrint();
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  try {
    H5::FileCreatPropList fcpl;
    if (H5Pset_link_creation_order(fcpl.getId(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
      throw H5::FileIException("write_hdf5", "H5Pset_link_creation_order failed");
    // The 1.8+ file format keeps large groups (10^4-10^5 signals) in indexed dense storage.
    H5::FileAccPropList fapl;
    if (H5Pset_libver_bounds(fapl.getId(), H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0)
      throw H5::FileIException("write_hdf5", "H5Pset_libver_bounds failed");
    H5::H5File file(tmp, H5F_ACC_TRUNC, fcpl, fapl);
    attr_string(file, "title", r.title);
    attr_string(file, "netlist", r.netlist);
    {
      H5::Attribute u = file.createAttribute("unknowns", H5::PredType::STD_I32LE, H5::DataSpace(H5S_SCALAR));
      u.write(H5::PredType::NATIVE_INT, &r.unknowns);
    }
    for (const auto& a : r.analyses) write_analysis(file, a);
    if (r.mc.trials > 0) {
      // /mc: per-trial values of every measurement ("/" in measurement names becomes a subgroup).
      H5::Group mc = create_group(file, "mc");
      attr_int64(mc, "trials", r.mc.trials);
      attr_int64(mc, "seed", static_cast<long>(r.mc.seed));
      std::map<std::string, H5::Group> sub;
      for (const auto& m : r.mc.measurements) {
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
        for (auto [nm, v] : {std::pair<const char*, double>{"mean", m.mean}, {"std", m.std}, {"min", m.min}, {"max", m.max}}) {
          H5::Attribute a = d.createAttribute(nm, H5::PredType::IEEE_F64LE, H5::DataSpace(H5S_SCALAR));
          a.write(H5::PredType::NATIVE_DOUBLE, &v);
        }
      }
    }
    file.close();
  } catch (const H5::Exception& e) {
    fs::remove(tmp, ec);
    return Status::fail(ErrorKind::Other,
                        fmt::format("cannot write HDF5 file '{}': {} ({})", path, e.getDetailMsg(), e.getFuncName()));
  } catch (const std::exception& e) {
    fs::remove(tmp, ec);
    return Status::fail(ErrorKind::Other, fmt::format("cannot write HDF5 file '{}': {}", path, e.what()));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    return Status::fail(ErrorKind::Other, fmt::format("cannot write HDF5 file '{}': {}", path, ec.message()));
  }
  return Status::success();
}

}  // namespace anasim
