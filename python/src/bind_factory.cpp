// Making tensors: tf.tensor, zeros, ones, full, arange, rand, randn, randint and their *_like forms, the Generator
// class and the default generator that tf.manual_seed seeds (the library's tf::Rng; tensor/factory.hpp fills them).
#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/tensor/factory.hpp"

namespace tf::python {

namespace {

// The generator of rand, randn and randint when none is given: seed 0 until tf.manual_seed. The module's attribute
// default_generator owns it.
Rng* g_default_generator = nullptr;

}  // namespace

Rng& generator_or_default(Rng* g) { return g ? *g : *g_default_generator; }

namespace {

Shape to_size(const std::vector<long>& dims, const char* what) {
  Shape s;
  for (const long d : dims) {
    if (d < 0) throw std::invalid_argument(fmt::format("{}: a size must be >= 0, got {}", what, d));
    s.push_back(static_cast<std::size_t>(d));
  }
  return s;
}

DType dtype_or(const py::object& dtype, DType fallback) { return dtype.is_none() ? fallback : dtype_of(dtype); }

// A Python value's dtype as torch.full infers it: bool, int64 for an int, float32 for a float.
DType dtype_of_value(const py::handle& value) {
  if (PyBool_Check(value.ptr())) return DType::boolean;
  if (PyIndex_Check(value.ptr())) return DType::int64;
  return DType::float32;
}

Tensor filled(const Shape& shape, double value, DType kind, bool requires_grad) {
  return from_array(full<double>(shape, value), kind, requires_grad);
}

Shape shape_of(const Tensor& t) {
  return visit(t, [](const auto& v) { return v.shape(); });
}

void bind_constant_makers(py::module_& m) {
  m.def(
      "tensor",
      [](const py::object& data, bool requires_grad, const py::object& dtype) {
        return make_tensor(data, dtype, requires_grad);
      },
      py::arg("data"), py::arg("requires_grad") = false, py::arg("dtype") = py::none(),
      "A new leaf holding a copy of data (a NumPy array, nested lists, a number or a tensor). Its dtype: as given, "
      "else float64 from a float64 array, float32 from other floats, int64 from integers, bool from bools");
  m.def(
      "from_numpy",
      [](const py::object& array) {
        if (!py::isinstance<py::array>(array))
          throw py::type_error(fmt::format("from_numpy takes a NumPy array, got {}",
                                           py::str(py::type::of(array).attr("__name__")).cast<std::string>()));
        return make_tensor(array, py::none(), false);
      },
      py::arg("ndarray"),
      "torch.from_numpy's dtypes (float64 stays float64, float32 float32, integers int64, bools bool), but a copy: "
      "tinyformer tensors own their memory, so a later change to the array does not reach the tensor");
  m.def(
      "zeros",
      [](const py::args& size, const py::object& dtype, bool requires_grad) {
        return filled(to_size(shape_arguments(size, "zeros"), "zeros"), 0, dtype_or(dtype, DType::float32),
                      requires_grad);
      },
      py::arg("dtype") = py::none(), py::arg("requires_grad") = false, "zeros(2, 3) or zeros((2, 3))");
  m.def(
      "ones",
      [](const py::args& size, const py::object& dtype, bool requires_grad) {
        return filled(to_size(shape_arguments(size, "ones"), "ones"), 1, dtype_or(dtype, DType::float32),
                      requires_grad);
      },
      py::arg("dtype") = py::none(), py::arg("requires_grad") = false, "ones(2, 3) or ones((2, 3))");
  m.def(
      "full",
      [](const py::object& size, const py::object& value, const py::object& dtype, bool requires_grad) {
        const Shape s = to_size(shape_arguments(py::make_tuple(size), "full"), "full");
        return filled(s, py::cast<double>(value), dtype_or(dtype, dtype_of_value(value)), requires_grad);
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("requires_grad") = false, "full((2, 3), 7.0): the dtype from the value unless given (as torch)");
  m.def(
      "arange",
      [](const py::object& start, const py::object& end, const py::object& step, const py::object& dtype,
         bool requires_grad) {
        const bool whole =
            PyIndex_Check(start.ptr()) && (end.is_none() || PyIndex_Check(end.ptr())) && PyIndex_Check(step.ptr());
        const double lo = end.is_none() ? 0.0 : py::cast<double>(start);
        const double hi = py::cast<double>(end.is_none() ? start : end);
        return from_array(arange<double>(lo, hi, py::cast<double>(step)),
                          dtype_or(dtype, whole ? DType::int64 : DType::float32), requires_grad);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("requires_grad") = false,
      "arange(5), arange(1, 4), arange(0, 1, 0.25): int64 when every bound is an int, else float32 (as torch)");
  m.def(
      "linspace",
      [](double start, double end, long steps, const py::object& dtype, bool requires_grad) {
        if (steps < 0) throw std::invalid_argument(fmt::format("linspace: steps must be >= 0, got {}", steps));
        const DType kind = dtype_or(dtype, DType::float32);
        // torch's arithmetic, in the result's precision: step = (end - start) / (steps - 1), the first half counted
        // from start and the second from end (so both ends are exact)
        const auto fill = [&](auto zero) {
          using T = decltype(zero);
          const T lo = static_cast<T>(start), hi = static_cast<T>(end);
          const T step = steps > 1 ? (hi - lo) / static_cast<T>(steps - 1) : T(0);
          Array<double> values = Array<double>::from_shape({static_cast<std::size_t>(steps)});
          for (long i = 0; i < steps; ++i)
            values(i) =
                i < steps / 2 || steps == 1 ? lo + step * static_cast<T>(i) : hi - step * static_cast<T>(steps - 1 - i);
          return values;
        };
        return from_array(kind == DType::float32 ? fill(0.0F) : fill(0.0), kind, requires_grad);
      },
      py::arg("start"), py::arg("end"), py::arg("steps"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("requires_grad") = false, "steps values from start to end, both included (float32 unless dtype=)");
}

void bind_like_makers(py::module_& m) {
  auto like = [&m](const char* name, double value) {
    m.def(
        name,
        [value](const Tensor& input, const py::object& dtype, bool requires_grad) {
          return filled(shape_of(input), value, dtype_or(dtype, input.kind), requires_grad);
        },
        py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false);
  };
  like("zeros_like", 0);
  like("ones_like", 1);
  m.def(
      "full_like",
      [](const Tensor& input, const py::object& value, const py::object& dtype, bool requires_grad) {
        return filled(shape_of(input), py::cast<double>(value), dtype_or(dtype, input.kind), requires_grad);
      },
      py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("requires_grad") = false);
  using RandomArray = Array<double> (*)(const Shape&, Rng&);
  auto random_like = [&m](const char* name, RandomArray make) {
    m.def(
        name,
        [make](const Tensor& input, Rng* g, const py::object& dtype, bool requires_grad) {
          return from_array(make(shape_of(input), generator_or_default(g)), dtype_or(dtype, input.kind), requires_grad);
        },
        py::arg("input"), py::kw_only(), py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
        py::arg("requires_grad") = false);
  };
  random_like("rand_like", &rand<double>);
  random_like("randn_like", &randn<double>);
}

void bind_random_makers(py::module_& m) {
  using RandomArray = Array<double> (*)(const Shape&, Rng&);
  auto random = [&m](const char* name, RandomArray make, const char* doc) {
    m.def(
        name,
        [name, make](const py::args& size, Rng* g, const py::object& dtype, bool requires_grad) {
          const Shape s = to_size(shape_arguments(size, name), name);
          return from_array(make(s, generator_or_default(g)), dtype_or(dtype, DType::float32), requires_grad);
        },
        py::arg("generator") = py::none(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false, doc);
  };
  random("rand", &rand<double>, "Uniform in [0, 1), from the default generator (tf.manual_seed) or generator=");
  random("randn", &randn<double>, "Standard normal, from the default generator (tf.manual_seed) or generator=");
  m.def(
      "randint",
      [](const py::args& args, Rng* g, const py::object& dtype) {
        if (args.size() != 2 && args.size() != 3)
          throw py::type_error("randint(high, size) or randint(low, high, size)");
        const long low = args.size() == 3 ? py::cast<long>(args[0]) : 0;
        const long high = py::cast<long>(args[args.size() - 2]);
        const Shape s = to_size(shape_arguments(py::make_tuple(args[args.size() - 1]), "randint"), "randint");
        return from_array(randint<double>(low, high, s, generator_or_default(g)), dtype_or(dtype, DType::int64));
      },
      py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      "Integers in [low, high) (low 0 unless given), int64 unless dtype= says otherwise");
  m.def(
      "randperm",
      [](long n, Rng* g, const py::object& dtype) {
        if (n < 0) throw std::invalid_argument(fmt::format("randperm: n must be >= 0, got {}", n));
        if (n == 0) return from_array(Array<double>::from_shape({0}), dtype_or(dtype, DType::int64));
        const Array<double> ones = xt::ones<double>({static_cast<std::size_t>(n)});
        const Array<std::int64_t> order =
            multinomial(ones, static_cast<std::size_t>(n), false, generator_or_default(g));  // each index once
        return from_array(xt::cast<double>(order), dtype_or(dtype, DType::int64));
      },
      py::arg("n"), py::kw_only(), py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      "A random permutation of 0 .. n-1 (int64), from the default generator (tf.manual_seed) or generator=");
  m.def(
      "multinomial",
      [](const Tensor& weights, long samples, bool replacement, Rng* g) {
        if (samples < 1)
          throw std::invalid_argument(fmt::format("multinomial: num_samples must be 1 or more, got {}", samples));
        const Array<double> w = to_array<double>(to_numpy(weights));
        const Array<std::int64_t> drawn =
            multinomial(w, static_cast<std::size_t>(samples), replacement, generator_or_default(g));
        return from_array(xt::cast<double>(drawn), DType::int64);
      },
      py::arg("input"), py::arg("num_samples"), py::arg("replacement") = false, py::kw_only(),
      py::arg("generator") = py::none(),
      "num_samples category indices drawn from each row of input's weights (torch.multinomial), from the "
      "default generator (tf.manual_seed) or generator=");
}

void bind_generators(py::module_& m) {
  py::class_<Rng>(m, "Generator", "The seeded generator (mt19937_64) behind init, dropout, sampling and tf.rand*")
      .def(py::init<std::uint64_t>(), py::arg("seed") = 0)
      .def(
          "manual_seed",
          [](py::object self, std::uint64_t seed) {
            *self.cast<Rng*>() = Rng(seed);
            return self;
          },
          py::arg("seed"), "Restarts the generator from seed; returns it (as torch.Generator.manual_seed)")
      .def("uniform", py::overload_cast<>(&Rng::uniform), "uniform in [0, 1)")
      .def("normal", py::overload_cast<>(&Rng::normal), "standard normal");
  py::object default_generator = py::cast(Rng(0));
  g_default_generator = default_generator.cast<Rng*>();
  m.attr("default_generator") = default_generator;
  m.def(
      "manual_seed",
      [](std::uint64_t seed) -> py::object {
        *g_default_generator = Rng(seed);
        return py::module_::import("tinyformer._core").attr("default_generator");
      },
      py::arg("seed"), "Seeds the default generator of tf.rand, randn, randint and their *_like forms; returns it");
}

}  // namespace

void bind_factories(py::module_& m) {
  bind_generators(m);
  bind_constant_makers(m);
  bind_like_makers(m);
  bind_random_makers(m);
  // torch.empty's contract is a tensor of that shape whose values are not to be read before they are written: zeros
  // here (one fewer uninitialised buffer to think about).
  m.attr("empty") = m.attr("zeros");
  m.attr("empty_like") = m.attr("zeros_like");
}

}  // namespace tf::python
