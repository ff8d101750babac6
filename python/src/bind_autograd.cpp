// Autograd from Python: requires_grad, grad, backward, zero_grad, retain_grad, detach, requires_grad_, grad mode
// (no_grad, is_grad_enabled), the kernels' threads, and gradcheck (tf::gradcheck's float64 central differences).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/autograd/gradcheck.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf::python {

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// On x.detach() or x.data, turning it on makes x a new leaf with a copy of the values (torch's would share them).
void set_requires_grad(Tensor& x, bool on) {
  if (on && !x.is_floating())
    throw std::invalid_argument(
        fmt::format("only float tensors can require a gradient, not {} ones (as torch)", x.dtype()));
  std::visit(
      [on](auto& v) {
        if (!v.is_leaf()) {
          throw std::invalid_argument("requires_grad can only be changed on a leaf tensor (one made by tf.tensor), "
                                      "not on an op's result");
        }
        v.set_requires_grad(on);
      },
      x.var);
}

// p.grad = value: None frees the gradient (zero_grad); a tensor or array of p's shape becomes it (a copy), as torch.
void set_grad(Tensor& x, const py::object& value) {
  if (value.is_none()) return visit(x, [](auto v) { v.zero_grad(); });
  if (!x.is_floating()) throw py::type_error(fmt::format("grad: a {} tensor has no gradient", x.dtype()));
  visit(x, [&](auto v) {
    using S = ScalarOfVar<decltype(v)>;
    Array<S> g = to_array<S>(value);
    if (g.shape() != v.value().shape())
      throw std::invalid_argument(fmt::format("grad: a value of shape {} for a tensor of shape {}",
                                              shape_str(to_shape(g.shape())), shape_str(v.shape())));
    v.mutable_grad() = std::move(g);
  });
}

void backward(const Tensor& x, const std::optional<py::array>& gradient, bool retain_graph) {
  BackwardOptions opts;
  opts.retain_graph = retain_graph;
  visit(x, [&](const auto& v) {
    using S = ScalarOfVar<decltype(v)>;
    if (!gradient) {
      py::gil_scoped_release release;
      v.backward(opts);
      return;
    }
    Array<S> seed = to_array<S>(*gradient);
    if (to_shape(seed.shape()) != v.shape()) {
      throw std::invalid_argument(fmt::format("backward(gradient): its shape [{}] differs from the tensor's [{}]",
                                              fmt::join(seed.shape(), ","), fmt::join(v.shape(), ",")));
    }
    py::gil_scoped_release release;
    v.backward(seed, opts);
  });
}

// What x.register_hook returns (torch.utils.hooks.RemovableHandle): remove() takes the hook off, once; the handle
// does not keep the tensor alive.
struct HookHandle {
  std::function<void()> remove_fn;
  void remove() {
    if (!remove_fn) return;
    auto fn = std::move(remove_fn);
    remove_fn = nullptr;
    fn();
  }
};

// x.register_hook(fn): fn(grad) on x's gradient in every later backward(), answering as call_grad_hook's (Var's rules:
// a leaf's hook sees that backward's gradient, before it is added to x.grad).
HookHandle register_hook(const Tensor& x, py::function fn) {
  auto held = std::make_shared<const HeldFunction>(std::move(fn));
  return visit(x, [&](auto v) {
    using S = ScalarOfVar<decltype(v)>;
    const std::uint64_t id =
        v.register_hook([held](Array<S>& grad) { call_grad_hook(*held, grad, "register_hook's hook"); });
    return HookHandle{[node = std::weak_ptr<Node<S>>(v.node_ptr()), id] {
      if (auto n = node.lock()) Var<S>(n).remove_hook(id);
    }};
  });
}

void bind_hook_handle(py::module_& m) {
  py::class_<HookHandle>(m, "RemovableHandle", "What Tensor.register_hook returns: remove() takes the hook off")
      .def("remove", &HookHandle::remove)
      .def("__enter__", [](const py::object& self) { return self; })
      .def("__exit__", [](HookHandle& h, const py::args&) { h.remove(); });
}

void bind_gradient_state(py::class_<Tensor>& t) {
  t.def_property(
       "requires_grad", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.requires_grad(); }); },
       &set_requires_grad)
      .def(
          "requires_grad_",
          [](const py::object& self, bool on) {
            set_requires_grad(self.cast<Tensor&>(), on);
            return self;
          },
          py::arg("requires_grad") = true, "Sets requires_grad on a leaf and returns it (as torch)")
      .def_property_readonly("is_leaf",
                             [](const Tensor& x) { return visit(x, [](const auto& v) { return v.is_leaf(); }); })
      .def_property_readonly("op", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.op(); }); })
      .def_property(
          "grad",
          [](const Tensor& x) -> py::object {
            const bool has = visit(x, [](const auto& v) { return v.has_grad(); });
            if (!has) return py::none();
            Tensor g = visit(x, [](const auto& v) { return Tensor(std::decay_t<decltype(v)>(v.grad())); });
            g.kind = x.kind;
            g.grad_of = std::make_shared<const Tensor>(x);
            return py::cast(std::move(g));
          },
          &set_grad,
          "The gradient as a tensor (a copy whose changes in place, p.grad.zero_() or p.grad *= 0.5, are the "
          "gradient's), or None before any backward; grad = None frees it, grad = g sets it (same shape)")
      .def("backward", &backward, py::arg("gradient") = py::none(), py::arg("retain_graph") = false)
      .def("zero_grad", [](Tensor& x) { visit(x, [](auto v) { v.zero_grad(); }); })
      .def("retain_grad", [](Tensor& x) { visit(x, [](auto v) { v.retain_grad(); }); })
      .def("register_hook", &register_hook, py::arg("hook"),
           "hook(grad) runs on this tensor's gradient in every later backward() and returns a new gradient of the same "
           "shape, or None to go on with the copy it got (as it left it); on a leaf it sees that backward's gradient, "
           "before it is added to .grad. Returns a handle whose remove() takes it off (torch's register_hook)")
      .def("detach", &detached,
           "The same values outside the graph, not copied (as torch): requires no gradient; a change in place through "
           "it changes this tensor");
}

