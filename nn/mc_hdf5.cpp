// The HDF5 side of `anasim nn mc -o FILE.h5` (nn/evaluate.hpp, write_mc_hdf5), in the HDF5 module
// (engine/hdf5_module.hpp).
#include <string>
#include <vector>
#include <H5Cpp.h>
#include <fmt/format.h>
#include "engine/output_hdf5.hpp"
#include "nn/evaluate.hpp"

namespace anasim::nn {

namespace {

Status write_mc_file(const std::string& path, const McReport& rep, const McOptions& opt) {
  try {
    H5::Exception::dontPrint();
    // Built in memory and written by one checked OutputFile (engine/output_hdf5.hpp).
    Hdf5Image image(rep.points.size() * (opt.trials + 8) * sizeof(double) + (1 << 16));
    // No modification times in the object headers: the same results give the same bytes (a resumed or MPI
    // run's file equals the uninterrupted single-process one's).
    H5::FileCreatPropList fcpl;
    H5::DSetCreatPropList dcpl;
    H5::PropList gcpl(H5P_GROUP_CREATE);
    for (hid_t pl : {fcpl.getId(), dcpl.getId(), gcpl.getId()})
      if (H5Pset_obj_track_times(pl, false) < 0) throw H5::PropListIException("write_mc_hdf5", "H5Pset_obj_track_times");
    H5::H5File file(path, H5F_ACC_TRUNC, fcpl, image.access());
    {  // every object closed before the file is
      const hid_t gid = H5Gcreate2(file.getId(), "/mc", H5P_DEFAULT, gcpl.getId(), H5P_DEFAULT);
      if (gid < 0) throw H5::GroupIException("write_mc_hdf5", "H5Gcreate2 /mc");
      H5::Group g(gid);  // takes its own reference
      H5Gclose(gid);
      const hsize_t np = rep.points.size(), nt = np ? rep.points[0].accuracy.size() : 0;
      std::vector<double> acc;
      for (const auto& p : rep.points) acc.insert(acc.end(), p.accuracy.begin(), p.accuracy.end());
      const hsize_t dims[2] = {np, nt};
      H5::DataSet d = g.createDataSet("accuracy", H5::PredType::IEEE_F64LE, H5::DataSpace(2, dims), dcpl);
      d.write(acc.data(), H5::PredType::NATIVE_DOUBLE);
      auto vec = [&](const char* name, auto get) {
        std::vector<double> v;
        for (const auto& p : rep.points) v.push_back(get(p));
        const hsize_t n1[1] = {np};
        g.createDataSet(name, H5::PredType::IEEE_F64LE, H5::DataSpace(1, n1), dcpl)
            .write(v.data(), H5::PredType::NATIVE_DOUBLE);
      };
      vec("mean", [](const McPoint& p) { return p.mean; });
      vec("std", [](const McPoint& p) { return p.std; });
      vec("min", [](const McPoint& p) { return p.min; });
      vec("p5", [](const McPoint& p) { return p.p5; });
      attr_string(g, "sweep_param", opt.sweep_param, H5T_CSET_ASCII);
      std::vector<std::string> vals;
      for (const auto& p : rep.points) vals.push_back(p.value);
      attr_string(g, "sweep_values", fmt::format("{}", fmt::join(vals, ",")), H5T_CSET_ASCII);
      attr_double(g, "seed", static_cast<double>(opt.seed));
      attr_double(g, "trials", opt.trials);
      attr_double(g, "samples", rep.samples);
      attr_double(g, "digital_accuracy", rep.digital_accuracy);
      attr_string(g, "unit", "fraction of test images classified correctly; rows = sweep points, columns = trials",
                  H5T_CSET_ASCII);
    }
    return image.save(file, path);
  } catch (const H5::Exception& e) {
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': {}", path, hdf5_error_text(e)));
  }
}

}  // namespace

}  // namespace anasim::nn

ANASIM_MODULE_EXPORT void anasim_hdf5_write_mc(const std::string& path, const anasim::nn::McReport& rep,
                                               const anasim::nn::McOptions& opt, anasim::Status* st) {
  *st = anasim::nn::write_mc_file(path, rep, opt);
}
