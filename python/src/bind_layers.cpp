// The library's layer ops as functions (torch.nn.functional's names): linear, layer_norm, rms_norm, embedding,
// cross_entropy, dropout, gelu, silu, swiglu, causal_mask, the fused causal_self_attention and rotary_qk. Each calls
// the op in ops/ops.hpp on the Var a Tensor holds; the GIL is released while it runs.
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::python {

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// The Var of `t` in the storage of `like` (the layer ops take one scalar type; dtypes are promoted as for operators).
template <class V>
V same_storage(const Tensor& like, const Tensor& t) {
  return std::get<V>(visit2(like, t, [](const auto&, const auto& y) { return y; }).var);
}

void bind_activations(py::module_& m) {
#define TF_LAYER_UNARY(name)                                                                                          \
  m.def(                                                                                                              \
      #name, [](const Tensor& a) { return on_floating(a, [](const auto& v) { return name(v); }); }, py::arg("input"), \
      Release())
  TF_LAYER_UNARY(gelu);
  TF_LAYER_UNARY(silu);
  TF_LAYER_UNARY(swiglu);
  TF_LAYER_UNARY(causal_mask);
#undef TF_LAYER_UNARY
}

void bind_linear_and_norms(py::module_& m) {
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
        return visit2(x, w, [&](const auto& xv, const auto& wv) {
          using V = std::decay_t<decltype(xv)>;
          return linear(xv, wv, b ? same_storage<V>(x, *b) : V());
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), Release());
  m.def(
      "layer_norm",
      [](const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
        return visit2(x, w, [&](const auto& xv, const auto& wv) {
          using V = std::decay_t<decltype(xv)>;
          return layer_norm(xv, wv, same_storage<V>(x, b), static_cast<ScalarOfVar<V>>(eps));
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("bias"), py::arg("eps") = 1e-5, Release());
  m.def(
      "rms_norm",
      [](const Tensor& x, const Tensor& w, double eps) {
        return visit2(x, w, [&](const auto& xv, const auto& wv) {
          return rms_norm(xv, wv, static_cast<ScalarOfVar<decltype(xv)>>(eps));
        });
      },
      py::arg("input"), py::arg("weight"), py::arg("eps") = 1e-5, Release());
}

void bind_token_ops(py::module_& m) {
  m.def(
      "embedding",
      [](const py::object& ids, const Tensor& weight) {
        IndexArray idx = to_ids(ids);
        py::gil_scoped_release release;
        return on_floating(weight, [&](const auto& w) { return embedding(w, idx); });
      },
      py::arg("input"), py::arg("weight"),
      "weight [V, C], ids [...] (int64 tensor, NumPy array or lists) -> [..., C] (torch.nn.functional.embedding)");
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const py::object& targets, long ignore_index) {
        IndexArray y = to_ids(targets);
        py::gil_scoped_release release;
        return on_floating(logits,
                           [&](const auto& v) { return cross_entropy(v, y, static_cast<Index>(ignore_index)); });
      },
      py::arg("input"), py::arg("target"), py::arg("ignore_index") = -1,
      "logits [..., V], integer targets [...] (int64 tensor or NumPy) -> the mean loss over targets that are not "
      "ignore_index");
  m.def(
      "dropout",
      [](const Tensor& a, double p, bool training, Rng& rng) {
        return on_floating(
            a, [&](const auto& v) { return dropout(v, static_cast<ScalarOfVar<decltype(v)>>(p), training, rng); });
      },
      py::arg("input"), py::arg("p"), py::arg("training"), py::arg("generator"), Release());
}

void bind_attention(py::module_& m) {
  m.def(
      "causal_self_attention",
      [](const Tensor& qkv, std::size_t n_head, double dropout_p, bool training, Rng* rng, bool need_weights) {
        Rng local(0);
        if (!rng) {
          if (training && dropout_p > 0)
            throw std::invalid_argument("causal_self_attention with dropout in training needs a generator=");
          rng = &local;
        }
        return visit(floating(qkv), [&](const auto& v) -> py::object {
          Array<ScalarOfVar<decltype(v)>> weights;
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
        return on_floating(qkv, [&](const auto& v) { return rotary_qk(v, n_head, base, pos0); });
      },
      py::arg("qkv"), py::arg("n_head"), py::arg("base") = 10000.0, py::arg("pos0") = 0, Release());
}

}  // namespace

void bind_layers(py::module_& m) {
  bind_activations(m);
  bind_linear_and_norms(m);
  bind_token_ops(m);
  bind_attention(m);
}

}  // namespace tf::python
