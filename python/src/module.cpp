// The extension module tinyformer._core: the library's tensors, ops, modules, optimizers and runs. The Python
// package (tinyformer/__init__.py) gives them PyTorch's names.
//
// Errors go through the library's error boundary (runs/errors.hpp), as the CLI's do: one line naming the culprit,
// no internals, control bytes escaped. Each becomes the Python exception of its kind: ValueError for a bad value,
// TypeError, FileNotFoundError, IsADirectoryError, PermissionError, OSError for another file problem, IndexError,
// MemoryError, RuntimeError for the rest. A remedy worded for C++ is given in Python. An exception that Python code
// raised inside a callback (a KeyboardInterrupt, the user's own) passes through as it was.
#include <regex>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>

#include "tensor.hpp"
#include "tinyformer/runs/environment.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/tensor/blas_core.hpp"

namespace {

// What a failed py::cast inside a binding says (python/tinyformer/_arguments.py recognises it).
constexpr const char* kCastMessage =
    "an argument does not convert: a count, size, index or dim is an int within 64 bits (and >= 0 for a size)";

// The name that stands for a config given as a dict (tinyformer/runs.py writes the dict as JSON text under it).
constexpr const char* kConfigDictName = "<config dict>";

PyObject* python_class(tf::runs::ErrorKind kind) {
  using tf::runs::ErrorKind;
  switch (kind) {
    case ErrorKind::value:
      return PyExc_ValueError;
    case ErrorKind::type:
      return PyExc_TypeError;
    case ErrorKind::not_found:
      return PyExc_FileNotFoundError;
    case ErrorKind::is_directory:
      return PyExc_IsADirectoryError;
    case ErrorKind::permission:
      return PyExc_PermissionError;
    case ErrorKind::file:
      return PyExc_OSError;
    case ErrorKind::index:
      return PyExc_IndexError;
    case ErrorKind::memory:
      return PyExc_MemoryError;
    case ErrorKind::other:
      break;
  }
  return PyExc_RuntimeError;
}

// The library's remedies that name C++ (an option struct, a function of the C++ API) or the CLI's flags, as a Python
// user applies them (tf.train's arguments), in this order.
std::string with_python_remedies(std::string message) {
  static const std::pair<const char*, const char*> remedies[] = {
      {"set BackwardOptions::retain_graph in the first call", "pass retain_graph=True to the first backward()"},
      {"register its layers with register_module and its tensors with register_parameter in its constructor",
       "assign its layers and parameters (tf.nn.Parameter) as attributes in __init__"},
      {"(--set ", "(overrides: "},
      {": --set ", ": overrides: "},
      {"--resume from ", "resuming from "},
      {"--resume: ", "resume=True: "},
      {"without --resume", "without resume=True"},
      {"with --resume", "with resume=True"},
      {"with --overwrite", "with overwrite=True"},
      {"--allow-changes", "allow_changes=True"},
      {"another --out", "another out"},
      {"(--init-from)", "(init_from)"},
  };
  for (const auto& [cpp, python] : remedies)
    for (auto at = message.find(cpp); at != std::string::npos; at = message.find(cpp, at + std::string(python).size()))
      message.replace(at, std::string(cpp).size(), python);
  // A dict's lines are those of the JSON text the package wrote for it, which the user never saw: the key path says
  // where ("<config dict>: training.steps: expected an integer ...").
  static const std::regex line(" at line [0-9]+(, column [0-9]+)?");
  if (message.rfind(std::string(kConfigDictName) + ": ", 0) == 0) message = std::regex_replace(message, line, "");
  return message;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tinyformer's C++ library (see the tinyformer package)";
  m.attr("_config_dict_name") = kConfigDictName;
  m.attr("__version__") = TINYFORMER_VERSION;  // the project's version (CMakeLists.txt: project(... VERSION))
  // NOLINTNEXTLINE(performance-unnecessary-value-param): pybind11's translator type takes the pointer by value
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const pybind11::error_already_set&) {
      throw;  // a Python exception (a callback's): pybind11 restores it as it was
    } catch (const pybind11::cast_error&) {
      // py::cast of an argument inside a binding: an int beyond 64 bits, a negative size, a wrong type. The package's
      // wrapper (_arguments.py) puts the function's name in front.
      PyErr_SetString(PyExc_TypeError, kCastMessage);
    } catch (const pybind11::builtin_exception&) {
      throw;  // pybind11's own (py::type_error, py::stop_iteration, ...)
    } catch (const std::exception& e) {
      auto [kind, message] = tf::runs::user_error(e);
      PyErr_SetString(python_class(kind), with_python_remedies(std::move(message)).c_str());
    }
  });
  // The variables that choose how tinyformer computes, checked as the CLI checks them when it starts: a bad one makes
  // the import fail with the CLI's line (an ImportError; control bytes of the value shown as \xNN), before any work
  try {
    tf::runs::check_environment();
  } catch (const std::exception& e) {
    throw pybind11::import_error(tf::runs::user_message(e));
  }
  // The Tensor class, then each topic's functions and methods (bind_tensor first: it sets __hash__ before __eq__).
  pybind11::class_<tf::python::Tensor> tensor(m, "Tensor",
                                              "A tf::Var: value, gradient and the op that made it; float32, float64, "
                                              "int64 or bool (as torch.Tensor; made by tf.tensor, zeros, ...)");
  tf::python::bind_tensor(m, tensor);
  tf::python::bind_factories(m);
  tf::python::bind_arithmetic(m, tensor);
  tf::python::bind_reductions(m, tensor);
  tf::python::bind_shapes(m, tensor);
  tf::python::bind_in_place(m, tensor);
  tf::python::bind_layers(m);
  tf::python::bind_autograd(m, tensor);
  tf::python::bind_numpy(m, tensor);
  tf::python::bind_nn(m);
  tf::python::bind_vocabulary(m);
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
