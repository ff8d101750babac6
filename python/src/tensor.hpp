#pragma once
// The Python Tensor: a tf::Var<float> or a tf::Var<double> (one Python class for every dtype, as torch.Tensor), the
// dtypes and their promotion, and the conversions between Python values, NumPy arrays and tf::Array.
//
// dtypes: float32 and float64 tensors are Var<float> and Var<double>, with autograd. int64 and bool tensors (token
// ids, comparison results, masks) are constants whose values a Var<double> holds exactly (whole numbers up to 2^53, and
// 0 or 1), so that every op of the library runs on them; which dtype a result has follows torch's promotion rules.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "tinyformer/autograd/variable.hpp"

namespace tf {
struct TensorIndex;  // ops/ops.hpp
class Rng;           // tensor/random.hpp
}  // namespace tf

namespace tf::python {

namespace py = pybind11;

enum class DType { float32, float64, int64, boolean };

const char* dtype_name(DType d);
// "float32", tf.float32, np.float32, np.dtype("int64"), "long", "bool", Python's float (float64, as torch), int, bool
// -> the DType; a ValueError naming the valid ones otherwise.
DType dtype_of(const py::handle& dtype);

struct Tensor {
  std::variant<Var<float>, Var<double>> var;
  DType kind = DType::float32;
  // Set on what p.grad gives (a copy of p's gradient): a change of its values in place (p.grad.zero_(),
  // p.grad *= 0.5, p.grad[0] = 0) is copied back into p's gradient, as torch's p.grad is that gradient itself.
  std::shared_ptr<const Tensor> grad_of;

  Tensor() = default;
  Tensor(Var<float> v) : var(std::move(v)) {}                                   // NOLINT(google-explicit-constructor)
  Tensor(Var<double> v) : var(std::move(v)), kind(DType::float64) {}            // NOLINT(google-explicit-constructor)
  Tensor(Var<double> v, DType integral) : var(std::move(v)), kind(integral) {}  // int64 or bool values

  bool is_double() const { return var.index() == 1; }  // the storage: float64 holds int64 and bool tensors too
  bool is_floating() const { return kind == DType::float32 || kind == DType::float64; }
  const char* dtype() const { return dtype_name(kind); }
  // The Var of a float tensor of dtype S; std::invalid_argument naming both dtypes otherwise.
  template <class S>
  const Var<S>& as() const {
    constexpr DType want = std::is_same_v<S, double> ? DType::float64 : DType::float32;
    if (kind != want) {
      throw std::invalid_argument(std::string("expected a ") + dtype_name(want) + " tensor, got a " + dtype() +
                                  " one (convert it with .double() or .float())");
    }
    return std::get<Var<S>>(var);
  }
};

// The scalar type of a Var.
template <class V>
using ScalarOfVar = typename std::decay_t<decltype(std::declval<V>().value())>::value_type;

// f(var) on whichever storage `t` has.
template <class F>
auto visit(const Tensor& t, F&& f) {
  return std::visit(std::forward<F>(f), t.var);
}

// ---- promotion (torch's rules, without float32/float64 mixing: that is refused with a hint)
// The tensor as a float one: itself when float32 or float64, else its values as float32 (torch's default dtype).
Tensor floating(const Tensor& t);
// t's values as `kind` (float to int64 truncates toward zero; to bool: nonzero): a new constant, or t itself.
Tensor converted(const Tensor& t, DType kind);
// The dtype of a binary op's result, as torch: floats win over integral dtypes, float64 over float32, int64 over bool.
DType promote(DType a, DType b);
// t as an operand of dtype `kind`: converted() when that drops no gradient; a float tensor that requires one is refused
// with a hint (the graph holds one dtype, so a float32 leaf cannot join a float64 op), never converted silently.
Tensor operand_as(const Tensor& t, DType kind);
inline DType promoted_kind(const Tensor& a, const Tensor& b) { return promote(a.kind, b.kind); }
// Both operands in the storage of their promoted dtype.
std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b);

