#pragma once
// Causal multi-head self-attention (nanoGPT's CausalSelfAttention):
//   qkv = c_attn(x) [B,T,3C] (q and k rotated by position with model.position: rope)
//   -> per head softmax(mask(q k^T / sqrt(D))) v -> heads side by side [B,T,C] -> c_proj
// Two implementations of the middle step: the fused op with a hand-written backward (default, fast) and
// the composition of primitive ops (split, reshape, permute, matmul, scale, causal_mask, softmax,
// dropout), kept as the readable reference. Tests show the two agree.
#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/layers.hpp"

namespace tf::nn {

template <class S>
class CausalSelfAttention : public Module<S> {
 public:
  // Uses d_model, n_head, bias, dropout, init, attention (fused or composed) and position of `cfg`.
  CausalSelfAttention(const config::ModelConfig& cfg, Rng& init_rng, Rng& dropout_rng);
  Var<S> forward(const Var<S>& x);  // x [B,T,C] -> [B,T,C]

  // When on, forward() keeps the attention weights (before dropout) of its last call: [B,H,T,T].
  void record_weights(bool on) { record_ = on; }
  const Array<S>& last_weights() const { return weights_; }

  Linear<S> c_attn, c_proj;

 private:
  Var<S> attend_composed(const Var<S>& qkv);

  std::size_t d_model_, n_head_;
  S dropout_;
  Rng& dropout_rng_;
  config::AttentionImpl impl_;
  bool rope_;  // model.position: rope
  bool record_ = false;
  Array<S> weights_;
};

extern template class CausalSelfAttention<float>;
extern template class CausalSelfAttention<double>;

}  // namespace tf::nn
