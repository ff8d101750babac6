// tinyformer.Tensor and the ops as functions: each one calls the library's op (ops/ops.hpp) on the Var the Tensor
// holds, float32 or float64. The GIL is released while an op or a backward runs.
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <xtensor/xmath.hpp>

#include "tensor.hpp"
#include "tinyformer/autograd/gradcheck.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf::python {

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// A constant of the tensor's dtype, shape [] (broadcasts against anything).
template <class S>
Var<S> constant(double value) {
  Array<S> a = Array<S>::from_shape({});
  a() = static_cast<S>(value);
  return Var<S>(std::move(a));
}

template <class S>
long normalized_axis(const Var<S>& a, long dim) {
  const long n = static_cast<long>(a.dim());
  if (dim < -n || dim >= n) {
    throw std::out_of_range(
        fmt::format("dim {} is out of range for a tensor of {} dimensions (valid: {} to {})", dim, n, -n, n - 1));
  }
  return dim < 0 ? dim + n : dim;
}

// f applied over axis `dim` of `a` by moving that axis last (the library's ops work on the last axis).
template <class S, class F>
Var<S> on_axis(const Var<S>& a, long dim, F f) {
  const long axis = normalized_axis(a, dim);
  const long last = static_cast<long>(a.dim()) - 1;
  if (axis == last) return f(a);
  return transpose(f(transpose(a, axis, last)), axis, last);
}

}  // namespace