// f(a, b) on two tensors after promotion; the result takes the promoted dtype (integral results stay integral).
template <class F>
Tensor visit2(const Tensor& a, const Tensor& b, F&& f) {
  const auto [x, y] = promoted(a, b);
  if (!x.is_double()) return Tensor(f(std::get<Var<float>>(x.var), std::get<Var<float>>(y.var)));
  Var<double> out = f(std::get<Var<double>>(x.var), std::get<Var<double>>(y.var));
  return x.is_floating() ? Tensor(std::move(out)) : Tensor(std::move(out), x.kind);
}

// f(var) on a float tensor (an integral one is made float32 first): exp, softmax, mean...
template <class F>
Tensor on_floating(const Tensor& t, F&& f) {
  const Tensor x = floating(t);
  return visit(x, [&](const auto& v) { return Tensor(f(v)); });
}

// f(var) keeping t's dtype: shape ops, indexing, neg, abs, max... (integral values stay whole)
template <class F>
Tensor keeping_dtype(const Tensor& t, F&& f) {
  if (t.is_floating()) return visit(t, [&](const auto& v) { return Tensor(f(v)); });
  return Tensor(f(std::get<Var<double>>(t.var)), t.kind);
}

// x.detach() and x.data: the same values and dtype outside autograd, not copied (Var::detach()).
inline Tensor detached(const Tensor& x) {
  Tensor out = x;
  std::visit([](auto& v) { v = v.detach(); }, out.var);
  return out;
}

// A list of tensors in one storage (their promoted dtype): f(the vector of their Vars) with the GIL released, for cat,
// stack and einsum.
template <class F>
Tensor joined(const std::vector<Tensor>& parts, const char* op, F f) {
  if (parts.empty()) throw std::invalid_argument(fmt::format("{}: needs at least one tensor, got none", op));
  DType kind = parts[0].kind;
  for (const Tensor& p : parts) kind = promote(kind, p.kind);
  std::vector<Tensor> same;
  same.reserve(parts.size());
  for (const Tensor& p : parts) same.push_back(operand_as(p, kind));
  py::gil_scoped_release release;
  return keeping_dtype(same[0], [&](const auto& first) {
    using V = std::decay_t<decltype(first)>;
    std::vector<V> vs;
    vs.reserve(same.size());
    for (const Tensor& p : same) vs.push_back(std::get<V>(p.var));
    return f(vs);
  });
}

// ---- Python values as tensors
// A Python number, NumPy scalar or array as a constant tensor for an op with `like`: a float value takes like's float
// dtype (float32 when like is integral), an integer int64 and a bool bool (as torch treats a Python scalar). Tensors
// pass through. nullopt for anything else (the operator then returns NotImplemented).
std::optional<Tensor> operand(const py::handle& x, const Tensor& like);
// A new leaf from data (a Tensor, NumPy array, nested lists or a number) as tf.tensor makes it: dtype as given, else
// float64 from a float64 array, float32 from other floats (Python floats too), int64 from integers, bool from bools.
Tensor make_tensor(const py::handle& data, const py::handle& dtype, bool requires_grad);
// A leaf of dtype `kind` holding `values` (converted to float32 for float32).
Tensor from_array(Array<double> values, DType kind, bool requires_grad = false);

// A shape from Python: ints, or one tuple / list of ints (zeros(2, 3), zeros((2, 3)), reshape([2, -1])).
std::vector<long> shape_arguments(const py::tuple& args, const char* what);
// A dim argument: None (all), an int, or a tuple / list of ints.
std::optional<std::vector<long>> dims_argument(const py::handle& dim);

// A NumPy array (or anything np.asarray takes) copied into a tf::Array, converted to S.
template <class S>
Array<S> to_array(const py::handle& h) {
  auto a = py::array_t<S, py::array::c_style | py::array::forcecast>::ensure(h);
  // ensure() clears NumPy's error: this one says what came instead of numbers
  if (!a)
    throw std::invalid_argument(std::string("expected numbers (an array NumPy can convert to ") +
                                (std::is_same_v<S, double> ? "float64" : "float32") + "), got a " +
                                Py_TYPE(h.ptr())->tp_name);
  Shape shape(a.shape(), a.shape() + a.ndim());
  Array<S> out = Array<S>::from_shape(shape);
  std::copy(a.data(), a.data() + a.size(), out.data());
  return out;
}

