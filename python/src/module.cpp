// The extension module tinyformer._core: the library's tensors, ops, modules, optimizers and runs. The Python
// package (tinyformer/__init__.py) gives them PyTorch's names.
//
// Errors become Python exceptions of the fitting class, with the library's message (the line the CLI prints after
// "tinyformer: error: "): a file that cannot be opened (tf::FileError) FileNotFoundError, IsADirectoryError,
// PermissionError or OSError; a bad value (std::invalid_argument, tf::config::ConfigError) ValueError; an index out
// of range IndexError; anything else RuntimeError (pybind11's own translations).
#include <cerrno>
#include <string>

#include <pybind11/pybind11.h>

#include "tensor.hpp"
#include "tinyformer/tensor/blas_core.hpp"
#include "tinyformer/tensor/files.hpp"

namespace {

PyObject* file_error_class(const std::string& why) {
  if (why == "no such file") return PyExc_FileNotFoundError;
  if (why == "is a directory") return PyExc_IsADirectoryError;
  if (why.rfind("not readable", 0) == 0) return PyExc_PermissionError;
  return PyExc_OSError;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tinyformer's C++ library (see the tinyformer package)";
  m.attr("__version__") = TINYFORMER_VERSION;  // the project's version (CMakeLists.txt: project(... VERSION))
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tf::FileError& e) {
      PyErr_SetString(file_error_class(e.why()), e.what());
    } catch (const std::logic_error& e) {
      // std::invalid_argument, std::domain_error, std::length_error, std::out_of_range are translated by pybind11;
      // the other logic errors (a second backward through a released graph, no gradient) are usage errors.
      if (dynamic_cast<const std::invalid_argument*>(&e) || dynamic_cast<const std::domain_error*>(&e) ||
          dynamic_cast<const std::length_error*>(&e)) {
        PyErr_SetString(PyExc_ValueError, e.what());
      } else if (dynamic_cast<const std::out_of_range*>(&e)) {
        PyErr_SetString(PyExc_IndexError, e.what());
      } else {
        PyErr_SetString(PyExc_RuntimeError, e.what());
      }
    }
  });
  tf::python::bind_tensor(m);
  tf::python::bind_nn(m);
  tf::python::bind_runs(m);
  tf::python::bind_report(m);
  m.def(
      "blas_core",
      [] {
        const tf::blas::CoreChoice& c = tf::blas::core_choice();
        pybind11::dict d;
        d["running"] = c.running;
        d["own"] = c.own;
        d["cpu_best"] = c.cpu_best;
        d["decided_by"] = c.decided_by;
        return d;
      },
      "OpenBLAS's core type as tinyformer chose it at import (the process's one OpenBLAS, NumPy's and PyTorch's too): "
      "running, own (OpenBLAS's choice before), cpu_best and decided_by");
}
