// Fused causal multi-head self-attention: scores, mask, softmax, dropout and the weighted sum in one op,
// reading each head's q/k/v columns in place from qkv [B,T,3C] (no permute copies). Heads run in parallel;
// each head's loops (ops/kernels/causal_head.cpp) touch only the causal lower triangle.
//
// Per batch entry b and head h, with Q, K, V [T,D] (row stride 3C), scale = 1/sqrt(D):
//   forward   P = softmax(mask(scale Q K^T))   [T,T]    Pd = P * M / (1-p)    Y = Pd V   [T,D] (row stride C)
//   backward  dPd = dY V^T      dV = Pd^T dY      dP = dPd * M / (1-p)
//             dS = P * (dP - rowsum(dP * P))      (softmax backward; masked entries have P = 0)
//             dQ = scale dS K   dK = scale dS^T Q
//
// Memory: P [B,H,T,T] is what the backward needs besides qkv. When it is small (at most 32 MB for the whole layer,
// set_attention_keep_limit) it is kept from the forward; when it is larger (long sequences: 64 MB a layer at B 2, H 8,
// T 1024) only the dropout mask is kept, one byte a weight, and the backward computes each head's P again from Q and K,
// with the same loops in the same order, so the values are the same to the bit either way. Each thread then holds one
// head's P (T x T) at a time.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

namespace {

std::size_t g_keep_weights_bytes = kDefaultAttentionKeepBytes;

namespace head = kernels::attention_head;

struct AttentionShape {
  std::size_t B, T, C, H, D;
  std::size_t ld() const { return 3 * C; }  // row stride of qkv
};

// What the forward leaves for the backward besides qkv.
template <class S>
struct Saved {
  Array<S> probs;                  // [B,H,T,T] P, when kept
  Array<S> dropped;                // [B,H,T,T] Pd, when kept and with dropout
  std::vector<std::uint8_t> keep;  // [B,H,T,T] the dropout mask, when P is recomputed (1: kept)
  bool recompute = false, dropout = false;
  S keep_scale = S(1);
};

// One head's P (into p) and, with dropout, Pd (into pd; else pd = p): from Saved when kept, else computed again.
template <class S>
const S* head_weights(const Saved<S>& saved, const S* q, const AttentionShape& a, std::size_t bh, S scale, S* p, S* pd,
                      S* scratch) {
  const std::size_t TT = a.T * a.T;
  if (!saved.recompute) return saved.dropout ? saved.dropped.data() + bh * TT : saved.probs.data() + bh * TT;
  head::scores_softmax(q, q + a.C, a.ld(), a.T, a.D, scale, p, scratch);
  if (!saved.dropout) return p;
  const std::uint8_t* m = saved.keep.data() + bh * TT;
  for (std::size_t i = 0; i < TT; ++i) pd[i] = m[i] ? p[i] * saved.keep_scale : S(0);
  return pd;
}

// Y = Pd V for every head, P computed (and kept or not), the dropout mask drawn in (b, h, i, j) order.
template <class S>
Array<S> attention_forward(const S* base, const AttentionShape& a, S dropout_p, bool use_dropout, Rng& rng,
                           Saved<S>& saved, Array<S>* weights) {
  const std::size_t TT = a.T * a.T, BH = a.B * a.H;
  const S scale = S(1) / std::sqrt(static_cast<S>(a.D));
  saved.dropout = use_dropout;
  saved.keep_scale = use_dropout ? S(1) / (S(1) - dropout_p) : S(1);
  saved.recompute = !weights && BH * TT * sizeof(S) > g_keep_weights_bytes;
  if (use_dropout) {  // the mask is drawn on this thread, so it does not depend on the split
    if (saved.recompute) {
      saved.keep.resize(BH * TT);
      for (auto& m : saved.keep) m = rng.uniform() >= dropout_p ? 1 : 0;
    } else {
      saved.dropped = Array<S>::from_shape({a.B, a.H, a.T, a.T});
      for (S& m : saved.dropped) m = rng.uniform() >= dropout_p ? saved.keep_scale : S(0);
    }
  }
  if (!saved.recompute) saved.probs = Array<S>::from_shape({a.B, a.H, a.T, a.T});
  Array<S> y = Array<S>::from_shape({a.B, a.T, a.C});
  parallel_for(BH, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<S> scratch(head::scratch_size(a.T, a.D) + (saved.recompute ? 2 * TT : 0));
    S* p_buf = scratch.data() + head::scratch_size(a.T, a.D);
    for (std::size_t bh = begin; bh < end; ++bh) {
      const std::size_t b = bh / a.H, h = bh % a.H;
      const S* q = base + b * a.T * a.ld() + h * a.D;
      const S* pd;
      if (saved.recompute) {
        pd = head_weights(saved, q, a, bh, scale, p_buf, p_buf + TT, scratch.data());
      } else {
        S* p = saved.probs.data() + bh * TT;
        head::scores_softmax(q, q + a.C, a.ld(), a.T, a.D, scale, p, scratch.data());  // P = softmax(mask(scale Q K^T))
        pd = p;
        if (use_dropout) {  // Pd = P * (mask / (1-p)), in place over the mask
          S* d = saved.dropped.data() + bh * TT;
          for (std::size_t i = 0; i < TT; ++i) d[i] *= p[i];
          pd = d;
        }
      }
      head::weighted_sum(pd, q + 2 * a.C, a.ld(), a.T, a.D, y.data() + b * a.T * a.C + h * a.D, a.C,
                         scratch.data());  // Y_h = Pd V
    }
  });
  if (weights) *weights = saved.probs;
  return y;
}