IndexArray to_ids(const py::handle& ids) {
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

void bind_tensor(py::module_& m) {
  py::class_<Rng>(m, "Generator", "The seeded generator (mt19937_64) behind init, dropout and sampling")
      .def(py::init<std::uint64_t>(), py::arg("seed"))
      .def("uniform", py::overload_cast<>(&Rng::uniform), "uniform in [0, 1)")
      .def("normal", py::overload_cast<>(&Rng::normal), "standard normal");

  py::class_<Tensor> t(m, "Tensor", "A tf::Var: value, gradient and the op that made it (float32 or float64)");
  t.def_property_readonly("shape",
                          [](const Tensor& x) {
                            return visit(x, [](const auto& v) {
                              Shape s = v.shape();
                              py::tuple out(s.size());
                              for (std::size_t i = 0; i < s.size(); ++i) out[i] = s[i];
                              return out;
                            });
                          })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("ndim", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.dim(); }); })
      .def("numel", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.numel(); }); })
      .def("__len__",
           [](const Tensor& x) {
             return visit(x, [](const auto& v) -> std::size_t {
               if (v.dim() == 0) throw py::type_error("len() of a 0-d tensor");
               return v.shape()[0];
             });
           })
      .def_property(
          "requires_grad", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.requires_grad(); }); },
          [](Tensor& x, bool on) {
            visit(x, [on](auto v) {
              if (!v.node().is_leaf()) {
                throw std::invalid_argument("requires_grad can only be changed on a leaf tensor (one made by "
                                            "tf.tensor), not on an op's result");
              }
              v.set_requires_grad(on);
            });
          })
      .def_property_readonly("is_leaf",
                             [](const Tensor& x) { return visit(x, [](const auto& v) { return v.node().is_leaf(); }); })
      .def_property_readonly("op", [](const Tensor& x) { return visit(x, [](const auto& v) { return v.op(); }); })
      .def_property_readonly(
          "grad",
          [](const Tensor& x) -> py::object {
            return visit(x, [](const auto& v) -> py::object {
              if (!v.has_grad()) return py::none();
              return to_numpy_copy(v.grad());
            });
          },
          "The gradient as a NumPy array (a copy: zero_grad() frees the buffer), or None before any backward")
      .def(
          "numpy", [](const Tensor& x) { return visit(x, [](const auto& v) -> py::object { return value_view(v); }); },
          "The value as a read-only NumPy view of the tensor's memory (no copy); it follows in-place updates "
          "(optimizer steps, load_state_dict). np.array(t.numpy()) for a copy.")
      .def("__array__",
           [](const Tensor& x) {
             return visit(x, [](const auto& v) -> py::object { return to_numpy_copy(v.value()); });
           })
      .def("item",
           [](const Tensor& x) { return visit(x, [](const auto& v) { return static_cast<double>(v.item()); }); })
      .def(
          "backward",
          [](const Tensor& x, std::optional<py::array> gradient, bool retain_graph) {
            BackwardOptions opts;
            opts.retain_graph = retain_graph;
            visit(x, [&](const auto& v) {
              using S = typename std::decay_t<decltype(v.value())>::value_type;
              if (!gradient) {
                py::gil_scoped_release release;
                v.backward(opts);
                return;
              }
              Array<S> seed = to_array<S>(*gradient);
              if (to_shape(seed.shape()) != v.shape()) {
                throw std::invalid_argument(fmt::format("backward(gradient): its shape [{}] differs from the tensor's "
                                                        "[{}]",
                                                        fmt::join(seed.shape(), ","), fmt::join(v.shape(), ",")));
              }
              py::gil_scoped_release release;
              v.backward(seed, opts);
            });
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = false)
      .def("zero_grad", [](Tensor& x) { visit(x, [](auto v) { v.zero_grad(); }); })
      .def("retain_grad", [](Tensor& x) { visit(x, [](auto v) { v.retain_grad(); }); })
      .def(
          "detach",
          [](const Tensor& x) {
            return visit(x, [](const auto& v) { return Tensor(std::decay_t<decltype(v)>(v.value())); });
          },
          "A new leaf holding a copy of the value, outside the graph")
      .def("float",
           [](const Tensor& x) {
             return visit(x,
                          [](const auto& v) { return Tensor(Var<float>(Array<float>(xt::cast<float>(v.value())))); });
           })
      .def("double", [](const Tensor& x) {
        return visit(x, [](const auto& v) { return Tensor(Var<double>(Array<double>(xt::cast<double>(v.value())))); });
      });

  // Operators: tensor (op) tensor, and tensor (op) number on either side.
  auto scalar_op = [](auto f) {
    return [f](const Tensor& a, double s) {
      return visit(a, [&](const auto& v) {
        using S = typename std::decay_t<decltype(v.value())>::value_type;
        return Tensor(f(v, constant<S>(s)));
      });
    };
  };
  auto rscalar_op = [](auto f) {
    return [f](const Tensor& a, double s) {
      return visit(a, [&](const auto& v) {
        using S = typename std::decay_t<decltype(v.value())>::value_type;
        return Tensor(f(constant<S>(s), v));
      });
    };
  };
  auto add_f = [](const auto& a, const auto& b) { return add(a, b); };
  auto sub_f = [](const auto& a, const auto& b) { return sub(a, b); };
  auto mul_f = [](const auto& a, const auto& b) { return mul(a, b); };
  auto div_f = [](const auto& a, const auto& b) { return div(a, b); };
  t.def(
       "__add__", [add_f](const Tensor& a, const Tensor& b) { return visit2(a, b, add_f); }, py::is_operator(),
       Release())
      .def("__add__", scalar_op(add_f), py::is_operator(), Release())
      .def("__radd__", rscalar_op(add_f), py::is_operator(), Release())
      .def(
          "__sub__", [sub_f](const Tensor& a, const Tensor& b) { return visit2(a, b, sub_f); }, py::is_operator(),
          Release())
      .def("__sub__", scalar_op(sub_f), py::is_operator(), Release())
      .def("__rsub__", rscalar_op(sub_f), py::is_operator(), Release())
      .def(
          "__mul__", [mul_f](const Tensor& a, const Tensor& b) { return visit2(a, b, mul_f); }, py::is_operator(),
          Release())
      .def("__mul__", scalar_op(mul_f), py::is_operator(), Release())
      .def("__rmul__", rscalar_op(mul_f), py::is_operator(), Release())
      .def(
          "__truediv__", [div_f](const Tensor& a, const Tensor& b) { return visit2(a, b, div_f); }, py::is_operator(),
          Release())
      .def("__truediv__", scalar_op(div_f), py::is_operator(), Release())
      .def("__rtruediv__", rscalar_op(div_f), py::is_operator(), Release())
      .def(
          "__neg__", [](const Tensor& a) { return visit(a, [](const auto& v) { return Tensor(neg(v)); }); }, Release())
      .def(
          "__matmul__",
          [](const Tensor& a, const Tensor& b) {
            return visit2(a, b, [](const auto& x, const auto& y) { return matmul(x, y); });
          },
          py::is_operator(), Release());

  // ---- ops as functions (the methods sum, mean, reshape, ... are added in tinyformer/__init__.py)
  m.def("_tensor_f32", [](const py::array_t<float, py::array::c_style | py::array::forcecast>& a, bool requires_grad) {
    return Tensor(Var<float>(to_array<float>(a), requires_grad));
  });
  m.def("_tensor_f64", [](const py::array_t<double, py::array::c_style | py::array::forcecast>& a, bool requires_grad) {
    return Tensor(Var<double>(to_array<double>(a), requires_grad));
  });
  m.def(
      "sum",
      [](const Tensor& a, std::optional<long> dim, bool keepdim) {
        return visit(a,
                     [&](const auto& v) { return Tensor(dim ? sum(v, normalized_axis(v, *dim), keepdim) : sum(v)); });
      },
      py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, Release());
  m.def(
      "mean",
      [](const Tensor& a, std::optional<long> dim, bool keepdim) {
        return visit(a,
                     [&](const auto& v) { return Tensor(dim ? mean(v, normalized_axis(v, *dim), keepdim) : mean(v)); });
      },
      py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, Release());
#define TF_UNARY(name)                                                                                \
  m.def(                                                                                              \
      #name, [](const Tensor& a) { return visit(a, [](const auto& v) { return Tensor(name(v)); }); }, \
      py::arg("input"), Release())
  TF_UNARY(exp);
  TF_UNARY(log);
  TF_UNARY(tanh);
  TF_UNARY(relu);
  TF_UNARY(gelu);
  TF_UNARY(silu);
  TF_UNARY(swiglu);
  TF_UNARY(causal_mask);
#undef TF_UNARY
  m.def(
      "softmax",
      [](const Tensor& a, long dim) {
        return visit(a,
                     [&](const auto& v) { return Tensor(on_axis(v, dim, [](const auto& x) { return softmax(x); })); });
      },
      py::arg("input"), py::arg("dim") = -1, Release());
  m.def(
      "log_softmax",
      [](const Tensor& a, long dim) {
        return visit(
            a, [&](const auto& v) { return Tensor(on_axis(v, dim, [](const auto& x) { return log_softmax(x); })); });
      },
      py::arg("input"), py::arg("dim") = -1, Release());
  m.def(
      "scale",
      [](const Tensor& a, double f) {
        return visit(a, [&](const auto& v) {
          using S = typename std::decay_t<decltype(v.value())>::value_type;
          return Tensor(scale(v, static_cast<S>(f)));
        });
      },
      py::arg("input"), py::arg("factor"), Release());
  m.def(
      "matmul",
      [](const Tensor& a, const Tensor& b, bool ta, bool tb) {
        return visit2(a, b, [&](const auto& x, const auto& y) { return matmul(x, y, ta, tb); });
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false, Release());
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
        return visit2(x, w, [&](const auto& xv, const auto& wv) {
          using V = std::decay_t<decltype(xv)>;
          V bias = b ? std::get<V>(visit2(x, *b, [](const auto&, const auto& bv) { return bv; }).var) : V();
          return linear(xv, wv, bias);
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), Release());
  m.def(
      "layer_norm",
      [](const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
        return visit2(x, w, [&](const auto& xv, const auto& wv) {
          using V = std::decay_t<decltype(xv)>;
          using S = typename std::decay_t<decltype(xv.value())>::value_type;
          const V bv = std::get<V>(visit2(x, b, [](const auto&, const auto& y) { return y; }).var);
          return layer_norm(xv, wv, bv, static_cast<S>(eps));
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("bias"), py::arg("eps") = 1e-5, Release());
  m.def(
      "rms_norm",
      [](const Tensor& x, const Tensor& w, double eps) {
        return visit2(x, w, [&](const auto& xv, const auto& wv) {
          using S = typename std::decay_t<decltype(xv.value())>::value_type;
          return rms_norm(xv, wv, static_cast<S>(eps));
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("eps") = 1e-5, Release());
  m.def(
      "embedding",
      [](const py::object& ids, const Tensor& weight) {
        IndexArray idx = to_ids(ids);
        py::gil_scoped_release release;
        return visit(weight, [&](const auto& w) { return Tensor(embedding(w, idx)); });
      },
      py::arg("input"), py::arg("weight"), "weight [V, C], ids [...] -> [..., C] (torch.nn.functional.embedding)");
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const py::object& targets, long ignore_index) {
        IndexArray y = to_ids(targets);
        py::gil_scoped_release release;
        return visit(logits,
                     [&](const auto& v) { return Tensor(cross_entropy(v, y, static_cast<Index>(ignore_index))); });
      },
      py::arg("input"), py::arg("target"), py::arg("ignore_index") = -1,
      "logits [..., V], integer targets [...] -> the mean loss over targets that are not ignore_index");
  m.def(
      "dropout",
      [](const Tensor& a, double p, bool training, Rng& rng) {
        return visit(a, [&](const auto& v) {
          using S = typename std::decay_t<decltype(v.value())>::value_type;
          return Tensor(dropout(v, static_cast<S>(p), training, rng));
        });
      },
      py::arg("input"), py::arg("p"), py::arg("training"), py::arg("generator"), Release());
  m.def(
      "causal_self_attention",
      [](const Tensor& qkv, std::size_t n_head, double dropout_p, bool training, Rng* rng, bool need_weights) {
        Rng local(0);
        if (!rng) {
          if (training && dropout_p > 0) {
            throw std::invalid_argument("causal_self_attention with dropout in training needs a generator=");
          }
          rng = &local;
        }
        return visit(qkv, [&](const auto& v) -> py::object {
          using S = typename std::decay_t<decltype(v.value())>::value_type;
          Array<S> weights;
          Tensor y;
          {
            py::gil_scoped_release release;
            AttentionOptions options;
            options.n_head = n_head;
            options.dropout = dropout_p;
            options.training = training;
            y = causal_self_attention(v, options, *rng, need_weights ? &weights : nullptr);
          }
          if (!need_weights) return py::cast(y);
          return py::make_tuple(y, to_numpy_copy(weights));
        });
      },
      py::arg("qkv"), py::arg("n_head"), py::arg("dropout") = 0.0, py::arg("training") = false,
      py::arg("generator") = py::none(), py::arg("need_weights") = false,
      "qkv [B,T,3C] -> y [B,T,C] (and the weights [B,H,T,T] with need_weights=True): the fused attention op");
  m.def(
      "rotary_qk",
      [](const Tensor& qkv, std::size_t n_head, double base, std::size_t pos0) {
        return visit(qkv, [&](const auto& v) { return Tensor(rotary_qk(v, n_head, base, pos0)); });
      },
      py::arg("qkv"), py::arg("n_head"), py::arg("base") = 10000.0, py::arg("pos0") = 0, Release());
  m.def(
      "permute",
      [](const Tensor& a, const std::vector<std::size_t>& perm) {
        return visit(a, [&](const auto& v) { return Tensor(permute(v, perm)); });
      },
      py::arg("input"), py::arg("dims"), Release());
  m.def(
      "transpose",
      [](const Tensor& a, long d0, long d1) {
        return visit(a, [&](const auto& v) { return Tensor(transpose(v, d0, d1)); });
      },
      py::arg("input"), py::arg("dim0"), py::arg("dim1"), Release());
  m.def(
      "reshape",
      [](const Tensor& a, const std::vector<long>& shape) {
        return visit(a, [&](const auto& v) { return Tensor(reshape(v, shape)); });
      },
      py::arg("input"), py::arg("shape"), Release());
  m.def(
      "split",
      [](const Tensor& a, const std::vector<std::size_t>& sizes, long dim) {
        return visit(a, [&](const auto& v) {
          std::vector<Tensor> out;
          for (auto& p : split(v, dim, sizes)) out.emplace_back(std::move(p));
          return out;
        });
      },
      py::arg("input"), py::arg("split_sizes"), py::arg("dim") = -1, Release());
  m.def(
      "cat",
      [](const std::vector<Tensor>& parts, long dim) {
        if (parts.empty()) throw std::invalid_argument("cat needs at least one tensor");
        return visit(parts[0], [&](const auto& first) {
          using V = std::decay_t<decltype(first)>;
          std::vector<V> vs;
          for (const Tensor& p : parts)
            vs.push_back(std::get<V>(visit2(parts[0], p, [](const auto&, const auto& y) { return y; }).var));
          return Tensor(concat(vs, dim));
        });
      },
      py::arg("tensors"), py::arg("dim") = 0, Release());

  // ---- grad mode
  struct NoGrad {
    std::unique_ptr<NoGradGuard> guard;
  };
  py::class_<NoGrad>(m, "no_grad", "with tf.no_grad(): ops record nothing (their results are constants)")
      .def(py::init<>())
      .def("__enter__", [](NoGrad& g) { g.guard = std::make_unique<NoGradGuard>(); })
      .def("__exit__", [](NoGrad& g, const py::args&) { g.guard.reset(); });
  m.def("is_grad_enabled", &grad_enabled);
  m.def("set_num_threads", &set_num_threads, py::arg("n"), "threads of the library's kernels (n >= 1)");
  m.def("get_num_threads", &num_threads);

  // ---- the C++ side of the per-op overhead benchmark (scripts/bench_python.py): `calls` times the op that a + b
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

  // ---- gradcheck: float64 central differences against backward(), the report of tf::gradcheck
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
        for (const auto& [name, t] : named) params.emplace_back(name, t.as<double>());
        GradcheckOptions opts;
        opts.eps = eps;
        opts.rtol = rtol;
        opts.atol = atol;
        return gradcheck_params([&fn] { return py::cast<Tensor>(fn()).as<double>(); }, params, opts);
      },
      py::arg("fn"), py::arg("params"), py::arg("eps"), py::arg("rtol"), py::arg("atol"));
}

}  // namespace tf::python
