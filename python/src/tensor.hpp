#pragma once
// The Python Tensor: a tf::Var<float> or a tf::Var<double> (one Python class for both dtypes, as torch.Tensor),
// and the conversions between NumPy arrays and tf::Array.
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "tinyformer/autograd/variable.hpp"

namespace tf::python {

namespace py = pybind11;

struct Tensor {
  std::variant<Var<float>, Var<double>> var;

  Tensor() = default;
  Tensor(Var<float> v) : var(std::move(v)) {}   // NOLINT(google-explicit-constructor): ops return Vars
  Tensor(Var<double> v) : var(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  bool is_double() const { return var.index() == 1; }
  const char* dtype() const { return is_double() ? "float64" : "float32"; }
  template <class S>
  const Var<S>& as() const {
    if (!std::holds_alternative<Var<S>>(var)) {
      throw std::invalid_argument(std::string("expected a ") + (std::is_same_v<S, double> ? "float64" : "float32") +
                                  " tensor, got a " + dtype() + " one (convert it with .double() or .float())");
    }
    return std::get<Var<S>>(var);
  }
};

// f(var) on whichever dtype `t` holds.
template <class F>
auto visit(const Tensor& t, F&& f) {
  return std::visit(std::forward<F>(f), t.var);
}

// f(a, b) on two tensors of the same dtype; mixed dtypes are refused (as the library has no type promotion).
template <class F>
Tensor visit2(const Tensor& a, const Tensor& b, F&& f) {
  if (a.var.index() != b.var.index()) {
    throw std::invalid_argument(std::string("the operands have different dtypes, ") + a.dtype() + " and " + b.dtype() +
                                "; convert one with .double() or .float()");
  }
  if (a.is_double()) return Tensor(f(std::get<Var<double>>(a.var), std::get<Var<double>>(b.var)));
  return Tensor(f(std::get<Var<float>>(a.var), std::get<Var<float>>(b.var)));
}

// A NumPy array (or anything np.asarray takes) copied into a tf::Array, converted to S.
template <class S>
Array<S> to_array(const py::handle& h) {
  auto a = py::array_t<S, py::array::c_style | py::array::forcecast>::ensure(h);
  if (!a) throw py::error_already_set();
  Shape shape(a.shape(), a.shape() + a.ndim());
  Array<S> out = Array<S>::from_shape(shape);
  std::copy(a.data(), a.data() + a.size(), out.data());
  return out;
}

// A tf::Array as a NumPy array: a copy.
template <class S>
py::array_t<S> to_numpy_copy(const Array<S>& a) {
  py::array_t<S> out(std::vector<py::ssize_t>(a.shape().begin(), a.shape().end()));
  std::copy(a.data(), a.data() + a.size(), out.mutable_data());
  return out;
}

// The value of `v` as a read-only NumPy view of the node's memory (no copy); the array keeps the node alive.
template <class S>
py::array_t<S> value_view(const Var<S>& v) {
  auto* keep = new NodePtr<S>(v.node_ptr());
  py::capsule owner(keep, [](void* p) { delete static_cast<NodePtr<S>*>(p); });
  const Array<S>& a = v.value();
  py::array_t<S> out(std::vector<py::ssize_t>(a.shape().begin(), a.shape().end()), a.data(), owner);
  py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

// Token ids from Python (a NumPy array or nested lists of ints), checked to fit tf::Index.
IndexArray to_ids(const py::handle& ids);

void bind_tensor(py::module_& m);
void bind_nn(py::module_& m);
void bind_runs(py::module_& m);
void bind_report(py::module_& m);

}  // namespace tf::python
