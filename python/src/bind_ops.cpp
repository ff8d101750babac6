// The operators (+ - * / ** @, comparisons, & | ^ ~) and the elementwise functions (exp ... sigmoid, where,
// masked_fill, maximum), each a function of the module and a method: each calls the library's op (ops/ops.hpp) on
// the operands after torch's dtype promotion (tensor.hpp). An operand may be a tensor, a Python number or a NumPy
// value; anything else makes the operator return NotImplemented. The GIL is released while an op runs.
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "tensor.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::python {

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// bool operands of arithmetic count as int64 (True + True is 2).
Tensor numeric(const Tensor& t) { return t.kind == DType::boolean ? converted(t, DType::int64) : t; }

// A constant 0/1 result of a comparison or logical op as a bool tensor.
Tensor as_bool(Tensor t) {
  if (t.is_double()) return Tensor(std::get<Var<double>>(t.var), DType::boolean);
  return Tensor(Var<double>(Array<double>(xt::cast<double>(std::get<Var<float>>(t.var).value()))), DType::boolean);
}

// The library ops on two tensors, promoted.
Tensor add_t(const Tensor& a, const Tensor& b) {
  return visit2(numeric(a), numeric(b), [](const auto& x, const auto& y) { return add(x, y); });
}
Tensor sub_t(const Tensor& a, const Tensor& b) {
  return visit2(numeric(a), numeric(b), [](const auto& x, const auto& y) { return sub(x, y); });
}
Tensor mul_t(const Tensor& a, const Tensor& b) {
  return visit2(numeric(a), numeric(b), [](const auto& x, const auto& y) { return mul(x, y); });
}
Tensor div_t(const Tensor& a, const Tensor& b) {  // true division: integers give float32
  const DType kind = promote(a.kind, b.kind);
  const DType to = kind == DType::int64 || kind == DType::boolean ? DType::float32 : kind;
  return visit2(operand_as(a, to), operand_as(b, to), [](const auto& x, const auto& y) { return div(x, y); });
}
// % and //: integers stay integers (a zero divisor refused, as torch), floats as the library computes them
template <bool Remainder>
Tensor modular_t(const Tensor& a, const Tensor& b) {
  const Tensor x = numeric(a), y = numeric(b);
  const DType kind = promote(x.kind, y.kind);
  if (kind == DType::int64 && visit(y, [](const auto& v) { return xt::any(xt::equal(v.value(), 0)); }))
    throw std::invalid_argument(fmt::format("{}: integer division by zero", Remainder ? "remainder" : "floor_divide"));
  return visit2(x, y, [](const auto& p, const auto& q) { return Remainder ? remainder(p, q) : floor_divide(p, q); });
}

Tensor matmul_t(const Tensor& a, const Tensor& b) {
  return visit2(numeric(a), numeric(b), [](const auto& x, const auto& y) { return matmul(x, y); });
}
Tensor pow_t(const Tensor& a, const Tensor& b) {
  const Tensor x = numeric(a), y = numeric(b);
  const bool constant_exponent = visit(y, [](const auto& v) { return v.dim() == 0 && !v.requires_grad(); });
  if (x.is_floating() && constant_exponent) {  // x ** 2, x ** 0.5: the op with a constant exponent
    const double p = visit(y, [](const auto& v) { return static_cast<double>(v.item()); });
    return visit(x, [p](const auto& v) { return Tensor(pow(v, static_cast<ScalarOfVar<decltype(v)>>(p))); });
  }
  if (!x.is_floating() && !y.is_floating()) {
    const auto& e = std::get<Var<double>>(y.var).value();
    for (const double v : e)
      if (v < 0) throw std::invalid_argument("integers to negative integer powers are not allowed (as torch)");
  }
  return visit2(x, y, [](const auto& p, const auto& q) { return pow(p, q); });
}

template <class F>
Tensor compared(const Tensor& a, const Tensor& b, F f) {
  return as_bool(visit2(a, b, f));
}

