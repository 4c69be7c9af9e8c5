// HDF5 files through the module libanasim_hdf5.so (engine/module.hpp). HDF5's C++ library initializes itself at
// process start wherever it is linked: its static constants open the library, which registers every type
// conversion and property class. Measured (2026-11-25, a two-line program linked with and without Debian's static
// HDF5 1.10): 3.2 MB more resident memory and 0.85 ms more per start. So every HDF5 reader and writer (results,
// checkpoints, conductance datasets, models, Monte Carlo files) sits in the module, loaded by the runs that use
// HDF5 only.
//
// The module's functions are plain C++ (the same build: engine/module.hpp's ABI check) and call nothing of the
// host's but what Host passes, so that the module needs no symbol of the executable, the test binary or the Python
// extension that loads it. Each exported function returns its result as a Status through `st`.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include "engine/module.hpp"
#include "engine/types.hpp"

namespace anasim::hdf5 {

// What the module calls back: the host's checked output file (engine/output_file.hpp, whose clean-up of
// temporaries on signals is process state of the host's), and the host's source-file registry for error locations.
struct Host {
  Status (*write_file)(const std::string& path, std::string_view bytes);
  SourceLoc (*whole_file)(const std::string& path);
};

// The module's function `sym`, loading the module and handing it the host's functions on first use; nullptr if
// the module cannot be loaded or lacks `sym`, with `st` saying why ("HDF5 support: ...").
void* symbol(const char* sym, Status& st);

// Calls the module's function `sym`, of type F (every one returns its result through a last Status* parameter),
// with args; a module that cannot be loaded is the result instead.
template <class F, class... A>
Status call(const char* sym, A&&... args) {
  Status st;
  if (void* f = symbol(sym, st)) reinterpret_cast<F*>(f)(std::forward<A>(args)..., &st);
  return st;
}

}  // namespace anasim::hdf5
