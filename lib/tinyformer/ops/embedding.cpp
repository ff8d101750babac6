// Embedding lookup: row ids[p] of the table for every position p.
//   weight [V, C], ids [...] (e.g. [B, T]) -> out [..., C],   out[p, :] = weight[ids[p], :]
//   dweight[v, :] = sum over positions p with ids[p] == v of dout[p, :]   (scatter-add: repeated ids add up)
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "tinyformer/ops/ops.hpp"

namespace tf {

// weight [V, C], ids [...] -> [..., C]
template <class S>
Var<S> embedding(const Var<S>& weight, const IndexArray& ids) {
  check_input(weight, "embedding", "weight");
  check_input(ids, "embedding", "ids");
  const Shape wshape = weight.shape();
  if (wshape.size() != 2)
    throw std::invalid_argument(
        fmt::format("embedding: weight must be a [V, C] table, got shape {}", shape_str(wshape)));
  const std::size_t V = wshape[0], C = wshape[1];
  const Shape id_shape = to_shape(ids.shape());
  const std::size_t N = ids.size();
  const Index* id = ids.data();
  for (std::size_t p = 0; p < N; ++p)
    if (id[p] < 0 || static_cast<std::size_t>(id[p]) >= V)
      throw std::invalid_argument(fmt::format(
          "embedding: id {} at position {} of ids {} is out of range for a table of V = {} rows (valid ids: 0..{})",
          id[p], position_str(p, id_shape), shape_str(id_shape), V, static_cast<long long>(V) - 1));

  Shape out_shape = id_shape;
  out_shape.push_back(C);
  Array<S> out = Array<S>::from_shape(out_shape);
  const S* w = weight.value().data();
  S* o = out.data();
  for (std::size_t p = 0; p < N; ++p) {
    const S* src = w + static_cast<std::size_t>(id[p]) * C;
    S* dst = o + p * C;
    for (std::size_t j = 0; j < C; ++j) dst[j] = src[j];
  }

  return make_result<S>(
      std::move(out), {weight},
      [ids, N, C](Node<S>& self) {
        Node<S>& nw = *self.inputs[0];
        if (!nw.requires_grad) return;
        if (!nw.has_grad) {  // first gradient: start from zeros in place
          nw.grad = Array<S>::from_shape(nw.value.shape());
          nw.grad.fill(S(0));
          nw.has_grad = true;
        }
        S* dw = nw.grad.data();  // scatter-add straight into the accumulated gradient
        const S* dy = self.grad.data();
        const Index* id = ids.data();
        for (std::size_t p = 0; p < N; ++p) {
          S* dst = dw + static_cast<std::size_t>(id[p]) * C;
          const S* src = dy + p * C;
          for (std::size_t j = 0; j < C; ++j) dst[j] += src[j];
        }
      },
      "embedding");
}

template Var<float> embedding<float>(const Var<float>&, const IndexArray&);
template Var<double> embedding<double>(const Var<double>&, const IndexArray&);

}  // namespace tf