// What a Python hook answered, as the array it stands for: `out`, or for None the `copy` it was given, as it left it (a
// hook may change its argument in place, as TransformerLens' `z[:, :, h] = 0`). A value that does not convert is a
// ValueError that begins with `what` ("the hook at 'x' must return ...").
template <class S>
Array<S> hook_answer(const py::object& out, const py::object& copy, const std::string& what) {
  try {
    return to_array<S>(out.is_none() ? copy : out);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(what + ": " + e.what());
  }
}

// A Python function kept by the library (a hook on a gradient, on a node of a graph), released with the GIL taken: the
// library frees a graph wherever its last handle goes, with or without the GIL.
struct HeldFunction {
  py::function fn;
  explicit HeldFunction(py::function f) : fn(std::move(f)) {}
  HeldFunction(const HeldFunction&) = delete;
  HeldFunction& operator=(const HeldFunction&) = delete;
  ~HeldFunction() {
    try {
      py::gil_scoped_acquire gil;
      fn = py::function();
    } catch (...) {
      fn.release();  // no GIL to be had (the interpreter is gone): keep the reference rather than touch Python
    }
  }
};

// Calls a Python hook on a gradient: fn(grad copy, extra...) (a tensor outside the graph), whose answer (hook_answer)
// becomes the gradient. `what` names the hook in a refusal. The GIL is taken here: backward() runs without it.
template <class S, class... Extra>
void call_grad_hook(const HeldFunction& held, Array<S>& grad, const std::string& what, const Extra&... extra) {
  py::gil_scoped_acquire gil;
  const py::object copy = py::cast(Tensor(Var<S>(grad)));
  const py::object out = held.fn(copy, extra...);
  const std::string must = what + " must return a gradient of shape " + shape_str(to_shape(grad.shape())) + ", or None";
  Array<S> answer = hook_answer<S>(out, copy, must);
  if (answer.shape() != grad.shape())
    throw std::invalid_argument(must + ": it returned one of shape " + shape_str(to_shape(answer.shape())));
  grad = std::move(answer);
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

// The tensor's values as NumPy would hold them: a view of a float tensor's memory, an int64 or bool copy otherwise.
py::array to_numpy(const Tensor& t);

// An IndexArray (token ids, targets, indices) as an int64 tensor, and back.
Tensor from_indices(const IndexArray& ids);
// Token ids from Python (an int64 tensor, a NumPy array or nested lists of ints), checked to fit tf::Index.
IndexArray to_ids(const py::handle& ids);

// Text the library made as a Python str; bytes that are not UTF-8 (a character cut at the end) are replaced.
py::str utf8_str(const std::string& text);
py::list utf8_list(const std::vector<std::string>& texts);

// Each topic adds its functions to the module and its methods to the Tensor class.
// A subscript (x[...]'s key) as the library's index entries: ints, slices, None, ..., integer and bool arrays.
std::vector<TensorIndex> subscript(const py::handle& key);
// `g`, or the default generator (tf.manual_seed's) when g is null.
Rng& generator_or_default(Rng* g);

void bind_tensor(py::module_& m, py::class_<Tensor>& t);
void bind_in_place(py::module_& m, py::class_<Tensor>& t);
void bind_factories(py::module_& m);
void bind_arithmetic(py::module_& m, py::class_<Tensor>& t);
void bind_reductions(py::module_& m, py::class_<Tensor>& t);
void bind_shapes(py::module_& m, py::class_<Tensor>& t);
void bind_layers(py::module_& m);
void bind_autograd(py::module_& m, py::class_<Tensor>& t);
void bind_numpy(py::module_& m, py::class_<Tensor>& t);
void bind_nn(py::module_& m);
void bind_runs(py::module_& m);
void bind_report(py::module_& m);
void bind_vocabulary(py::module_& m);

// Binds f as the module function `name` (its first argument named by `input`) and as the Tensor method of the same
// name (that argument is then self, which pybind11 names itself).
template <class F, class... Extra>
void def_function_and_method(py::module_& m, py::class_<Tensor>& t, const char* name, F&& f, const py::arg& input,
                             const Extra&... extra) {
  m.def(name, f, input, extra...);
  t.def(name, std::forward<F>(f), extra...);
}

}  // namespace tf::python
