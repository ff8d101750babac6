// Fused causal multi-head self-attention: scores, mask, softmax, dropout and the weighted sum in one op,
// reading each head's q/k/v columns in place from qkv [B,T,3C] (no permute copies). Heads run in parallel;
// each head's loops (ops/kernels/causal_head.cpp) touch only the causal lower triangle.
//
// Per batch entry b and head h, with Q, K, V [T,D] (row stride 3C), scale = 1/sqrt(D):
//   forward   P = softmax(mask(scale Q K^T))   [T,T]    Pd = P * M / (1-p)    Y = Pd V   [T,D] (row stride C)
//   backward  dPd = dY V^T      dV = Pd^T dY      dP = dPd * M / (1-p)
//             dS = P * (dP - rowsum(dP * P))      (softmax backward; masked entries have P = 0)
//             dQ = scale dS K   dK = scale dS^T Q
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

template <class S>
Var<S> causal_self_attention(const Var<S>& qkv, std::size_t n_head, S dropout_p, bool training, Rng& rng,
                             Array<S>* weights) {
  const Shape shape = qkv.shape();
  if (shape.size() != 3 || shape[2] % 3 != 0)
    throw std::invalid_argument(
        fmt::format("causal_self_attention: qkv must be [B,T,3C], got {}", shape_str(shape)));
  const std::size_t B = shape[0], T = shape[1], C = shape[2] / 3;
  if (n_head == 0 || C % n_head != 0)
    throw std::invalid_argument(fmt::format("causal_self_attention: C = {} is not divisible by n_head = {}", C, n_head));
  if (!(dropout_p >= 0 && dropout_p < 1))
    throw std::invalid_argument(fmt::format("causal_self_attention: dropout {} must be in [0, 1)", dropout_p));
  const std::size_t H = n_head, D = C / H, ld_qkv = 3 * C;
  const S scale = S(1) / std::sqrt(static_cast<S>(D));
  const bool use_dropout = training && dropout_p > 0;
  const S keep_scale = use_dropout ? S(1) / (S(1) - dropout_p) : S(1);

  Array<S> probs = Array<S>::from_shape({B, H, T, T});  // P, before dropout
  Array<S> dropped;                                      // Pd = P * M / (1-p), only with dropout
  if (use_dropout) dropped = Array<S>::from_shape({B, H, T, T});
  Array<S> y = Array<S>::from_shape({B, T, C});
  if (use_dropout)  // the mask is drawn in (b, h, i, j) order on this thread, so it does not depend on the split
    for (S& m : dropped) m = rng.uniform() >= dropout_p ? keep_scale : S(0);
  const S* base = qkv.value().data();
  parallel_for(B * H, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<S> scratch(kernels::attention_head::scratch_size(T, D));
    for (std::size_t bh = begin; bh < end; ++bh) {
      const std::size_t b = bh / H, h = bh % H;
      const S* q = base + b * T * ld_qkv + h * D;
      S* p = probs.data() + bh * T * T;
      // P = softmax(mask(scale Q K^T))  [T,T]
      kernels::attention_head::scores_softmax(q, q + C, ld_qkv, T, D, scale, p, scratch.data());
      const S* pv = p;
      if (use_dropout) {  // Pd = P * (mask / (1-p)), in place over the mask
        S* pd = dropped.data() + bh * T * T;
        for (std::size_t i = 0; i < T * T; ++i) pd[i] *= p[i];
        pv = pd;
      }
      // Y_h = Pd V  [T,D], written into columns h*D.. of y [B,T,C]
      kernels::attention_head::weighted_sum(pv, q + 2 * C, ld_qkv, T, D, y.data() + b * T * C + h * D, C);
    }
  });
  if (weights) *weights = probs;

  return make_result<S>(std::move(y), {qkv},
                        [B, T, C, H, D, scale, use_dropout, keep_scale, probs = std::move(probs),
                         dropped = std::move(dropped)](Node<S>& self) {
    Node<S>& in = *self.inputs[0];
    const std::size_t ld = 3 * C;
    Array<S> dqkv = Array<S>::from_shape({B, T, ld});
    const S* x = in.value.data();
    parallel_for(B * H, 1, [&](std::size_t begin, std::size_t end) {
      std::vector<S> scratch(kernels::attention_head::scratch_size(T, D));
      for (std::size_t bh = begin; bh < end; ++bh) {
        const std::size_t b = bh / H, h = bh % H;
        const S* q = x + b * T * ld + h * D;
        S* dq = dqkv.data() + b * T * ld + h * D;
        const S* p = probs.data() + bh * T * T;
        const S* pd = use_dropout ? dropped.data() + bh * T * T : p;
        kernels::attention_head::backward(q, q + C, q + 2 * C, ld, p, pd, use_dropout, keep_scale,
                                 self.grad.data() + b * T * C + h * D, C, T, D, scale, dq, dq + C, dq + 2 * C,
                                 scratch.data());
      }
    });
    accumulate_grad(in, dqkv);
  }, "causal_self_attention");
}

template Var<float> causal_self_attention<float>(const Var<float>&, std::size_t, float, bool, Rng&, Array<float>*);
template Var<double> causal_self_attention<double>(const Var<double>&, std::size_t, double, bool, Rng&,
                                                   Array<double>*);

}  // namespace tf