// & | ^ on bool tensors; other dtypes would be bitwise in torch, which tinyformer does not have.
template <class F>
Tensor logical(const Tensor& a, const Tensor& b, const char* op, F f) {
  if (a.kind != DType::boolean || b.kind != DType::boolean)
    throw py::type_error(
        fmt::format("{} is defined on bool tensors (masks) here, got {} and {}", op, a.dtype(), b.dtype()));
  return as_bool(visit2(a, b, f));
}

// x (op) other as a Python operator: other converted by operand(); NotImplemented when it is not a value.
template <class F>
auto binary_operator(F f, bool reflected) {
  return [f, reflected](const Tensor& self, const py::handle& other) -> py::object {
    const std::optional<Tensor> o = operand(other, self);
    if (!o) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    Tensor out;
    {
      py::gil_scoped_release release;
      out = reflected ? f(*o, self) : f(self, *o);
    }
    return py::cast(std::move(out));
  };
}

// The operands of a module function or method (tf.add(x, 2), np.ones(3) @ x through NumPy): tensors, numbers or NumPy
// values, as for the operators; anything else is refused.
std::pair<Tensor, Tensor> operands_of(const py::handle& a, const py::handle& b, const char* name) {
  std::optional<Tensor> x;
  py::detail::make_caster<Tensor> caster;
  if (caster.load(a, false)) x = py::detail::cast_op<const Tensor&>(caster);
  std::optional<Tensor> y = x ? operand(b, *x) : std::nullopt;
  if (!x && (y = operand(b, Tensor()))) x = operand(a, *y);
  if (!x || !y) throw py::type_error(fmt::format("{}(): the operands must be tensors, numbers or NumPy values", name));
  return {*x, *y};
}

template <class F>
auto binary_function(F f, const char* name) {
  return [f, name](const py::handle& a, const py::handle& b) {
    const auto [x, y] = operands_of(a, b, name);
    py::gil_scoped_release release;
    return f(x, y);
  };
}

void bind_arithmetic_operators(py::class_<Tensor>& t) {
  const std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)> ops[] = {
      {"add", &add_t},       {"sub", &sub_t}, {"mul", &mul_t},           {"truediv", &div_t},
      {"matmul", &matmul_t}, {"pow", &pow_t}, {"mod", &modular_t<true>}, {"floordiv", &modular_t<false>}};
  for (const auto& [name, f] : ops) {
    t.def(fmt::format("__{}__", name).c_str(), binary_operator(f, false), py::is_operator());
    t.def(fmt::format("__r{}__", name).c_str(), binary_operator(f, true), py::is_operator());
  }
  t.def(
       "__neg__", [](const Tensor& a) { return keeping_dtype(numeric(a), [](const auto& v) { return neg(v); }); },
       Release())
      .def("__pos__", [](const py::object& self) { return self; })
      .def(
          "__abs__", [](const Tensor& a) { return keeping_dtype(numeric(a), [](const auto& v) { return abs(v); }); },
          Release());
}

// clang-format off
Tensor eq_t(const Tensor& a, const Tensor& b) { return compared(a, b, [](const auto& x, const auto& y) { return eq(x, y); }); }
Tensor ne_t(const Tensor& a, const Tensor& b) { return compared(a, b, [](const auto& x, const auto& y) { return ne(x, y); }); }
Tensor lt_t(const Tensor& a, const Tensor& b) { return compared(a, b, [](const auto& x, const auto& y) { return lt(x, y); }); }
Tensor le_t(const Tensor& a, const Tensor& b) { return compared(a, b, [](const auto& x, const auto& y) { return le(x, y); }); }
Tensor gt_t(const Tensor& a, const Tensor& b) { return compared(a, b, [](const auto& x, const auto& y) { return gt(x, y); }); }
Tensor ge_t(const Tensor& a, const Tensor& b) { return compared(a, b, [](const auto& x, const auto& y) { return ge(x, y); }); }
Tensor and_t(const Tensor& a, const Tensor& b) { return logical(a, b, "&", [](const auto& x, const auto& y) { return logical_and(x, y); }); }
Tensor or_t(const Tensor& a, const Tensor& b) { return logical(a, b, "|", [](const auto& x, const auto& y) { return logical_or(x, y); }); }
Tensor xor_t(const Tensor& a, const Tensor& b) { return logical(a, b, "^", [](const auto& x, const auto& y) { return logical_xor(x, y); }); }
// torch.clamp: a bound of None is absent; bounds convert to input's dtype (an int tensor keeps int bounds).
Tensor clamp_t(const Tensor& a, const py::object& lo, const py::object& hi) {
  const std::optional<double> low = lo.is_none() ? std::nullopt : std::optional<double>(py::cast<double>(lo));
  const std::optional<double> high = hi.is_none() ? std::nullopt : std::optional<double>(py::cast<double>(hi));
  py::gil_scoped_release release;
  return keeping_dtype(numeric(a), [&](const auto& v) {
    using S = ScalarOfVar<std::decay_t<decltype(v)>>;
    const auto as_s = [](const std::optional<double>& b) { return b ? std::optional<S>(static_cast<S>(*b)) : std::nullopt; };
    return clamp(v, as_s(low), as_s(high));
  });
}

