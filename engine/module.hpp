// Optional back-ends built as shared modules and loaded on first use (dlopen), so that a run which never needs
// them does not pay for loading them and the libraries under them at every process start:
//   umfpack  engine/umfpack_lu.cpp       UMFPACK (SparseLU's multifrontal LU for large grid-like matrices), OpenBLAS
//   cholmod  nn/port_reduction_cholmod.cpp  CHOLMOD (the NN fast path's port reduction), OpenBLAS
//   mpi      engine/distribute_mpi.cpp   Open MPI (Monte Carlo over ranks, only under mpirun)
//   hdf5     every HDF5 reader and writer (engine/hdf5_module.hpp): HDF5, and the ~30 libraries under it
// Measured with an empty program linked to anasim's 35 shared libraries: 5.3 ms and 9.4 MB per start, 2.1 ms and
// 4.4 MB without OpenBLAS, UMFPACK, CHOLMOD and Open MPI (OpenBLAS alone made 12,000 of the loader's 17,600 symbol
// bindings).
//
// A module is the file libanasim_<name>.so, looked for in order in: $ANASIM_MODULE_DIR; the build tree's module
// directory (compiled in); the directory of the binary holding this code and its parent. It exports
// `anasim_module_abi` (kModuleAbi: a module from another build of different interfaces is refused) and its own
// factory functions.
#pragma once
#include <string>

namespace anasim::module {

// Raised whenever an interface between the engine and a module changes.
constexpr int kModuleAbi = 2;

// How a module's symbols are seen by what is loaded after it: Local (RTLD_LOCAL), or Global (RTLD_GLOBAL: Open MPI
// loads its own components with dlopen, and they resolve their symbols through the libraries loaded before them).
// The first load of a module decides.
enum class Scope { Local, Global };

// The address of the function `symbol` of module `name` ("umfpack"), loading the module on first use; the module
// stays loaded. Thread-safe. nullptr if the module cannot be found or loaded, is of another ABI, or lacks the
// symbol; *error (if given) then says which and every path tried.
void* symbol(const char* name, const char* symbol, std::string* error = nullptr, Scope scope = Scope::Local);

template <class F>
F* function(const char* name, const char* sym, std::string* error = nullptr, Scope scope = Scope::Local) {
  return reinterpret_cast<F*>(symbol(name, sym, error, scope));
}

}  // namespace anasim::module

// In a module: marks the functions it exports (everything else is hidden).
#define ANASIM_MODULE_EXPORT extern "C" __attribute__((visibility("default")))
