// tinyformer.Tensor itself: its shape and dtype, its values out as NumPy, Python numbers, lists and text, and the
// dtype conversions (float, double, long, bool, to).
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <pybind11/stl.h>
#include <xtensor/xmath.hpp>

#include "tensor.hpp"

namespace tf::python {

namespace {

py::tuple shape_tuple(const Tensor& x) {
  return visit(x, [](const auto& v) {
    const Shape s = v.shape();
    py::tuple out(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) out[i] = s[i];
    return out;
  });
}

Array<double> values_as_double(const Tensor& t) {
  return visit(t, [](const auto& v) { return Array<double>(xt::cast<double>(v.value())); });
}

py::object python_number(double v, DType kind) {
  if (kind == DType::boolean) return py::bool_(v != 0.0);
  if (kind == DType::int64) return py::int_(static_cast<std::int64_t>(v));
  return py::float_(v);
}

// Nested lists of the values along axes [axis, rank), starting at flat position `offset`.
py::object nested_list(const Array<double>& values, std::size_t axis, std::size_t offset, DType kind) {
  if (axis == values.dimension()) return python_number(values.data()[offset], kind);
  std::size_t stride = 1;
  for (std::size_t i = axis + 1; i < values.dimension(); ++i) stride *= values.shape()[i];
  py::list out;
  for (std::size_t i = 0; i < values.shape()[axis]; ++i)
    out.append(nested_list(values, axis + 1, offset + i * stride, kind));
  return out;
}

// The one value of a tensor of one element, as a Python float, int or bool by dtype.
py::object single_value(const Tensor& t, const char* what) {
  const std::size_t n = visit(t, [](const auto& v) { return v.numel(); });
  if (n != 1)
    throw std::invalid_argument(
        fmt::format("{}: the tensor has {} elements; only a tensor of one element converts to a "
                    "Python number",
                    what, n));
  return python_number(visit(t, [](const auto& v) { return static_cast<double>(*v.value().data()); }), t.kind);
}

std::string tensor_repr(const Tensor& t) {
  const py::object text = py::module_::import("numpy").attr("array2string")(to_numpy(t), py::arg("prefix") = "tensor(",
                                                                            py::arg("separator") = ", ");
  const bool grad = visit(t, [](const auto& v) { return v.requires_grad(); });
  return fmt::format("tensor({}, dtype={}{})", std::string(py::str(text)), t.dtype(),
                     grad ? ", requires_grad=True" : "");
}

void bind_shape_properties(py::class_<Tensor>& t) {
  t.def_property_readonly("shape", &shape_tuple, "The dims as a tuple of ints (() for a 0-d tensor)")
      .def_property_readonly("dtype", &Tensor::dtype, "float32, float64, int64 or bool (a string: tf.float32 ...)")
      .def_property_readonly("ndim", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.dim(); }); })
      .def("dim", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.dim(); }); })
      .def("numel", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.numel(); }); })
      .def("is_floating_point", &Tensor::is_floating)
      .def(
          "size",
          [](const Tensor& x, const py::object& dim) -> py::object {
            if (dim.is_none()) return shape_tuple(x);
            return py::int_(visit(x, [&](const auto& v) { return v.size(py::cast<long>(dim)); }));
          },
          py::arg("dim") = py::none(), "The shape as a tuple, or the length of one dim (negative counts from the end)")
      .def("__len__", [](const Tensor& x) {
        return visit(x, [](const auto& v) -> std::size_t {
          if (v.dim() == 0) throw py::type_error("len() of a 0-d tensor");
          return v.shape()[0];
        });
      });
}