Tensor isclose_t(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return as_bool(visit2(numeric(a), numeric(b), [&](const auto& x, const auto& y) { return isclose(x, y, rtol, atol, equal_nan); }));
}

Tensor maximum_t(const Tensor& a, const Tensor& b) { return visit2(numeric(a), numeric(b), [](const auto& x, const auto& y) { return maximum(x, y); }); }
Tensor minimum_t(const Tensor& a, const Tensor& b) { return visit2(numeric(a), numeric(b), [](const auto& x, const auto& y) { return minimum(x, y); }); }
Tensor not_t(const Tensor& a) { return as_bool(keeping_dtype(a, [](const auto& v) { return logical_not(v); })); }
// clang-format on

using BinaryOp = Tensor (*)(const Tensor&, const Tensor&);

void bind_comparison_operators(py::class_<Tensor>& t) {
  const std::pair<const char*, BinaryOp> ops[] = {{"eq", &eq_t}, {"ne", &ne_t}, {"lt", &lt_t},
                                                  {"le", &le_t}, {"gt", &gt_t}, {"ge", &ge_t}};
  for (const auto& [name, f] : ops)
    t.def(fmt::format("__{}__", name).c_str(), binary_operator(f, false), py::is_operator());
  const std::pair<const char*, BinaryOp> logic[] = {{"and", &and_t}, {"or", &or_t}, {"xor", &xor_t}};
  for (const auto& [name, f] : logic) {
    t.def(fmt::format("__{}__", name).c_str(), binary_operator(f, false), py::is_operator());
    t.def(fmt::format("__r{}__", name).c_str(), binary_operator(f, true), py::is_operator());
  }
  t.def("__invert__", [](const Tensor& a) {
    if (a.kind != DType::boolean)
      throw py::type_error(fmt::format("~ is defined on bool tensors (masks) here, got {}", a.dtype()));
    return not_t(a);
  });
}

// f applied over axis `dim` of `a` by moving that axis last (softmax and log_softmax work on the last axis).
template <class S, class F>
Var<S> on_axis(const Var<S>& a, long dim, F f) {
  const std::size_t axis = normalize_axis(dim, a.dim(), "softmax");
  const long last = static_cast<long>(a.dim()) - 1;
  if (static_cast<long>(axis) == last) return f(a);
  return transpose(f(transpose(a, static_cast<long>(axis), last)), static_cast<long>(axis), last);
}

// cond ? a : b with torch's promotion of a and b (numbers allowed); cond counts as true where nonzero.
Tensor where_t(const Tensor& cond, const py::handle& a, const py::handle& b) {
  std::optional<Tensor> x, y;
  py::detail::make_caster<Tensor> caster;
  if (caster.load(a, false)) x = py::detail::cast_op<const Tensor&>(caster);
  y = operand(b, x ? *x : cond);
  if (!x && y) x = operand(a, *y);
  if (!x || !y) throw py::type_error("where(condition, input, other): input and other must be tensors or numbers");
  const DType kind = promoted_kind(*x, *y);
  const Tensor c = converted(converted(cond, DType::boolean), kind);
  py::gil_scoped_release release;
  return visit2(*x, *y, [&](const auto& p, const auto& q) {
    using S = ScalarOfVar<decltype(p)>;
    return where(std::get<Var<S>>(c.var), p, q);
  });
}