// dqkv from dy [B,T,C], head by head.
template <class S>
Array<S> attention_backward(const S* x, const S* dy, const AttentionShape& a, const Saved<S>& saved) {
  const std::size_t TT = a.T * a.T;
  const S scale = S(1) / std::sqrt(static_cast<S>(a.D));
  Array<S> dqkv = Array<S>::from_shape({a.B, a.T, a.ld()});
  parallel_for(a.B * a.H, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<S> scratch(head::scratch_size(a.T, a.D) + (saved.recompute ? 2 * TT : 0));
    S* p_buf = scratch.data() + head::scratch_size(a.T, a.D);
    for (std::size_t bh = begin; bh < end; ++bh) {
      const std::size_t b = bh / a.H, h = bh % a.H;
      const S* q = x + b * a.T * a.ld() + h * a.D;
      S* dq = dqkv.data() + b * a.T * a.ld() + h * a.D;
      const S* pd = head_weights(saved, q, a, bh, scale, p_buf, p_buf + TT, scratch.data());
      const S* p = saved.recompute ? p_buf : saved.probs.data() + bh * TT;
      head::backward(q, q + a.C, q + 2 * a.C, a.ld(), p, pd, saved.dropout, saved.keep_scale,
                     dy + b * a.T * a.C + h * a.D, a.C, a.T, a.D, scale, dq, dq + a.C, dq + 2 * a.C, scratch.data());
    }
  });
  return dqkv;
}

}  // namespace

std::size_t set_attention_keep_limit(std::size_t bytes) {
  const std::size_t old = g_keep_weights_bytes;
  g_keep_weights_bytes = bytes;
  return old;
}

template <class S>
Var<S> causal_self_attention(const Var<S>& qkv, std::size_t n_head, S dropout_p, bool training, Rng& rng,
                             Array<S>* weights) {
  check_input(qkv, "causal_self_attention", "qkv");
  const Shape shape = qkv.shape();
  if (shape.size() != 3 || shape[2] % 3 != 0)
    throw std::invalid_argument(fmt::format("causal_self_attention: qkv must be [B,T,3C], got {}", shape_str(shape)));
  const std::size_t C = shape[2] / 3;
  if (n_head == 0 || C % n_head != 0)
    throw std::invalid_argument(
        fmt::format("causal_self_attention: C = {} is not divisible by n_head = {}", C, n_head));
  if (!(dropout_p >= 0 && dropout_p < 1))
    throw std::invalid_argument(fmt::format("causal_self_attention: dropout {} must be in [0, 1)", dropout_p));
  const AttentionShape a{shape[0], shape[1], C, n_head, C / n_head};
  auto saved = std::make_shared<Saved<S>>();
  Array<S> y = attention_forward(qkv.value().data(), a, dropout_p, training && dropout_p > 0, rng, *saved, weights);
  return make_result<S>(
      std::move(y), {qkv},
      [a, saved](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        accumulate_grad(in, attention_backward(in.value.data(), self.grad.data(), a, *saved));
      },
      "causal_self_attention");
}

template Var<float> causal_self_attention<float>(const Var<float>&, std::size_t, float, bool, Rng&, Array<float>*);
template Var<double> causal_self_attention<double>(const Var<double>&, std::size_t, double, bool, Rng&, Array<double>*);

}  // namespace tf