void bind_grad_mode(py::module_& m) {
  struct NoGrad {
    std::unique_ptr<NoGradGuard> guard;
  };
  py::class_<NoGrad>(m, "no_grad", "with tf.no_grad(): ops record nothing (their results are constants)")
      .def(py::init<>())
      .def("__enter__", [](NoGrad& g) { g.guard = std::make_unique<NoGradGuard>(); })
      .def("__exit__", [](NoGrad& g, const py::args&) { g.guard.reset(); });
  m.def("is_grad_enabled", &grad_enabled);
  m.def("_set_grad_enabled", &set_grad_enabled, py::arg("mode"));
  m.def("set_num_threads", &set_num_threads, py::arg("n"), "threads of the library's kernels (n >= 1)");
  m.def("get_num_threads", &num_threads);
}

void bind_op_loop(py::module_& m) {
  // The C++ side of the per-op overhead benchmark (bench/bench_python.py): `calls` times the op that a + b
  // (op "add") or a @ b ("matmul") runs, in a C++ loop without Python; wall seconds of the loop.
  m.def(
      "_op_loop_seconds",
      [](const std::string& op, const Tensor& a, const Tensor& b, std::size_t calls) {
        if (op != "add" && op != "matmul")
          throw std::invalid_argument(fmt::format("_op_loop_seconds: op '{}': valid are add, matmul", op));
        const bool is_add = op == "add";
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < calls; ++i)
          visit2(a, b, [&](const auto& x, const auto& y) { return is_add ? add(x, y) : matmul(x, y); });
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      py::arg("op"), py::arg("a"), py::arg("b"), py::arg("calls"), Release());
}

void bind_gradcheck(py::module_& m) {
  // gradcheck: float64 central differences against backward(), the report of tf::gradcheck
  py::class_<GradcheckResult>(m, "GradcheckResult")
      .def_readonly("ok", &GradcheckResult::ok)
      .def("report", &GradcheckResult::report)
      .def("__bool__", [](const GradcheckResult& r) { return r.ok; })
      .def("__repr__", [](const GradcheckResult& r) { return r.report(); });
  m.def(
      "_gradcheck",
      [](const py::function& fn, const std::vector<py::array_t<double, py::array::c_style | py::array::forcecast>>& xs,
         double eps, double rtol, double atol, std::vector<std::string> names) {
        std::vector<Array<double>> inputs;
        inputs.reserve(xs.size());
        for (const auto& x : xs) inputs.push_back(to_array<double>(x));
        GradcheckOptions opts;
        opts.eps = eps;
        opts.rtol = rtol;
        opts.atol = atol;
        auto f = [&fn](const std::vector<Var<double>>& vs) {
          py::list args;
          for (const auto& v : vs) args.append(Tensor(v));
          py::object out = fn(*args);
          return py::cast<Tensor>(out).as<double>();
        };
        return gradcheck(f, inputs, opts, std::move(names));
      },
      py::arg("fn"), py::arg("inputs"), py::arg("eps"), py::arg("rtol"), py::arg("atol"), py::arg("names"));
  m.def(
      "_gradcheck_params",
      [](const py::function& fn, const std::vector<std::pair<std::string, Tensor>>& named, double eps, double rtol,
         double atol) {
        std::vector<std::pair<std::string, Var<double>>> params;
        params.reserve(named.size());
        for (const auto& [name, t] : named) params.emplace_back(name, t.as<double>());
        GradcheckOptions opts;
        opts.eps = eps;
        opts.rtol = rtol;
        opts.atol = atol;
        return gradcheck_params([&fn] { return py::cast<Tensor>(fn()).as<double>(); }, params, opts);
      },
      py::arg("fn"), py::arg("params"), py::arg("eps"), py::arg("rtol"), py::arg("atol"));
}

}  // namespace

void bind_autograd(py::module_& m, py::class_<Tensor>& t) {
  bind_hook_handle(m);
  bind_gradient_state(t);
  bind_grad_mode(m);
  bind_op_loop(m);
  bind_gradcheck(m);
}

}  // namespace tf::python