Tensor masked_fill_t(const Tensor& input, const Tensor& mask, const py::handle& value) {
  const Tensor m = converted(converted(mask, DType::boolean), input.kind);
  double v = 0;
  py::detail::make_caster<Tensor> caster;
  if (caster.load(value, false))
    v = py::cast<double>(py::cast(py::detail::cast_op<const Tensor&>(caster)).attr("item")());
  else
    v = py::cast<double>(value);
  py::gil_scoped_release release;
  return keeping_dtype(input, [&](const auto& x) {
    using S = ScalarOfVar<decltype(x)>;
    return masked_fill(x, std::get<Var<S>>(m.var), static_cast<S>(v));
  });
}

// clang-format off
void bind_elementwise_functions(py::module_& m, py::class_<Tensor>& t) {
#define TF_FLOATING(name)                                                                                 \
  def_function_and_method(m, t, #name, [](const Tensor& a) {                                              \
    return on_floating(a, [](const auto& v) { return name(v); }); }, py::arg("input"), Release())
  TF_FLOATING(exp); TF_FLOATING(log); TF_FLOATING(tanh); TF_FLOATING(relu); TF_FLOATING(sqrt); TF_FLOATING(sigmoid);
  TF_FLOATING(sin); TF_FLOATING(cos); TF_FLOATING(tan); TF_FLOATING(log1p); TF_FLOATING(expm1); TF_FLOATING(erf);
#undef TF_FLOATING
#define TF_TEST(name)                                                                                     \
  def_function_and_method(m, t, #name, [](const Tensor& a) {                                              \
    return as_bool(on_floating(a, [](const auto& v) { return name(v); })); }, py::arg("input"), Release())
  TF_TEST(isnan); TF_TEST(isinf); TF_TEST(isfinite);
#undef TF_TEST
  def_function_and_method(m, t, "abs", [](const Tensor& a) {
    return keeping_dtype(numeric(a), [](const auto& v) { return abs(v); }); }, py::arg("input"), Release());
  // torch's steps keep an integer dtype (floor of int64 is int64); frac takes an int64 input as float32 (torch refuses)
#define TF_STEP(name)                                                                                     \
  def_function_and_method(m, t, #name, [](const Tensor& a) {                                              \
    return keeping_dtype(numeric(a), [](const auto& v) { return name(v); }); }, py::arg("input"), Release())
  TF_STEP(floor); TF_STEP(ceil); TF_STEP(trunc); TF_STEP(sign);
