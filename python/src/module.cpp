// The pybind11 extension `anasim._anasim`: its exception classes and the two groups of bindings (circuits.cpp,
// networks.cpp). Every C++ call runs with the GIL released; failures come back as Status values and are raised
// here as Python exceptions carrying the same text as the command line's message.
#include "python/src/bindings.hpp"

namespace anasim::py_bind {

namespace {

// The exception classes, created once at import (module-lifetime references; never destroyed before exit).
PyObject* g_error = nullptr;            // anasim.Error: base class, exit code 1 of the command line
PyObject* g_input_error = nullptr;      // anasim.InputError: bad input, exit code 2
PyObject* g_numerical_error = nullptr;  // anasim.NumericalError: numerical failure, exit code 3

}  // namespace

void raise_if_failed(const Status& st) {
  if (st.ok()) return;
  PyObject* cls = g_error;
  if (st.errors[0].kind == ErrorKind::Input) cls = g_input_error;
  if (st.errors[0].kind == ErrorKind::Numerical) cls = g_numerical_error;
  PyErr_SetString(cls, st.to_string().c_str());
  throw py::error_already_set();
}

py::array_t<double> to_array(const std::vector<double>& v) {
  py::array_t<double> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

}  // namespace anasim::py_bind

PYBIND11_MODULE(_anasim, m) {
  namespace py = pybind11;
  using namespace anasim::py_bind;
  m.doc() = "anasim's C++ engine (circuits and analog neural networks); use the `anasim` package on top of it";
  g_error = PyErr_NewExceptionWithDoc("anasim.Error", "anasim failure (exit code 1 of the command line)",
                                      PyExc_RuntimeError, nullptr);
  g_input_error = PyErr_NewExceptionWithDoc("anasim.InputError",
                                            "bad input: parse or validation error, located as file:line:col "
                                            "(exit code 2 of the command line)", g_error, nullptr);
  g_numerical_error = PyErr_NewExceptionWithDoc("anasim.NumericalError",
                                                "numerical failure: no convergence, singular matrix "
                                                "(exit code 3 of the command line)", g_error, nullptr);
  if (!g_error || !g_input_error || !g_numerical_error) throw py::error_already_set();
  for (auto [obj, code] : {std::pair{g_error, 1}, {g_input_error, 2}, {g_numerical_error, 3}})
    PyObject_SetAttrString(obj, "exit_code", py::int_(code).ptr());
  m.attr("Error") = py::handle(g_error);
  m.attr("InputError") = py::handle(g_input_error);
  m.attr("NumericalError") = py::handle(g_numerical_error);
  bind_circuits(m);
  bind_networks(m);
}