void bind_value_exports(py::class_<Tensor>& t) {
  t.def(
       "numpy", &to_numpy,
       "The values as NumPy: for a float tensor a read-only view of its memory (no copy) that follows in-place updates "
       "(optimizer steps, load_state_dict), np.array(t.numpy()) for a copy; int64 and bool tensors give a copy")
      .def(
          "__array__",
          [](const Tensor& x, const py::object& dtype, const py::object&) -> py::object {
            py::array values = to_numpy(x);
            if (!dtype.is_none()) return values.attr("astype")(dtype);
            return values.attr("copy")();
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none(),
          "np.asarray(t, dtype=...): a copy of the values, outside the graph (as t.detach().numpy())")
      .def(
          "item", [](const Tensor& x) { return single_value(x, "item()"); },
          "The value of a one-element tensor as a Python float, int or bool")
      .def(
          "tolist", [](const Tensor& x) { return nested_list(values_as_double(x), 0, 0, x.kind); },
          "The values as nested lists of Python numbers (a number for a 0-d tensor)")
      .def("__float__", [](const Tensor& x) { return py::float_(single_value(x, "float()")); })
      .def("__int__", [](const Tensor& x) { return py::int_(single_value(x, "int()")); })
      .def("__bool__", [](const Tensor& x) { return py::bool_(single_value(x, "bool()")); })
      .def("__index__",
           [](const Tensor& x) {
             if (x.is_floating())
               throw py::type_error(fmt::format("only an int64 or bool tensor of one element can be used as an index, "
                                                "not a {} one",
                                                x.dtype()));
             return py::int_(single_value(x, "__index__"));
           })
      .def("__repr__", &tensor_repr)
      .def(
          "__format__",
          [](const Tensor& x, const std::string& spec) -> py::object {
            if (visit(x, [](const auto& v) { return v.dim(); }) == 0)
              return single_value(x, "format").attr("__format__")(spec);
            return py::str(tensor_repr(x)).attr("__format__")(spec);
          },
          "f\"{loss:.3f}\" formats a 0-d tensor as its number (as torch)");
  // Tensors are hashed by identity, as torch's: == compares elementwise, so sets and dicts need this.
  t.attr("__hash__") = py::module_::import("builtins").attr("object").attr("__hash__");
}

// A new leaf with a copy of the values, the dtype and (for a leaf) requires_grad: copy.copy and copy.deepcopy.
Tensor copy_of(const Tensor& x) {
  Tensor out = visit(
      x, [](const auto& v) { return Tensor(std::decay_t<decltype(v)>(v.value(), v.requires_grad() && v.is_leaf())); });
  out.kind = x.kind;
  return out;
}

// x as `kind` (x.float(), x.to(tf.float64), ...): itself when it has that dtype. A float tensor that requires a
// gradient is refused as another float dtype (a dtype change is not differentiable here: the graph holds one dtype),
// so no gradient is dropped; as int64 or bool it is a constant, as torch's x.long() and x.bool() are.
Tensor as_dtype(const Tensor& x, DType kind, const char* what) {
  const bool grad = visit(x, [](const auto& v) { return v.requires_grad(); });
  const bool to_float = kind == DType::float32 || kind == DType::float64;
  if (x.kind != kind && grad && to_float)
    throw std::invalid_argument(
        fmt::format("{}: a dtype change is not differentiable here (the graph holds one dtype), "
                    "and this {} tensor requires a gradient; make it in the dtype you need "
                    "(tf.tensor(..., dtype=...), dtype= of a module), or convert "
                    "x.detach() for its values",
                    what, x.dtype()));
  return converted(x, kind);
}

// torch's device names: "cpu" is the only device here; "cuda", "mps" and the others are refused naming them.
std::optional<std::string> device_name(const py::handle& h) {
  if (py::hasattr(h, "type") && py::isinstance<py::str>(h.attr("type")) && !py::isinstance<py::str>(h))
    return py::cast<std::string>(h.attr("type"));  // a tf.device
  if (!py::isinstance<py::str>(h)) return std::nullopt;
  const std::string s = py::cast<std::string>(h);
  const std::string kind = s.substr(0, s.find(':'));
  for (const char* d : {"cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "vulkan", "ipu", "hpu", "mtia"})
    if (kind == d) return kind;
  return std::nullopt;
}

void check_cpu(const std::string& name, const char* what) {
  if (name != "cpu")
    throw std::invalid_argument(
        fmt::format("{}: device '{}' is not here; tinyformer runs on the CPU ('cpu')", what, name));
}

// x.to(dtype), x.to(device), x.to(device, dtype), x.to(other), x.to(dtype=..., device=...), as torch.
Tensor to_t(const Tensor& x, const py::args& args, const py::kwargs& kwargs) {
  std::optional<DType> kind;
  const auto take = [&](const py::handle& a) {
    py::detail::make_caster<Tensor> caster;
    if (caster.load(a, false))
      kind = py::detail::cast_op<const Tensor&>(caster).kind;
    else if (const std::optional<std::string> device = device_name(a))
      check_cpu(*device, "to()");
    else if (!a.is_none())
      kind = dtype_of(a);
  };
  for (const py::handle a : args) take(a);
  for (const auto& [key, value] : kwargs) {
    const std::string k = py::str(key);
    if (k == "dtype" || k == "device")
      take(value);
    else if (k != "non_blocking" && k != "copy")
      throw py::type_error(fmt::format("to(): unexpected keyword '{}' (dtype, device, non_blocking, copy)", k));
  }
  return kind ? as_dtype(x, *kind, "to()") : x;
}

void bind_dtype_conversions(py::class_<Tensor>& t) {
  const char* note =
      "a new tensor of that dtype (a constant), or self when it has that dtype already; a tensor that "
      "requires a gradient is refused as another float dtype (a dtype change is not differentiable here)";
  t.def("to", &to_t,
        "x.to(dtype), x.to('cpu'), x.to(device, dtype), x.to(other): the dtype as given or other's; "
        "the device must be the CPU")
      .def(
          "type_as", [](const Tensor& x, const Tensor& other) { return as_dtype(x, other.kind, "type_as()"); },
          py::arg("other"), note)
      .def(
          "cpu", [](const py::object& self) { return self; }, "self: every tensor is on the CPU")
      .def("cuda",
           [](const Tensor&, const py::args&, const py::kwargs&) -> Tensor {
             throw std::invalid_argument("cuda(): there is no CUDA here; tinyformer runs on the CPU");
           })
      .def_property_readonly(
          "device", [](const Tensor&) { return py::module_::import("tinyformer._core").attr("device")("cpu"); },
          "device(type='cpu')")
      .def_property_readonly("is_cuda", [](const Tensor&) { return false; })
      .def(
          "new_zeros",
          [](const Tensor& x, const py::args& size) {
            return py::module_::import("tinyformer._core").attr("zeros")(*size, py::arg("dtype") = x.dtype());
          },
          "zeros of this tensor's dtype")
      .def(
          "new_ones",
          [](const Tensor& x, const py::args& size) {
            return py::module_::import("tinyformer._core").attr("ones")(*size, py::arg("dtype") = x.dtype());
          },
          "ones of this tensor's dtype")
      .def(
          "new_full",
          [](const Tensor& x, const py::object& size, const py::object& value) {
            return py::module_::import("tinyformer._core").attr("full")(size, value, py::arg("dtype") = x.dtype());
          },
          py::arg("size"), py::arg("fill_value"), "fill_value of this tensor's dtype")
      .def(
          "new_tensor",
          [](const Tensor& x, const py::object& data) { return make_tensor(data, py::str(x.dtype()), false); },
          py::arg("data"), "a new tensor of data in this tensor's dtype")
      .def(
          "float", [](const Tensor& x) { return as_dtype(x, DType::float32, "float()"); }, note)
      .def(
          "double", [](const Tensor& x) { return as_dtype(x, DType::float64, "double()"); }, note)
      .def(
          "long", [](const Tensor& x) { return as_dtype(x, DType::int64, "long()"); }, note)
      .def(
          "bool", [](const Tensor& x) { return as_dtype(x, DType::boolean, "bool()"); }, note)
      .def(
          "contiguous", [](const py::object& self) { return self; },
          "self: every tinyformer tensor is a contiguous row-major buffer")
      .def("__reduce__",
           [](const Tensor& x) {  // pickle (tf.save): the values, requires_grad of a leaf, the dtype
             const bool grad = visit(x, [](const auto& v) { return v.requires_grad() && v.is_leaf(); });
             return py::make_tuple(py::module_::import("tinyformer.serialization").attr("_rebuild_tensor"),
                                   py::make_tuple(to_numpy(x).attr("copy")(), grad, x.dtype()));
           })
      .def("__copy__", &copy_of)
      .def(
          "__deepcopy__", [](const Tensor& x, const py::dict&) { return copy_of(x); }, py::arg("memo"));
}

// torch.device: a device name; "cpu" is the one tinyformer computes on (x.to(device) refuses the others).
struct Device {
  std::string type;
};

void bind_device(py::module_& m) {
  py::class_<Device>(m, "device", "torch.device: tf.device('cpu'); other names are kept, and refused by to()")
      .def(py::init([](const std::string& name) { return Device{name.substr(0, name.find(':'))}; }), py::arg("type"))
      .def_readonly("type", &Device::type)
      .def_property_readonly("index", [](const Device&) { return py::none(); })
      .def("__str__", [](const Device& d) { return d.type; })
      .def("__repr__", [](const Device& d) { return fmt::format("device(type='{}')", d.type); })
      .def("__eq__",
           [](const Device& d, const py::object& other) {
             if (py::isinstance<py::str>(other)) return d.type == py::cast<std::string>(other);
             return py::isinstance<Device>(other) && d.type == other.cast<const Device&>().type;
           })
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.type)); });
}

}  // namespace

