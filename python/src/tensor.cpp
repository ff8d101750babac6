// dtypes, promotion and the conversions of Python values to tensors (tensor.hpp).
#include "tensor.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

namespace tf::python {

namespace {

// Whole numbers a float64 holds exactly: int64 tensors keep their values in that range.
constexpr double kExactIntegers = 9007199254740992.0;  // 2^53

DType kind_of_numpy(const py::dtype& dt, bool python_floats_are_float32) {
  switch (dt.kind()) {
    case 'b':
      return DType::boolean;
    case 'i':
    case 'u':
      return DType::int64;
    case 'f':
      return dt.itemsize() == 8 && !python_floats_are_float32 ? DType::float64 : DType::float32;
    default:
      throw std::invalid_argument(fmt::format("tinyformer tensors hold numbers (float32, float64, int64 or bool), "
                                              "got values of dtype {}",
                                              std::string(py::str(py::handle(dt)))));
  }
}

void check_whole_range(const Array<double>& values) {
  for (const double v : values)
    if (!std::isfinite(v) || std::abs(v) > kExactIntegers)
      throw std::invalid_argument(fmt::format("an int64 tensor holds whole numbers up to 2^53 in magnitude exactly "
                                              "(its values are kept as float64); got {}",
                                              v));
}

// The Python object as an array, when it is a NumPy array or scalar (anything with a dtype that is not a Tensor).
std::optional<py::array> numpy_value(const py::handle& x) {
  if (py::isinstance<py::array>(x)) return py::reinterpret_borrow<py::array>(x);
  if (!py::hasattr(x, "dtype") || !py::hasattr(x, "shape")) return std::nullopt;
  return py::array::ensure(x);
}

Tensor scalar_tensor(double value, DType kind) {
  Array<double> a = Array<double>::from_shape({});
  a() = value;
  return from_array(std::move(a), kind);
}

}  // namespace

const char* dtype_name(DType d) {
  switch (d) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::int64:
      return "int64";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

DType dtype_of(const py::handle& dtype) {
  if (py::isinstance<py::str>(dtype)) {
    const std::string name = py::str(dtype);
    if (name == "float32" || name == "float") return DType::float32;
    if (name == "float64" || name == "double") return DType::float64;
    if (name == "int64" || name == "long") return DType::int64;
    if (name == "bool") return DType::boolean;
  }
  try {
    return kind_of_numpy(py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype)), false);
  } catch (const py::error_already_set&) {
  } catch (const std::invalid_argument&) {
  }
  throw std::invalid_argument(fmt::format("dtype {} is not one of tinyformer's: float32, float64, int64, bool (as "
                                          "tf.float32 ..., NumPy dtypes or Python's float, int and bool)",
                                          std::string(py::repr(dtype))));
}

Tensor from_array(Array<double> values, DType kind, bool requires_grad) {
  switch (kind) {
    case DType::float32:
      return Tensor(Var<float>(Array<float>(xt::cast<float>(values)), requires_grad));
    case DType::float64:
      return Tensor(Var<double>(std::move(values), requires_grad));
    default:
      if (requires_grad)
        throw std::invalid_argument(
            fmt::format("only float tensors can require a gradient, not {} ones (as torch)", dtype_name(kind)));
      return Tensor(Var<double>(std::move(values)), kind);
  }
}

Tensor converted(const Tensor& t, DType kind) {
  if (t.kind == kind) return t;
  Array<double> values = visit(t, [](const auto& v) { return Array<double>(xt::cast<double>(v.value())); });
  if (kind == DType::int64) {
    values = xt::trunc(values);
    check_whole_range(values);
  } else if (kind == DType::boolean) {
    values = xt::cast<double>(xt::not_equal(values, 0.0));
  }
  return from_array(std::move(values), kind);
}

Tensor floating(const Tensor& t) { return t.is_floating() ? t : converted(t, DType::float32); }

DType promote(DType a, DType b) {
  if (a == b) return a;
  const auto is_float = [](DType d) { return d == DType::float32 || d == DType::float64; };
  if (is_float(a) && is_float(b)) return DType::float64;
  if (is_float(a)) return a;
  if (is_float(b)) return b;
  return DType::int64;  // int64 with bool
}