#undef TF_STEP
  def_function_and_method(m, t, "round", [](const Tensor& a, int decimals) {
    return keeping_dtype(numeric(a), [&](const auto& v) { return round(v, decimals); }); },
    py::arg("input"), py::kw_only(), py::arg("decimals") = 0, Release(),
    "Each value to the nearest whole number, halves to even (or to `decimals` places), as torch.round");
  def_function_and_method(m, t, "frac", [](const Tensor& a) {
    return on_floating(a, [](const auto& v) { return frac(v); }); }, py::arg("input"), Release());
  def_function_and_method(m, t, "neg", [](const Tensor& a) {
    return keeping_dtype(numeric(a), [](const auto& v) { return neg(v); }); }, py::arg("input"), Release());
  def_function_and_method(m, t, "clone", [](const Tensor& a) {
    return keeping_dtype(a, [](const auto& v) { return clone(v); }); }, py::arg("input"), Release(),
    "A copy whose gradient flows back to input (torch.clone)");
  def_function_and_method(m, t, "softmax", [](const Tensor& a, long dim) {
    return on_floating(a, [&](const auto& v) { return on_axis(v, dim, [](const auto& x) { return softmax(x); }); });
  }, py::arg("input"), py::arg("dim") = -1, Release());
  def_function_and_method(m, t, "log_softmax", [](const Tensor& a, long dim) {
    return on_floating(a, [&](const auto& v) { return on_axis(v, dim, [](const auto& x) { return log_softmax(x); }); });
  }, py::arg("input"), py::arg("dim") = -1, Release());
  m.def("scale", [](const Tensor& a, double f) {
    return on_floating(a, [&](const auto& v) { return scale(v, static_cast<ScalarOfVar<decltype(v)>>(f)); });
  }, py::arg("input"), py::arg("factor"), Release(), "input * factor, factor a constant");
  m.def("where", &where_t, py::arg("condition"), py::arg("input"), py::arg("other"),
        "input where condition is true (nonzero), else other; both broadcast and take gradients where chosen");
  def_function_and_method(m, t, "masked_fill", &masked_fill_t, py::arg("input"), py::arg("mask"), py::arg("value"),
                          "input with value where mask is true (the mask broadcasts to input's shape)");
  def_function_and_method(m, t, "rsqrt", [](const Tensor& a) {
    return on_floating(a, [](const auto& v) { return rsqrt(v); }); }, py::arg("input"), Release());
  for (const auto& [name, base] : {std::pair<const char*, double>{"log2", 2.0}, {"log10", 10.0}})
    def_function_and_method(m, t, name, [base = base](const Tensor& a) {
      return on_floating(a, [&](const auto& v) {
        return scale(log(v), static_cast<ScalarOfVar<decltype(v)>>(1.0 / std::log(base))); });
    }, py::arg("input"), Release(), "log(input) / log(base): the library's log, scaled");
  for (const char* name : {"clamp", "clip"})
    def_function_and_method(m, t, name, &clamp_t, py::arg("input"), py::arg("min") = py::none(),
                            py::arg("max") = py::none(),
                            "input held within [min, max] (either may be None); the gradient passes where min <= input "
                            "<= max (torch.clamp; clip is its other name)");
  def_function_and_method(m, t, "isclose", &isclose_t, py::arg("input"), py::arg("other"), py::arg("rtol") = 1e-5,
                          py::arg("atol") = 1e-8, py::arg("equal_nan") = false,
                          "True where |input - other| <= atol + rtol |other| (a bool tensor, as torch.isclose)");
  def_function_and_method(m, t, "equal", [](const Tensor& a, const Tensor& b) -> bool {
    const bool same_shape = visit(a, [](const auto& v) { return v.shape(); }) == visit(b, [](const auto& v) {
      return v.shape(); });
    return same_shape && xt::all(xt::equal(to_array<double>(to_numpy(a)), to_array<double>(to_numpy(b))));
  }, py::arg("input"), py::arg("other"), "True when both have one shape and the same values (torch.equal)");
  def_function_and_method(m, t, "allclose", [](const Tensor& a, const Tensor& b, double rtol, double atol,
                                               bool equal_nan) -> bool {
    const Tensor close = isclose_t(a, b, rtol, atol, equal_nan);
    return visit(close, [](const auto& v) { return xt::all(xt::not_equal(v.value(), 0)); });
  }, py::arg("input"), py::arg("other"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8, py::arg("equal_nan") = false,
  "Whether isclose holds everywhere (a Python bool, as torch.allclose)");
  def_function_and_method(m, t, "tril", [](const Tensor& a, long diagonal) {
    return keeping_dtype(a, [&](const auto& v) { return tril(v, diagonal); }); }, py::arg("input"),
    py::arg("diagonal") = 0, Release(), "input with 0 above the diagonal in the last two axes (torch.tril)");
  def_function_and_method(m, t, "triu", [](const Tensor& a, long diagonal) {
    return keeping_dtype(a, [&](const auto& v) { return triu(v, diagonal); }); }, py::arg("input"),
    py::arg("diagonal") = 0, Release(), "input with 0 below the diagonal in the last two axes (torch.triu)");
}
// clang-format on

}  // namespace

