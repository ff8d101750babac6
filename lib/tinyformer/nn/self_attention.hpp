#pragma once
// Causal multi-head self-attention (nanoGPT's CausalSelfAttention):
//   qkv = c_attn(x) [B,T,3C] (q and k rotated by position with model.position: rope)
//   -> per head softmax(mask(q k^T / sqrt(D))) v -> heads side by side [B,T,C] -> c_proj
// Two implementations of the middle step: the fused op with a hand-written backward (default, fast) and
// the composition of primitive ops (split, reshape, permute, matmul, scale, causal_mask, softmax,
// dropout), kept as the readable reference. Tests show the two agree.
#include <optional>
#include <utility>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/layers.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

// The keys and values of the positions a decoder has seen, for one layer (ops.hpp): k and v [H, capacity, D].
using tf::KVCache;

template <class S>
class CausalSelfAttention : public Module<S> {
 public:
  // Uses d_model, n_head, bias, dropout, init, attention (fused or composed) and position of `cfg`.
  CausalSelfAttention(const config::ModelConfig& cfg, Rng& init_rng, Rng& dropout_rng);
  Var<S> forward(const Var<S>& x);  // x [B,T,C] -> [B,T,C]
  // Decoding with a cache (no grad, eval mode: no dropout, no ablation): x [1,n,C] holds positions cache.length ..
  // cache.length + n - 1; their keys and values are appended to the cache (capacity permitting: std::length_error
  // otherwise) and each new query attends to every cached position up to its own (causal_self_attention_cached).
  // The maths of forward(), computed for the new rows only.
  Var<S> forward_cached(const Var<S>& x, KVCache<S>& cache);
  KVCache<S> make_cache(std::size_t capacity) const;

  // When on, forward() keeps the attention weights (before dropout) of its last call, [B,H,T,T], and the heads'
  // outputs before c_proj, [B,T,C] (head h in columns h*D..h*D+D-1).
  void record_weights(bool on) { record_ = on; }
  const Array<S>& last_weights() const { return weights_; }
  const Array<S>& last_head_outputs() const { return head_outputs_; }

  // Head ablation, for asking whether a head matters: forward() replaces head h's output before c_proj by
  // `replacement` [T,D] (its mean over some data, the same for every sequence), or by zeros without one.
  // Takes effect in every later forward until clear_ablation().
  void ablate_head(std::size_t h, std::optional<Array<S>> replacement = std::nullopt);
  void clear_ablation();

  Linear<S> c_attn, c_proj;

 private:
  Var<S> attend_composed(const Var<S>& qkv);
  Var<S> apply_ablation(const Var<S>& y) const;  // y [B,T,C]

  // The op's options with training() filled in.
  AttentionOptions training_heads() const {
    AttentionOptions o = heads_;
    o.training = this->training();
    return o;
  }

  std::size_t d_model_, n_head_;
  AttentionOptions heads_;  // the fused and the cached op's options (training: see training_heads)
  S dropout_;
  Rng& dropout_rng_;
  config::AttentionImpl impl_;
  bool rope_;  // model.position: rope
  bool record_ = false;
  Array<S> weights_, head_outputs_;
  std::vector<std::pair<std::size_t, std::optional<Array<S>>>> ablated_;  // (head, replacement [T,D] or zeros)
};

extern template class CausalSelfAttention<float>;
extern template class CausalSelfAttention<double>;

}  // namespace tf::nn
