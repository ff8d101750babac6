// Changing a tensor's own values, as torch's in-place ops: x[...] = v, x += y, x.add_(y), x.zero_(), x.copy_(y),
// x.masked_fill_(m, v), x.normal_(), x.data, and grad = None. The values change in the tensor's node, so every
// reference to the tensor sees them (a parameter updated by hand: `with tf.no_grad(): p -= lr * p.grad`).
//
// In grad mode, an op's result that requires a gradient changes by becoming the changed result: its Python object
// takes the new node, so every reference sees the change and the graph keeps the old node for the ops that read it
// (torch records in-place ops on a non-leaf likewise). A leaf that requires a gradient is refused, as by torch,
// except through x.data or x.detach() (the library's Var::detach(), the same values outside autograd). An operand
// that requires a gradient (c.add_(w), c += w, c.scatter_add_(0, i, w)) makes a constant c the op's recorded result,
// as torch's c joins the graph; writing one into x[...] is refused (no differentiable scatter by subscript here). A
// change in place bumps the node's version (Var::mutable_value), so a backward() through an op that read the old values
// is refused, as by torch.
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/factory.hpp"

namespace tf::python {

namespace {

bool requires_grad(const Tensor& x) {
  return visit(x, [](const auto& v) { return v.requires_grad(); });
}

void check_writable(const Tensor& x, const char* op) {
  if (grad_enabled() && requires_grad(x))
    throw std::runtime_error(fmt::format(
        "{}: this tensor requires a gradient and ops are being recorded, so it is not changed in place; do it under "
        "tf.no_grad() (an update by hand, an initialisation), on x.data, or make a new tensor (x = x.masked_fill(...))",
        op));
}

// Whether `value` is a tensor that requires a gradient while ops are recorded.
bool grad_value(const py::handle& value) {
  py::detail::make_caster<Tensor> caster;
  return grad_enabled() && caster.load(value, false) && requires_grad(py::detail::cast_op<const Tensor&>(caster));
}

// A value that requires a gradient is not written in place while ops are recorded: its gradient would be dropped.
void check_value(const py::handle& value, const char* op) {
  if (grad_value(value))
    throw std::runtime_error(fmt::format(
        "{}: the value requires a gradient, which writing it in place would drop; build the result out of place "
        "(tf.where, tf.cat, tf.stack), or write under tf.no_grad()",
        op));
}

Shape dims_of(const Tensor& x) {
  return visit(x, [](const auto& v) { return v.shape(); });
}

// value converted to x's dtype: a float value does not go into an int64 or bool tensor, nor a number into a bool
// one (torch's rule for an in-place result); float64 into float32 rounds, as torch.
Tensor fitting(const Tensor& x, const Tensor& value, const char* op) {
  const bool fits = promote(x.kind, value.kind) == x.kind || (x.is_floating() && value.is_floating());
  if (!fits)
    throw std::invalid_argument(
        fmt::format("{}: a {} value does not go into this {} tensor in place", op, value.dtype(), x.dtype()));
  return converted(value, x.kind);
}

// x's values at the flat `positions` (all of them, in order, when empty) := value's, broadcast to positions' shape.
void write_at(const Tensor& x, const Tensor& value, const Array<std::int64_t>* positions, const char* op) {
  const Tensor v = fitting(x, value, op);
  visit(x, [&](auto var) {
    using V = decltype(var);
    using S = ScalarOfVar<V>;
    Array<S>& dst = var.mutable_value();
    const Shape target = positions ? to_shape(positions->shape()) : to_shape(dst.shape());
    const Array<S>& src = std::get<V>(v.var).value();
    Array<S> values;
    try {
      values = xt::broadcast(src, target);
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format("{}: a value of shape {} does not broadcast to {}", op,
                                              shape_str(to_shape(src.shape())), shape_str(target)));
    }
    if (!positions) {
      std::memcpy(dst.data(), values.data(), values.size() * sizeof(S));
    } else {
      for (std::size_t i = 0; i < positions->size(); ++i)
        dst.data()[static_cast<std::size_t>(positions->data()[i])] = values.data()[i];
    }
    if (x.grad_of) {  // p.grad changed: p's gradient is it
      V owner = std::get<V>(x.grad_of->var);
      owner.mutable_grad() = dst;
    }
  });
}

Tensor tensor_value(const py::handle& value, const Tensor& like, const char* op) {
  const std::optional<Tensor> v = operand(value, like);
  if (!v) throw py::type_error(fmt::format("{}: the value must be a tensor, a number or a NumPy value", op));
  return *v;
}

// Whether x is an op's result recorded for backward: changed "in place" by becoming the result of the change (its
// Python object takes the new node, so every reference sees it and the graph keeps the old one for earlier uses), as
// torch's in-place ops on a non-leaf. A leaf that requires a gradient is refused (check_writable), as by torch.
bool recorded_result(const Tensor& x, const char* op) {
  if (!grad_enabled() || !requires_grad(x)) return false;
  if (visit(x, [](const auto& v) { return v.is_leaf(); })) check_writable(x, op);
  return true;
}

// x becomes `result` (same dtype): the recorded result of an in-place op on an op's result.
void rebind(Tensor& x, const Tensor& result, const char* op) {
  if (result.kind != x.kind && requires_grad(result))
    throw std::invalid_argument(fmt::format("{}: the result is {} and the tensor {}; a dtype change is not "
                                            "differentiable here (the graph holds one dtype)",
                                            op, result.dtype(), x.dtype()));
  x.var = converted(result, x.kind).var;
}

// x[key] = value on an op's result in grad mode: x becomes where(written, value, x), the gradient passing to x's
// other entries. A value that requires a gradient is refused (no differentiable scatter here).
void set_recorded(Tensor& x, const std::vector<TensorIndex>& entries, const py::handle& value, const char* op) {
  check_value(value, op);
  const Shape shape = dims_of(x);
  const Array<std::int64_t> positions = index_positions(shape, entries);
  Array<double> written = xt::zeros<double>(shape), values = xt::zeros<double>(shape);
  const Array<double> v =
      xt::broadcast(to_array<double>(to_numpy(fitting(x, tensor_value(value, x, op), op))), positions.shape());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    written.data()[positions.data()[i]] = 1;
    values.data()[positions.data()[i]] = v.data()[i];
  }
  const py::object where = py::module_::import("tinyformer._core").attr("where");
  rebind(x, where(from_array(written, DType::boolean), from_array(values, x.kind), x).cast<Tensor>(), op);
}