Tensor operand_as(const Tensor& t, DType kind) {
  const bool grad = visit(t, [](const auto& v) { return v.requires_grad(); });
  if (t.kind != kind && t.is_floating() && grad)
    throw std::invalid_argument(fmt::format("the operands have different dtypes, {} and {}, and the {} one requires a "
                                            "gradient, which a conversion would drop (the graph holds one dtype); "
                                            "convert the tensor with .double() or .float() before it requires one",
                                            t.dtype(), dtype_name(kind), t.dtype()));
  return converted(t, kind);
}

std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b) {
  const DType k = promoted_kind(a, b);
  return {operand_as(a, k), operand_as(b, k)};
}

std::optional<Tensor> operand(const py::handle& x, const Tensor& like) {
  py::detail::make_caster<Tensor> caster;
  if (caster.load(x, false)) return py::detail::cast_op<const Tensor&>(caster);
  const DType float_kind = like.is_floating() ? like.kind : DType::float32;
  if (PyBool_Check(x.ptr())) return scalar_tensor(x.ptr() == Py_True ? 1.0 : 0.0, DType::boolean);
  if (PyLong_Check(x.ptr())) {
    const double v = py::cast<double>(x);
    return scalar_tensor(v, std::abs(v) <= kExactIntegers ? DType::int64 : float_kind);
  }
  if (PyFloat_Check(x.ptr())) return scalar_tensor(PyFloat_AsDouble(x.ptr()), float_kind);
  const std::optional<py::array> arr = numpy_value(x);
  if (!arr) return std::nullopt;
  DType kind;
  try {
    kind = kind_of_numpy(arr->dtype(), true);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  if (kind == DType::float32) kind = float_kind;  // a NumPy float takes the tensor's float dtype
  Array<double> values = to_array<double>(*arr);
  if (kind == DType::int64) check_whole_range(values);
  return from_array(std::move(values), kind);
}

Tensor make_tensor(const py::handle& data, const py::handle& dtype, bool requires_grad) {
  py::detail::make_caster<Tensor> caster;
  if (caster.load(data, false)) {
    const Tensor& t = py::detail::cast_op<const Tensor&>(caster);
    const DType kind = dtype.is_none() ? t.kind : dtype_of(dtype);
    Array<double> values = visit(t, [](const auto& v) { return Array<double>(xt::cast<double>(v.value())); });
    return make_tensor(to_numpy_copy(values), py::str(dtype_name(kind)), requires_grad);
  }
  const bool from_numpy = py::hasattr(data, "dtype");  // an ndarray or a NumPy scalar keeps float64
  py::array arr;
  try {
    arr = py::module_::import("numpy").attr("asarray")(data);
  } catch (py::error_already_set& e) {  // ragged lists: NumPy's message alone would not say whose data it was
    if (!e.matches(PyExc_ValueError)) throw;
    throw py::value_error(fmt::format("tf.tensor(): argument 'data' is not an array of numbers: {}",
                                      py::str(e.value()).cast<std::string>()));
  }
  const DType kind = dtype.is_none() ? kind_of_numpy(arr.dtype(), !from_numpy) : dtype_of(dtype);
  if (kind == DType::float32) {
    if (arr.dtype().kind() != 'f' && arr.dtype().kind() != 'i' && arr.dtype().kind() != 'u' &&
        arr.dtype().kind() != 'b')
      kind_of_numpy(arr.dtype(), true);  // refuses strings, objects, complex numbers
    return Tensor(Var<float>(to_array<float>(arr), requires_grad));
  }
  kind_of_numpy(arr.dtype(), true);  // refuses what is not a number
  Array<double> values = to_array<double>(arr);
  if (kind == DType::int64) {
    if (xt::any(xt::not_equal(xt::trunc(values), values)))
      values = xt::trunc(values);  // as torch.tensor(floats, dtype=int64): toward zero
    check_whole_range(values);
  } else if (kind == DType::boolean) {
    values = xt::cast<double>(xt::not_equal(values, 0.0));
  }
  return from_array(std::move(values), kind, requires_grad);
}

py::array to_numpy(const Tensor& t) {
  if (t.is_floating()) return visit(t, [](const auto& v) -> py::array { return value_view(v); });
  const Array<double>& values = std::get<Var<double>>(t.var).value();
  if (t.kind == DType::boolean) {
    py::array_t<bool> out(std::vector<py::ssize_t>(values.shape().begin(), values.shape().end()));
    for (std::size_t i = 0; i < values.size(); ++i) out.mutable_data()[i] = values.data()[i] != 0.0;
    return out;
  }
  py::array_t<std::int64_t> out(std::vector<py::ssize_t>(values.shape().begin(), values.shape().end()));
  for (std::size_t i = 0; i < values.size(); ++i) out.mutable_data()[i] = static_cast<std::int64_t>(values.data()[i]);
  return out;
}

Tensor from_indices(const IndexArray& ids) {
  return Tensor(Var<double>(Array<double>(xt::cast<double>(ids))), DType::int64);
}

IndexArray to_ids(const py::handle& ids) {
  py::detail::make_caster<Tensor> caster;
  if (caster.load(ids, false)) {
    const Tensor& t = py::detail::cast_op<const Tensor&>(caster);
    if (t.kind != DType::int64)
      throw std::invalid_argument(
          fmt::format("token ids must be integers, got a {} tensor (convert it with .long())", t.dtype()));
    return to_ids(to_numpy(t));
  }
  auto arr = py::array::ensure(ids);
  if (!arr) throw std::invalid_argument("token ids must be an array of integers");
  const char kind = arr.dtype().kind();
  if (arr.size() > 0 && kind != 'i' && kind != 'u') {
    throw std::invalid_argument(
        fmt::format("token ids must be integers, got an array of dtype {}", std::string(py::str(arr.dtype()))));
  }
  auto as64 = py::array_t<long long, py::array::c_style | py::array::forcecast>::ensure(arr);
  Shape shape(as64.shape(), as64.shape() + as64.ndim());
  IndexArray out = IndexArray::from_shape(shape);
  for (py::ssize_t i = 0; i < as64.size(); ++i) {
    const long long v = as64.data()[i];
    if (v < -1 || v > 0x7fffffffLL) {
      throw std::invalid_argument(fmt::format("token id {} at flat index {} is out of range (0 to 2^31-1, or -1 for "
                                              "an ignored target)",
                                              v, i));
    }
    out.data()[i] = static_cast<Index>(v);
  }
  return out;
}

std::vector<long> shape_arguments(const py::tuple& args, const char* what) {
  py::sequence items = args;
  if (args.size() == 1 && (py::isinstance<py::tuple>(args[0]) || py::isinstance<py::list>(args[0])))
    items = py::reinterpret_borrow<py::sequence>(args[0]);
  std::vector<long> out;
  for (const py::handle item : items) {
    if (!PyIndex_Check(item.ptr()) || PyBool_Check(item.ptr()))
      throw py::type_error(
          fmt::format("{}: a shape is ints (or one tuple or list of ints), got {}", what, std::string(py::repr(item))));
    out.push_back(py::cast<long>(item));
  }
  return out;
}

std::optional<std::vector<long>> dims_argument(const py::handle& dim) {
  if (dim.is_none()) return std::nullopt;
  if (py::isinstance<py::tuple>(dim) || py::isinstance<py::list>(dim)) {
    std::vector<long> dims;
    for (const py::handle d : dim) dims.push_back(py::cast<long>(d));
    return dims;
  }
  if (!PyIndex_Check(dim.ptr()))
    throw py::type_error(
        fmt::format("dim must be an int, a tuple of ints or None, got {}", std::string(py::repr(dim))));
  return std::vector<long>{py::cast<long>(dim)};
}

py::str utf8_str(const std::string& text) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
}

py::list utf8_list(const std::vector<std::string>& texts) {
  py::list out;
  for (const auto& t : texts) out.append(utf8_str(t));
  return out;
}

}  // namespace tf::python
