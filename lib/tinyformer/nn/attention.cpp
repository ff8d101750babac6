#include "tinyformer/nn/attention.hpp"

#include <cmath>

#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

template <class S>
CausalSelfAttention<S>::CausalSelfAttention(const config::ModelConfig& cfg, Rng& init_rng, Rng& dropout_rng)
    : c_attn(cfg.d_model, 3 * cfg.d_model, cfg.bias, cfg.init, init_rng),
      c_proj(cfg.d_model, cfg.d_model, cfg.bias, cfg.init, init_rng),
      d_model_(cfg.d_model),
      n_head_(cfg.n_head),
      dropout_(static_cast<S>(cfg.dropout)),
      dropout_rng_(dropout_rng),
      impl_(cfg.attention),
      rope_(cfg.position == config::Position::rope) {
  this->register_module("c_attn", c_attn);
  this->register_module("c_proj", c_proj);
}

template <class S>
Var<S> CausalSelfAttention<S>::attend_composed(const Var<S>& qkv) {
  const std::size_t B = qkv.size(0), T = qkv.size(1), C = d_model_, H = n_head_, D = C / H;
  const auto qkv_parts = split(qkv, -1, {C, C, C});  // q, k, v [B,T,C]
  auto heads = [&](const Var<S>& t) {                // [B,T,C] -> [B,H,T,D]
    return permute(reshape(t, {long(B), long(T), long(H), long(D)}), {0, 2, 1, 3});
  };
  const Var<S> q = heads(qkv_parts[0]), k = heads(qkv_parts[1]), v = heads(qkv_parts[2]);
  Var<S> att = scale(matmul(q, k, false, true), S(1) / std::sqrt(static_cast<S>(D)));  // [B,H,T,T]
  att = softmax(causal_mask(att));
  if (record_) weights_ = att.value();
  att = dropout(att, dropout_, this->training(), dropout_rng_);
  const Var<S> y = matmul(att, v);                                                   // [B,H,T,D]
  return reshape(permute(y, {0, 2, 1, 3}), {long(B), long(T), long(C)});             // [B,T,C]
}

template <class S>
Var<S> CausalSelfAttention<S>::forward(const Var<S>& x) {
  Var<S> qkv = c_attn.forward(x);  // [B,T,3C]
  if (rope_) qkv = rotary_qk(qkv, n_head_);  // q and k turned by position
  Var<S> y;
  if (impl_ == config::AttentionImpl::fused)
    y = causal_self_attention(qkv, n_head_, dropout_, this->training(), dropout_rng_, record_ ? &weights_ : nullptr);
  else
    y = attend_composed(qkv);
  return dropout(c_proj.forward(y), dropout_, this->training(), dropout_rng_);  // residual dropout
}

template class CausalSelfAttention<float>;
template class CausalSelfAttention<double>;

}  // namespace tf::nn