// value (broadcast) in every entry of x, as a new tensor of x's shape: where(true, value, x), so that a recorded x
// passes no gradient back and a value that requires one gets it.
Tensor everywhere(const Tensor& x, const py::handle& value, const char* op) {
  const Array<double> all = xt::ones<double>(dims_of(x));
  const py::object where = py::module_::import("tinyformer._core").attr("where");
  return where(from_array(all, DType::boolean), tensor_value(value, x, op), x).cast<Tensor>();
}

// x op= y: in place (the values change in x's node, seen by the library's modules that hold it), or, for an op's
// result x in grad mode or a value that requires a gradient, x becomes x op y with its graph (as torch records it).
py::object augmented(const py::object& self, const py::object& other, const char* dunder, const char* op) {
  Tensor& x = self.cast<Tensor&>();
  const bool recorded = recorded_result(x, op);
  py::object result = self.attr(dunder)(other);
  if (result.is(py::reinterpret_borrow<py::object>(Py_NotImplemented))) return result;
  const Tensor& r = result.cast<const Tensor&>();
  if (recorded || grad_value(other)) {
    fitting(x, r, op);  // the dtype rule: refused with its message
    rebind(x, r, op);
  } else {
    write_at(x, r, nullptr, op);
  }
  return self;
}

// x.method_(args): x's values := what `compute` gives; for an op's result x in grad mode, x becomes it (recorded).
template <class F>
py::object in_place(const py::object& self, const char* op, std::initializer_list<py::handle> args, F compute) {
  Tensor& x = self.cast<Tensor&>();
  if (recorded_result(x, op)) {
    rebind(x, compute(x), op);
    return self;
  }
  check_writable(x, op);
  // an operand that requires a gradient: x becomes the op's recorded result (torch's constant joins the graph)
  if (std::any_of(args.begin(), args.end(), [](const py::handle& a) { return grad_value(a); })) {
    rebind(x, compute(x), op);
    return self;
  }
  Tensor value;
  {
    NoGradGuard guard;
    value = compute(x);
  }
  write_at(x, value, nullptr, op);
  return self;
}

void bind_augmented_operators(py::class_<Tensor>& t) {
  const std::pair<const char*, const char*> ops[] = {
      {"__iadd__", "__add__"},         {"__isub__", "__sub__"},           {"__imul__", "__mul__"},
      {"__itruediv__", "__truediv__"}, {"__ifloordiv__", "__floordiv__"}, {"__imod__", "__mod__"},
      {"__ipow__", "__pow__"}};
  for (const auto& [inplace, plain] : ops)
    t.def(
        inplace,
        [plain = plain, inplace = inplace](const py::object& self, const py::object& other) {
          return augmented(self, other, plain, inplace);
        },
        py::is_operator());
}

