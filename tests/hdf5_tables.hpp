// Test helpers reading the signal tables of an anasim results file (engine/output_hdf5.cpp): an analysis group
// holds one subgroup per unit with "names" and a signals x points matrix ("values", or AC "magnitude"/"phase").
#pragma once
#include <H5Cpp.h>
#include <map>
#include <string>
#include <vector>

namespace anasim::test_support {

// The "names" dataset of one table group, in row order.
inline std::vector<std::string> table_names(const H5::Group& table) {
  H5::DataSet d = table.openDataSet("names");
  const hsize_t n = d.getSpace().getSimpleExtentNpoints();
  std::vector<char*> p(n, nullptr);
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(d.getStrType().getCset());  // UTF-8 as written (no conversion path to ASCII in HDF5 1.10)
  if (n > 0) d.read(p.data(), type);
  std::vector<std::string> out(p.begin(), p.end());
  H5::DataSet::vlenReclaim(p.data(), type, d.getSpace());
  return out;
}

// Every signal of the analysis group `g`: name -> values of `matrix` ("values", "magnitude" or "phase"), from
// every table that has that matrix.
inline std::map<std::string, std::vector<double>> read_signals(const H5::Group& g, const char* matrix = "values") {
  std::map<std::string, std::vector<double>> out;
  for (hsize_t i = 0; i < g.getNumObjs(); ++i) {
    const std::string link = g.getObjnameByIdx(i);
    if (g.childObjType(link) != H5O_TYPE_GROUP) continue;
    H5::Group t = g.openGroup(link);
    if (!t.nameExists("names") || !t.nameExists(matrix)) continue;
    const std::vector<std::string> names = table_names(t);
    H5::DataSet d = t.openDataSet(matrix);
    hsize_t dims[2] = {0, 0};
    d.getSpace().getSimpleExtentDims(dims);
    std::vector<double> all(dims[0] * dims[1]);
    if (!all.empty()) d.read(all.data(), H5::PredType::NATIVE_DOUBLE);
    for (hsize_t k = 0; k < dims[0] && k < names.size(); ++k)
      out[names[k]].assign(all.begin() + k * dims[1], all.begin() + (k + 1) * dims[1]);
  }
  return out;
}

// One signal's values (empty when the group has no such signal).
inline std::vector<double> read_signal(const H5::Group& g, const std::string& name, const char* matrix = "values") {
  auto all = read_signals(g, matrix);
  auto it = all.find(name);
  return it == all.end() ? std::vector<double>{} : it->second;
}

// The unit attribute of a dataset or group.
inline std::string unit_of(const H5::H5Object& o) {
  H5::Attribute a = o.openAttribute("unit");
  std::string s;
  a.read(a.getStrType(), s);
  return s;
}

}  // namespace anasim::test_support
