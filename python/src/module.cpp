// The extension module tinyformer._core: the library's tensors, ops, modules, optimizers and runs. The Python
// package (tinyformer/__init__.py) gives them PyTorch's names.
//
// Errors become Python exceptions of the fitting class, with the library's message (the line the CLI prints after
// "tinyformer: error: "): a file that cannot be opened (tf::FileError) FileNotFoundError, IsADirectoryError,
// PermissionError or OSError; a bad value (std::invalid_argument, tf::config::ConfigError) ValueError; an index out
// of range (tf::IndexError, std::out_of_range) IndexError; anything else RuntimeError (pybind11's own translations).
#include <cerrno>
#include <string>

#include <pybind11/pybind11.h>

#include "tensor.hpp"
#include "tinyformer/ops/ops.hpp"
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
  // NOLINTNEXTLINE(performance-unnecessary-value-param): pybind11's translator type takes the pointer by value
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tf::FileError& e) {
      PyErr_SetString(file_error_class(e.why()), e.what());
    } catch (const tf::IndexError& e) {  // an index out of range: x[5] on 3 rows
      PyErr_SetString(PyExc_IndexError, e.what());
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
  // The Tensor class, then each topic's functions and methods (bind_tensor first: it sets __hash__ before __eq__).
  pybind11::class_<tf::python::Tensor> tensor(m, "Tensor",
                                              "A tf::Var: value, gradient and the op that made it; float32, float64, "
                                              "int64 or bool (as torch.Tensor; made by tf.tensor, zeros, ...)");
  tf::python::bind_tensor(m, tensor);
  tf::python::bind_factories(m);
  tf::python::bind_arithmetic(m, tensor);
  tf::python::bind_reductions(m, tensor);
  tf::python::bind_shapes(m, tensor);
  tf::python::bind_layers(m);
  tf::python::bind_autograd(m, tensor);
  tf::python::bind_numpy(m, tensor);
  tf::python::bind_nn(m);
  tf::python::bind_runs(m);
  tf::python::bind_report(m);
}