void bind_in_place_methods(py::class_<Tensor>& t) {
  const std::pair<const char*, const char*> binary[] = {
      {"add_", "__add__"}, {"sub_", "__sub__"}, {"mul_", "__mul__"}, {"div_", "__truediv__"}};
  // self (op) other as the operator computes it; an operand it does not take (a list, a string, None) is refused
  const auto operated = [](const py::object& self, const char* plain, const py::object& other, const char* name) {
    const py::object out = self.attr(plain)(other);
    if (out.is(py::reinterpret_borrow<py::object>(Py_NotImplemented)))
      throw py::type_error(fmt::format("{}(): the operand must be a tensor, a number or a NumPy value, got {}", name,
                                       Py_TYPE(other.ptr())->tp_name));
    return out.cast<Tensor>();
  };
  for (const auto& [name, plain] : binary)
    t.def(
        name,
        [name = name, plain = plain, operated](const py::object& self, const py::object& other, double alpha) {
          return in_place(self, name, {other}, [&](const Tensor&) {
            return operated(self, plain, alpha == 1.0 ? other : other * py::float_(alpha), name);
          });
        },
        py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0);
  t.def(
      "pow_",
      [operated](const py::object& self, const py::object& exponent) {
        return in_place(self, "pow_", {exponent},
                        [&](const Tensor&) { return operated(self, "__pow__", exponent, "pow_"); });
      },
      py::arg("exponent"));
  for (const char* name :
       {"exp",   "log",  "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "neg",   "abs",   "floor", "ceil",
        "trunc", "sign", "frac", "round", "sin",  "cos",     "tan",  "log1p", "expm1", "erf"})
    t.def((std::string(name) + "_").c_str(), [name](const py::object& self) {
      const std::string op = std::string(name) + "_";
      return in_place(self, op.c_str(), {}, [&](const Tensor&) { return self.attr(name)().cast<Tensor>(); });
    });
  t.def(
      "scatter_add_",
      [](const py::object& self, long dim, const py::object& index, const py::object& src) {
        return in_place(self, "scatter_add_", {src},
                        [&](const Tensor&) { return self.attr("scatter_add")(dim, index, src).cast<Tensor>(); });
      },
      py::arg("dim"), py::arg("index"), py::arg("src"));
  t.def("zero_", [](const py::object& self) {
    return in_place(self, "zero_", {}, [](const Tensor& x) { return everywhere(x, py::int_(0), "zero_"); });
  });
  t.def(
      "fill_",
      [](const py::object& self, const py::object& value) {
        return in_place(self, "fill_", {value}, [&](const Tensor& x) { return everywhere(x, value, "fill_"); });
      },
      py::arg("value"));
  t.def(
      "copy_",
      [](const py::object& self, const py::object& src) {
        return in_place(self, "copy_", {src}, [&](const Tensor& x) { return everywhere(x, src, "copy_"); });
      },
      py::arg("src"));
  t.def(
      "masked_fill_",
      [](const py::object& self, const py::object& mask, const py::object& value) {
        return in_place(self, "masked_fill_", {value},
                        [&](const Tensor&) { return self.attr("masked_fill")(mask, value).cast<Tensor>(); });
      },
      py::arg("mask"), py::arg("value"));
  t.def(
      "clamp_",
      [](const py::object& self, const py::object& lo, const py::object& hi) {
        return in_place(self, "clamp_", {}, [&](const Tensor&) { return self.attr("clamp")(lo, hi).cast<Tensor>(); });
      },
      py::arg("min") = py::none(), py::arg("max") = py::none());
}

// x.normal_(mean, std) and x.uniform_(a, b): draws from `generator` or the default one (tf.manual_seed), as torch's
// initialisers (nn.init) use them.
void bind_random_fills(py::class_<Tensor>& t) {
  t.def(
      "normal_",
      [](const py::object& self, double mean, double std, Rng* generator) {
        return in_place(self, "normal_", {}, [&](const Tensor& x) {
          const Array<double> z = randn<double>(dims_of(x), generator_or_default(generator));
          return from_array(z * std + mean, DType::float64);
        });
      },
      py::arg("mean") = 0.0, py::arg("std") = 1.0, py::kw_only(), py::arg("generator") = nullptr);
  t.def(
      "uniform_",
      [](const py::object& self, double a, double b, Rng* generator) {
        return in_place(self, "uniform_", {}, [&](const Tensor& x) {
          const Array<double> u = rand<double>(dims_of(x), generator_or_default(generator));
          return from_array(u * (b - a) + a, DType::float64);
        });
      },
      py::arg("a") = 0.0, py::arg("b") = 1.0, py::kw_only(), py::arg("generator") = nullptr);
}

}  // namespace

void bind_in_place(py::module_& /*m*/, py::class_<Tensor>& t) {
  bind_augmented_operators(t);
  bind_in_place_methods(t);
  bind_random_fills(t);
  t.def(
      "__setitem__",
      [](Tensor& x, const py::handle& key, const py::handle& value) {
        const char* op = "x[...] = value";
        const std::vector<TensorIndex> entries = subscript(key);
        if (recorded_result(x, op)) return set_recorded(x, entries, value, op);
        check_writable(x, op);
        check_value(value, op);
        const Array<std::int64_t> positions = index_positions(dims_of(x), entries);
        write_at(x, tensor_value(value, x, op), &positions, op);
      },
      "x[key] = value (NumPy's indexing; the value broadcast), in place: under tf.no_grad() or on a tensor that "
      "needs no gradient");
  t.def_property(
      "data", &detached,
      [](const Tensor& x, const py::object& value) {
        write_at(detached(x), tensor_value(value, x, "data"), nullptr, "data");
      },
      "The same values outside autograd, not copied (as x.detach()): ops on it record nothing, and a change in place "
      "(x.data.mul_(0.5), x.data += d) changes x, as torch's .data");
}

}  // namespace tf::python
