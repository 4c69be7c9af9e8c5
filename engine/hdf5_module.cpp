// The host side of the HDF5 module (see hdf5_module.hpp): loading it, and the engine's HDF5 writers (results, the
// spooled Hdf5Output), which hand their work to the module's engine/output_hdf5.cpp.
#include "engine/hdf5_module.hpp"
#include <mutex>
#include "engine/output.hpp"
#include "engine/output_file.hpp"
#include "engine/spool.hpp"

namespace anasim {

namespace hdf5 {

namespace {

const Host kHost = {
    &write_output_file,
    [](const std::string& path) { return SourceLoc::whole(path); },
};

}  // namespace

void* symbol(const char* sym, Status& st) {
  static std::once_flag once;
  static std::string init_error;
  std::call_once(once, [] {
    using Init = void(const Host*);
    std::string why;
    if (Init* init = module::function<Init>("hdf5", "anasim_hdf5_init", &why))
      init(&kHost);
    else
      init_error = why;
  });
  std::string why = init_error;
  void* f = why.empty() ? module::symbol("hdf5", sym, &why) : nullptr;
  if (!f) st = Status::fail(ErrorKind::Other, "HDF5 support: " + why);
  return f;
}

}  // namespace hdf5

namespace {

// Writes r (and the spooled analyses' rows) as an HDF5 file at path through the module; release: r's signals may
// be freed as they are written.
Status write_results(const RunResults& r, const std::string& path, bool release, const Spools* spools) {
  if (!is_stdout_name(path))
    if (Status st = check_output_target(path); !st) return st;
  using Write = void(const RunResults&, const std::string&, bool, const Spools*, Status*);
  return hdf5::call<Write>("anasim_hdf5_write_results", r, path, release, spools);
}

}  // namespace

Status write_hdf5(const RunResults& r, const std::string& path) { return write_results(r, path, false, nullptr); }

Status write_hdf5(RunResults&& r, const std::string& path) { return write_results(r, path, true, nullptr); }

struct Hdf5Output::Impl {
  SpoolSet set;
};

Hdf5Output::Hdf5Output() : impl_(std::make_unique<Impl>()) {}
Hdf5Output::~Hdf5Output() = default;
Status Hdf5Output::open(const std::string& path) { return impl_->set.open(path); }
Status Hdf5Output::stream(const std::string& group, RowSink*& sink) { return impl_->set.stream(group, sink); }
Status Hdf5Output::write(RunResults&& r) {
  return write_results(r, impl_->set.path(), true, &impl_->set.spools());
}

}  // namespace anasim
