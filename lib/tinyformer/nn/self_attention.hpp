#pragma once
// Causal multi-head self-attention (nanoGPT's CausalSelfAttention):
//   qkv = c_attn(x) [B,T,3C] (q and k rotated by position with model.position: rope); with model.n_kv_head < n_head
//   (grouped-query attention) [B,T,(H+2Hkv)D]: H q heads, then Hkv k heads, then Hkv v heads (ops.hpp)
//   -> per head softmax(mask(q k^T / sqrt(D))) v -> heads side by side [B,T,C] -> c_proj
// Two implementations of the middle step: the fused op with a hand-written backward (default, fast) and
// the composition of primitive ops (split, reshape, permute, matmul, scale, causal_mask, softmax,
// dropout), kept as the readable reference. Tests show the two agree.
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/hooks.hpp"
#include "tinyformer/nn/layers.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

// The keys and values of the positions a decoder has seen, for one layer (ops.hpp): k and v [Hkv, capacity, D].
using tf::KVCache;

// A standalone attention layer's settings; each default is the model section's (docs/config.md).
struct SelfAttentionOptions {
  std::size_t n_kv_head = 0;  // key/value heads (grouped-query attention), a divisor of n_head; 0: n_head
  bool bias = true;
  double dropout = 0;  // on the attention weights and the output, in training
  InitScheme init = InitScheme::xavier_uniform;
  config::AttentionImpl attention = config::AttentionImpl::fused;
  bool rope = false;       // rotary positions on q and k
  std::uint64_t seed = 0;  // the weights' initialisation; the dropout generator is split from it
};

template <class S>
class CausalSelfAttention : public Module<S> {
 public:
  // A layer on its own: x [B,T,d_model]. std::invalid_argument when d_model or n_head is 0, when n_head does not
  // divide d_model, or options.n_kv_head (other than 0) does not divide n_head.
  CausalSelfAttention(std::size_t d_model, std::size_t n_head, const SelfAttentionOptions& options = {});
  // A layer of a model: uses d_model, n_head, n_kv_head, bias, dropout, init, attention (fused or composed) and
  // position of `cfg`; the weights are drawn from init_rng (used only here), dropout from `dropout_rng`, which the
  // layer shares with the model's other modules (it keeps it alive).
  CausalSelfAttention(const config::ModelConfig& cfg, Rng& init_rng, std::shared_ptr<Rng> dropout_rng);
  // x [B,T,C] -> [B,T,C]. With hooks (nn/hooks.hpp) on this layer's attn.hook_q, k, v, attn_scores, pattern or z, or
  // a cache, the composed attention is taken whatever `attention` says: only it has those as tensors.
  Var<S> forward(const Var<S>& x, const HookScope<S>& hooks = {});
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
  struct Standalone;  // a config and generators made from the standalone constructor's arguments
  explicit CausalSelfAttention(Standalone&& s);
  // qkv [B,T,(H+2Hkv)D] before rope -> the heads' outputs [B,T,C], through the hook points of q, k, v, the scores,
  // the pattern and z.
  Var<S> attend_composed(Var<S> qkv, const HookScope<S>& hooks);
  std::vector<Var<S>> hooked_qkv(const Var<S>& qkv, const HookScope<S>& hooks) const;
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
  std::shared_ptr<Rng> dropout_rng_;
  config::AttentionImpl impl_;
  bool rope_;  // model.position: rope
  bool record_ = false;
  Array<S> weights_, head_outputs_;
  std::vector<std::pair<std::size_t, std::optional<Array<S>>>> ablated_;  // (head, replacement [T,D] or zeros)
};

extern template class CausalSelfAttention<float>;
extern template class CausalSelfAttention<double>;

}  // namespace tf::nn
