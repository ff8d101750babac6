// NumPy interop that never loses a gradient. NumPy hands a call with a Tensor argument to the Tensor:
//   __array_ufunc__:    np.sqrt(t), np.float64(2) * t, t + np.ones(4), ndarray < t ... A ufunc with a tinyformer op
//                       runs that op (the graph is kept; NumPy values become constants of the tensor's dtype); any
//                       other ufunc, a ufunc method other than a call (and add / maximum / minimum .reduce), or out= /
//                       where= / dtype= arguments raise one TypeError that names the ufunc and what to do instead.
//   __array_function__: np.sum, mean, var, std, max, min, argmax, argmin, concatenate, stack, transpose, reshape,
//                       squeeze, expand_dims, where, dot run tinyformer's ops; any other NumPy function raises that
//                       TypeError when a tensor argument requires a gradient (it would be lost), and otherwise runs
//                       on the tensors' values as NumPy arrays (as np.asarray(t) gives them), so that plotting and
//                       printing a constant tensor keep working.
// np.asarray(t) and np.array(t) take the values through __array__ (bind_tensor.cpp), never a gradient.
#include <map>
#include <string>

#include <fmt/format.h>

#include "tensor.hpp"

namespace tf::python {

namespace {

py::handle g_core;  // tinyformer._core, for the functions the NumPy names map to

// NumPy's ufunc name -> the module function that computes it (same arguments).
const std::map<std::string, std::string>& ufunc_ops() {
  static const std::map<std::string, std::string> ops = {{"add", "add"},
                                                         {"subtract", "sub"},
                                                         {"multiply", "mul"},
                                                         {"divide", "div"},
                                                         {"true_divide", "div"},
                                                         {"power", "pow"},
                                                         {"matmul", "matmul"},
                                                         {"maximum", "maximum"},
                                                         {"minimum", "minimum"},
                                                         {"equal", "eq"},
                                                         {"not_equal", "ne"},
                                                         {"less", "lt"},
                                                         {"less_equal", "le"},
                                                         {"greater", "gt"},
                                                         {"greater_equal", "ge"},
                                                         {"logical_and", "logical_and"},
                                                         {"logical_or", "logical_or"},
                                                         {"logical_xor", "logical_xor"},
                                                         {"logical_not", "logical_not"},
                                                         {"negative", "neg"},
                                                         {"positive", "clone"},
                                                         {"absolute", "abs"},
                                                         {"fabs", "abs"},
                                                         {"sqrt", "sqrt"},
                                                         {"exp", "exp"},
                                                         {"log", "log"},
                                                         {"tanh", "tanh"},
                                                         {"sin", "sin"},
                                                         {"cos", "cos"},
                                                         {"tan", "tan"},
                                                         {"log1p", "log1p"},
                                                         {"expm1", "expm1"},
                                                         {"isnan", "isnan"},
                                                         {"isinf", "isinf"},
                                                         {"isfinite", "isfinite"},
                                                         {"floor", "floor"},
                                                         {"ceil", "ceil"},
                                                         {"trunc", "trunc"},
                                                         {"rint", "round"},
                                                         {"sign", "sign"}};
  return ops;
}

py::type_error numpy_refusal(const std::string& what, const std::string& why) {
  return py::type_error(fmt::format("{} {}; use tinyformer's ops on the tensor (tf.exp, tf.sqrt, x ** p, tf.where, "
                                    "...), or call NumPy on t.detach().numpy() to work on the values without a "
                                    "gradient",
                                    what, why));
}

bool is_tensor(const py::handle& x) { return py::isinstance<Tensor>(x); }

// Does any tensor among the arguments (nested in lists and tuples) require a gradient?
bool any_requires_grad(const py::handle& x) {
  if (is_tensor(x)) return visit(x.cast<const Tensor&>(), [](const auto& v) { return v.requires_grad(); });
  if (py::isinstance<py::list>(x) || py::isinstance<py::tuple>(x))
    for (const py::handle item : x)
      if (any_requires_grad(item)) return true;
  if (py::isinstance<py::dict>(x))
    for (const auto& item : py::reinterpret_borrow<py::dict>(x))
      if (any_requires_grad(item.second)) return true;
  return false;
}

// The arguments with every tensor replaced by its values as a NumPy array.
py::object as_numpy_values(const py::handle& x) {
  if (is_tensor(x)) return py::module_::import("numpy").attr("asarray")(x);
  if (py::isinstance<py::list>(x) || py::isinstance<py::tuple>(x)) {
    py::list out;
    for (const py::handle item : x) out.append(as_numpy_values(item));
    return py::isinstance<py::tuple>(x) ? py::object(py::tuple(out)) : py::object(out);
  }
  if (py::isinstance<py::dict>(x)) {
    py::dict out;
    for (const auto& item : py::reinterpret_borrow<py::dict>(x)) out[item.first] = as_numpy_values(item.second);
    return out;
  }
  return py::reinterpret_borrow<py::object>(x);
}

py::object array_ufunc(const py::object& ufunc, const std::string& method, const py::args& inputs,
                       const py::kwargs& kwargs) {
  const std::string name = py::str(ufunc.attr("__name__"));
  const std::string what = "numpy." + name + (method == "__call__" ? "" : "." + method);
  if (!kwargs.empty())
    throw numpy_refusal(what + " with " + std::string(py::str(py::list(kwargs.attr("keys")()))),
                        "cannot keep a gradient (out=, where= and dtype= write or convert NumPy arrays)");
  if (method == "reduce" && (name == "add" || name == "maximum" || name == "minimum") && inputs.size() == 1) {
    const char* op = name == "add" ? "sum" : name == "maximum" ? "max" : "min";
    py::object out = g_core.attr(op)(inputs[0], 0);  // ufunc.reduce reduces axis 0
    return name == "add" ? out : py::object(out.attr("values"));
  }
  const auto& ops = ufunc_ops();
  const auto it = ops.find(name);
  if (method != "__call__" || it == ops.end())
    throw numpy_refusal(what + " on a tinyformer tensor",
                        "has no tinyformer op, so its result would drop the gradient");
  return g_core.attr(it->second.c_str())(*inputs);
}

// NumPy's axis / keepdims / ddof as tinyformer's dim / keepdim / correction.
py::object numpy_reduction(const std::string& name, const py::tuple& args, const py::dict& kwargs) {
  py::dict kw;
  for (const auto& item : kwargs) {
    const std::string key = py::str(item.first);
    if (key == "axis")
      kw["dim"] = item.second;
    else if (key == "keepdims")
      kw["keepdim"] = item.second;
    else if (key == "ddof")
      kw["correction"] = item.second;
    else if (!item.second.is_none())
      throw numpy_refusal(fmt::format("numpy.{} with {}=", name, key), "cannot keep a gradient");
  }
  if ((name == "var" || name == "std") && !kw.contains("correction")) kw["correction"] = 0;  // NumPy's default
  py::list pos;
  for (std::size_t i = 0; i < args.size() && i < 2; ++i) pos.append(args[i]);  // a, axis
  if (args.size() > 2)
    throw numpy_refusal("numpy." + name + " with more than two positional arguments", "is not mapped");
  const bool values_only = name == "max" || name == "min" || name == "amax" || name == "amin";
  const std::string op = name == "amax" ? "max" : name == "amin" ? "min" : name;
  py::object out = g_core.attr(op.c_str())(*pos, **kw);
  const bool along_axis = pos.size() > 1 || (kw.contains("dim") && !kw["dim"].is_none());
  return values_only && along_axis ? py::object(out.attr("values")) : out;
}

// The tensors of a sequence for concatenate / stack: NumPy values among them become tensors like the first tensor.
py::list tensors_of(const py::handle& seq) {
  py::list out;
  Tensor like;  // the first tensor of the sequence (float32 when there is none)
  for (const py::handle x : seq)
    if (is_tensor(x)) {
      like = x.cast<const Tensor&>();
      break;
    }
  for (const py::handle x : seq) {
    std::optional<Tensor> t = operand(x, like);
    if (!t)
      throw numpy_refusal("numpy.concatenate / stack of a " + std::string(py::str(py::type::of(x))), "is not mapped");
    out.append(py::cast(*t));
  }
  return out;
}

py::object mapped_function(const std::string& name, const py::tuple& args, const py::dict& kwargs) {
  static const char* reductions[] = {"sum", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin"};
  for (const char* r : reductions)
    if (name == r) return numpy_reduction(name, args, kwargs);
  auto arg = [&](std::size_t i, const char* key) -> py::object {
    if (i < args.size()) return args[i];
    if (kwargs.contains(key)) return kwargs[key];
    return py::none();
  };
  if (name == "concatenate" || name == "stack")
    return g_core.attr(name == "stack" ? "stack" : "cat")(tensors_of(arg(0, "arrays")),
                                                          arg(1, "axis").is_none() ? py::int_(0) : arg(1, "axis"));
  if (name == "transpose") {
    const py::object axes = arg(1, "axes");
    return axes.is_none() ? arg(0, "a").attr("T") : g_core.attr("permute")(arg(0, "a"), axes);
  }
  if (name == "reshape") {
    const py::object shape = arg(1, "newshape");
    return g_core.attr("reshape")(arg(0, "a"), PyIndex_Check(shape.ptr()) ? py::object(py::make_tuple(shape)) : shape);
  }
  if (name == "squeeze") return g_core.attr("squeeze")(arg(0, "a"), arg(1, "axis"));
  if (name == "expand_dims") return g_core.attr("unsqueeze")(arg(0, "a"), arg(1, "axis"));
  if (name == "where" && args.size() == 3) return g_core.attr("where")(args[0], args[1], args[2]);
  if (name == "dot") return g_core.attr("matmul")(arg(0, "a"), arg(1, "b"));
  if (name == "shape") return arg(0, "a").attr("shape");
  if (name == "ndim") return arg(0, "a").attr("ndim");
  if (name == "size") return arg(0, "a").attr("numel")();
  return py::object();
}

py::object array_function(const py::object& func, const py::tuple& args, const py::dict& kwargs) {
  const std::string name = py::str(func.attr("__name__"));
  const std::string module = py::str(func.attr("__module__"));
  if (module == "numpy") {
    py::object out = mapped_function(name, args, kwargs);
    if (out) return out;
  }
  if (any_requires_grad(args) || any_requires_grad(kwargs))
    throw numpy_refusal(module + "." + name + " of a tensor that requires a gradient",
                        "has no tinyformer op, so its result would drop the gradient");
  return func(*as_numpy_values(args), **as_numpy_values(kwargs));
}

}  // namespace

void bind_numpy(py::module_& m, py::class_<Tensor>& t) {
  g_core = m;
  t.def(
      "__array_ufunc__",
      [](const py::object&, const py::object& ufunc, const std::string& method, const py::args& inputs,
         const py::kwargs& kwargs) { return array_ufunc(ufunc, method, inputs, kwargs); },
      "NumPy's ufuncs on tensors run tinyformer's ops (the gradient is kept) or raise TypeError");
  t.def(
      "__array_function__",
      [](const py::object&, const py::object& func, const py::object&, const py::tuple& args, const py::dict& kwargs) {
        return array_function(func, args, kwargs);
      },
      "NumPy's functions on tensors run tinyformer's ops, or NumPy on the values when no gradient could be lost");
}

}  // namespace tf::python