void bind_tensor(py::module_& m, py::class_<Tensor>& t) {
  bind_device(m);
  m.def(
      "_device_type",
      [](const py::handle& device) -> py::object {
        const std::optional<std::string> name = device_name(device);
        return name ? py::object(py::str(*name)) : py::object(py::none());
      },
      py::arg("device"),
      "The device a name or tf.device means ('cpu', 'cuda', ...; 'cuda:0' is 'cuda'), None for anything else: what "
      "x.to(), Module.to(), ActivationCache.to() and tf.load's map_location check");
  bind_shape_properties(t);
  t.attr("nelement") = t.attr("numel");  // torch's other name for it
  bind_value_exports(t);
  bind_dtype_conversions(t);
  for (const DType d : {DType::float32, DType::float64, DType::int64, DType::boolean})
    m.attr(d == DType::boolean ? "bool_" : dtype_name(d)) = dtype_name(d);
  m.attr("double") = dtype_name(DType::float64);
  m.attr("long") = dtype_name(DType::int64);
  m.def(
      "_dtype_name",
      [](const py::object& dtype) -> py::object {
        if (dtype.is_none()) return py::none();
        const DType d = dtype_of(dtype);
        if (d != DType::float32 && d != DType::float64)
          throw std::invalid_argument(
              fmt::format("dtype {} is not supported here: modules hold float32 or float64 tensors", dtype_name(d)));
        return py::str(dtype_name(d));
      },
      py::arg("dtype"), "The name of a float dtype (modules' dtype=), None for None; other dtypes are refused");
}

}  // namespace tf::python
