// The HDF5 side of the crossbar's conductance files (devices/crossbar.hpp, read_conductances_hdf5), in the HDF5
// module (engine/hdf5_module.hpp).
#include <climits>
#include <string>
#include <vector>
#include <H5Cpp.h>
#include <fmt/format.h>
#include "engine/output_hdf5.hpp"

namespace anasim {

namespace {

// The reader itself, run by read_conductances_hdf5 (devices/crossbar.cpp) in its isolated child process.
Status read_conductances_hdf5_here(const std::string& path, const std::string& dataset, int& rows, int& cols,
                                   std::vector<double>& g) {
  try {
    H5::Exception::dontPrint();
    H5::H5File f(path, H5F_ACC_RDONLY);
    if (dataset.empty() || !f.nameExists(dataset))
      return Status::input(fmt::format("HDF5 file '{}' has no dataset '{}'", path, dataset));
    H5::DataSet ds = f.openDataSet(dataset);
    const H5T_class_t cls = ds.getTypeClass();
    if (cls != H5T_FLOAT && cls != H5T_INTEGER)
      return Status::input(fmt::format("HDF5 dataset '{}' in '{}' is not numeric", dataset, path));
    H5::DataSpace sp = ds.getSpace();
    const int rank = sp.getSimpleExtentNdims();
    if (rank != 1 && rank != 2)
      return Status::input(fmt::format("HDF5 dataset '{}' in '{}' has rank {}; expected a 2-D (rows x cols) or 1-D "
                                       "array", dataset, path, rank));
    hsize_t dims[2] = {0, 0};
    sp.getSimpleExtentDims(dims);
    // A corrupt dataspace may claim more values than the file holds: at most 1024 per stored byte (compression).
    const hssize_t points = sp.getSimpleExtentNpoints();
    if (points < 0 || static_cast<hsize_t>(points) / 1024 > ds.getStorageSize() || dims[0] > INT_MAX ||
        dims[1] > INT_MAX)
      return Status::input(fmt::format("HDF5 dataset '{}' in '{}' claims {} values in {} bytes", dataset, path,
                                       points, ds.getStorageSize()));
    rows = rank == 2 ? static_cast<int>(dims[0]) : 0;
    cols = rank == 2 ? static_cast<int>(dims[1]) : 0;
    g.resize(rank == 2 ? dims[0] * dims[1] : dims[0]);
    if (!g.empty()) ds.read(g.data(), H5::PredType::NATIVE_DOUBLE);
  } catch (const H5::Exception& e) {
    return Status::input(fmt::format("cannot read dataset '{}' from HDF5 file '{}': {}", dataset, path,
                                     e.getDetailMsg()));
  }
  return {};
}

}  // namespace

}  // namespace anasim

ANASIM_MODULE_EXPORT void anasim_hdf5_read_matrix(const std::string& path, const std::string& dataset, int& rows,
                                                  int& cols, std::vector<double>& g, anasim::Status* st) {
  *st = anasim::read_conductances_hdf5_here(path, dataset, rows, cols, g);
}