void bind_arithmetic(py::module_& m, py::class_<Tensor>& t) {
  bind_arithmetic_operators(t);
  bind_comparison_operators(t);
  def_function_and_method(m, t, "add", binary_function(&add_t, "add"), py::arg("input"), py::arg("other"));
  def_function_and_method(m, t, "sub", binary_function(&sub_t, "sub"), py::arg("input"), py::arg("other"));
  def_function_and_method(m, t, "mul", binary_function(&mul_t, "mul"), py::arg("input"), py::arg("other"));
  def_function_and_method(m, t, "div", binary_function(&div_t, "div"), py::arg("input"), py::arg("other"));
  def_function_and_method(m, t, "pow", binary_function(&pow_t, "pow"), py::arg("input"), py::arg("exponent"));
  def_function_and_method(m, t, "remainder", binary_function(&modular_t<true>, "remainder"), py::arg("input"),
                          py::arg("other"));
  def_function_and_method(m, t, "floor_divide", binary_function(&modular_t<false>, "floor_divide"), py::arg("input"),
                          py::arg("other"));
  def_function_and_method(
      m, t, "matmul",
      [](const py::handle& a, const py::handle& b, bool ta, bool tb) {
        const auto [p, q] = operands_of(a, b, "matmul");
        py::gil_scoped_release release;
        return visit2(numeric(p), numeric(q), [&](const auto& x, const auto& y) { return matmul(x, y, ta, tb); });
      },
      py::arg("input"), py::arg("other"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      "torch.matmul (1-D operands, broadcast batch dims); transpose_a / transpose_b read an operand transposed "
      "without a copy");
  def_function_and_method(
      m, t, "bmm",
      [](const Tensor& a, const Tensor& b) {
        const std::size_t ra = visit(a, [](const auto& v) { return v.dim(); });
        const std::size_t rb = visit(b, [](const auto& v) { return v.dim(); });
        if (ra != 3 || rb != 3)
          throw std::invalid_argument(fmt::format("bmm: both operands must be 3-D [b, n, m] and [b, m, p], got {}-D "
                                                  "and {}-D (matmul broadcasts any others)",
                                                  ra, rb));
        py::gil_scoped_release release;
        return matmul_t(a, b);
      },
      py::arg("input"), py::arg("mat2"), "torch.bmm: batched matrix products of two 3-D tensors");
  def_function_and_method(
      m, t, "outer",
      [](const Tensor& a, const Tensor& b) {
        return visit2(numeric(a), numeric(b), [](const auto& x, const auto& y) {
          if (x.dim() != 1 || y.dim() != 1)
            throw std::invalid_argument(
                fmt::format("outer: both operands must be 1-D, got {}-D and {}-D", x.dim(), y.dim()));
          return mul(reshape(x, {-1, 1}), reshape(y, {1, -1}));
        });
      },
      py::arg("input"), py::arg("vec2"), "torch.outer: [n] and [m] -> [n, m], a_i b_j");
  const std::pair<const char*, BinaryOp> functions[] = {
      {"maximum", &maximum_t}, {"minimum", &minimum_t}, {"eq", &eq_t},          {"ne", &ne_t},
      {"lt", &lt_t},           {"le", &le_t},           {"gt", &gt_t},          {"ge", &ge_t},
      {"logical_and", &and_t}, {"logical_or", &or_t},   {"logical_xor", &xor_t}};
  for (const auto& [name, f] : functions)
    def_function_and_method(m, t, name, binary_function(f, name), py::arg("input"), py::arg("other"));
  def_function_and_method(m, t, "logical_not", &not_t, py::arg("input"));
  m.def(
      "einsum",
      [](const std::string& equation, const py::args& args) {
        // torch.einsum(eq, a, b) and torch.einsum(eq, [a, b])
        const py::sequence given =
            args.size() == 1 && !py::isinstance<Tensor>(args[0]) ? py::sequence(args[0]) : py::sequence(args);
        std::vector<Tensor> operands;  // bools as 0 and 1: einsum sums their products
        for (const py::handle h : given) operands.push_back(numeric(py::cast<Tensor>(h)));
        return joined(operands, "einsum", [&](const auto& vars) { return einsum(equation, vars); });
      },
      py::arg("equation"),
      "torch.einsum over letters: einsum('bhqd,bhkd->bhqk', q, k), operands as arguments or one list; without '->' "
      "the labels used once, alphabetical");
  bind_elementwise_functions(m, t);
}

}  // namespace tf::python
