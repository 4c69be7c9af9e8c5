// Shared helpers of the pybind11 module `anasim._anasim`: Status -> Python exception, vectors -> NumPy arrays.
// The module binds the high-level entry points only (simulate a netlist, map/realize/evaluate a network); the
// Python package (python/anasim/) wraps them into the public API.
#pragma once
#include <string>
#include <vector>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include "engine/types.hpp"

namespace anasim::py_bind {

namespace py = pybind11;

// Raises the module's exception for a failed Status (InputError for ErrorKind::Input, NumericalError for
// ErrorKind::Numerical, Error otherwise) with Status::to_string() as the message (file:line:col, the line and a
// caret for located errors). Must be called with the GIL held. Does nothing for an ok Status.
void raise_if_failed(const Status& st);

// A 1-D float64 array copied from v.
py::array_t<double> to_array(const std::vector<double>& v);

// Runs f() (returning Status) with the GIL released; C++ exceptions become a Status of kind Other, so nothing
// escapes into the interpreter unconverted.
template <class F>
Status without_gil(F&& f) {
  Status st;
  {
    py::gil_scoped_release release;
    try {
      st = f();
    } catch (const std::exception& e) {
      st = Status::fail(ErrorKind::Other, std::string("internal error: ") + e.what());
    }
  }
  return st;
}

void bind_circuits(py::module_& m);
void bind_networks(py::module_& m);

}  // namespace anasim::py_bind
