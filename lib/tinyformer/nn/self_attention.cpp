#include "tinyformer/nn/self_attention.hpp"

#include <cmath>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

template <class S>
struct CausalSelfAttention<S>::Standalone {
  config::ModelConfig cfg;
  Rng init;
  std::shared_ptr<Rng> dropout;
};

template <class S>
CausalSelfAttention<S>::CausalSelfAttention(std::size_t d_model, std::size_t n_head,
                                            const SelfAttentionOptions& options)
    : CausalSelfAttention([&] {
        config::ModelConfig cfg;
        cfg.d_model = d_model;
        cfg.n_head = n_head;
        cfg.n_kv_head = options.n_kv_head;
        cfg.bias = options.bias;
        cfg.dropout = options.dropout;
        cfg.init = options.init;
        cfg.attention = options.attention;
        cfg.position = options.rope ? config::Position::rope : config::Position::learned;
        Rng init(options.seed);
        auto dropout = std::make_shared<Rng>(init.split());  // as GPT splits its dropout generator from its seed
        return Standalone{cfg, init, std::move(dropout)};
      }()) {}

template <class S>
CausalSelfAttention<S>::CausalSelfAttention(Standalone&& s) : CausalSelfAttention(s.cfg, s.init, s.dropout) {}

namespace {
// The sizes a layer needs, checked before anything is built; returns d_model.
std::size_t checked_d_model(const config::ModelConfig& cfg) {
  if (cfg.d_model == 0 || cfg.n_head == 0 || cfg.d_model % cfg.n_head != 0)
    throw std::invalid_argument(
        fmt::format("CausalSelfAttention: d_model = {} must be a positive multiple of n_head = {} (n_head at least 1)",
                    cfg.d_model, cfg.n_head));
  if (cfg.n_kv_head != 0 && cfg.n_head % cfg.n_kv_head != 0)
    throw std::invalid_argument(fmt::format(
        "CausalSelfAttention: n_kv_head = {} must divide n_head = {} (or be 0: n_head)", cfg.n_kv_head, cfg.n_head));
  return cfg.d_model;
}
}  // namespace

template <class S>
CausalSelfAttention<S>::CausalSelfAttention(const config::ModelConfig& cfg, Rng& init_rng,
                                            std::shared_ptr<Rng> dropout_rng)
    : c_attn(checked_d_model(cfg), qkv_width(cfg), cfg.bias, cfg.init, init_rng),
      c_proj(cfg.d_model, cfg.d_model, cfg.bias, cfg.init, init_rng),
      d_model_(cfg.d_model),
      n_head_(cfg.n_head),
      heads_{cfg.n_head, cfg.dropout, false, kDefaultAttentionKeepBytes, cfg.n_kv_head},
      dropout_(static_cast<S>(cfg.dropout)),
      dropout_rng_(std::move(dropout_rng)),
      impl_(cfg.attention),
      rope_(cfg.position == config::Position::rope) {
  if (!dropout_rng_) throw std::invalid_argument("CausalSelfAttention: dropout_rng is null");
  this->register_module("c_attn", c_attn);
  this->register_module("c_proj", c_proj);
}

namespace {
// Key/value heads: model.n_kv_head (grouped-query attention), 0 standing for n_head.
std::size_t kv_heads(const AttentionOptions& heads) { return heads.n_kv_head == 0 ? heads.n_head : heads.n_kv_head; }
}  // namespace

// qkv [B,T,(H+2Hkv)D] before rope -> q [B,T,H,D], k and v [B,T,Hkv,D], through their hook points, then turned by
// position with rope (TransformerLens' hook_q and hook_k come before the rotation too).
template <class S>
std::vector<Var<S>> CausalSelfAttention<S>::hooked_qkv(const Var<S>& qkv, const HookScope<S>& hooks) const {
  const std::size_t B = qkv.size(0), T = qkv.size(1), C = d_model_, H = n_head_, D = C / H, Hkv = kv_heads(heads_);
  const std::vector<std::size_t> widths{C, Hkv * D, Hkv * D};
  const auto parts = split(qkv, -1, widths);
  std::vector<Var<S>> out;
  const char* names[] = {"attn.hook_q", "attn.hook_k", "attn.hook_v"};
  for (std::size_t i = 0; i < 3; ++i)
    out.push_back(hooks(names[i], reshape(parts[i], {long(B), long(T), long(widths[i] / D), long(D)})));
  if (!rope_) return out;
  std::vector<Var<S>> flat;
  for (std::size_t i = 0; i < 3; ++i) flat.push_back(reshape(out[i], {long(B), long(T), long(widths[i])}));
  const auto turned = split(rotary_qk(concat(flat, -1), n_head_, 10000.0, 0, heads_.n_kv_head), -1, widths);
  for (std::size_t i = 0; i < 3; ++i) out[i] = reshape(turned[i], {long(B), long(T), long(widths[i] / D), long(D)});
  return out;
}

template <class S>
Var<S> CausalSelfAttention<S>::attend_composed(Var<S> qkv, const HookScope<S>& hooks) {
  const std::size_t B = qkv.size(0), T = qkv.size(1), C = d_model_, H = n_head_, D = C / H, Hkv = kv_heads(heads_);
  std::vector<Var<S>> qkv_heads;  // q [B,T,H,D], k and v [B,T,Hkv,D]
  if (hooks.needs_parts("attn.")) {
    qkv_heads = hooked_qkv(qkv, hooks);
  } else {
    if (rope_) qkv = rotary_qk(qkv, n_head_, 10000.0, 0, heads_.n_kv_head);  // q and k turned by position
    const auto parts = split(qkv, -1, {C, Hkv * D, Hkv * D});                // q [B,T,C], k and v [B,T,Hkv D]
    for (std::size_t i = 0; i < 3; ++i)
      qkv_heads.push_back(reshape(parts[i], {long(B), long(T), long(i == 0 ? H : Hkv), long(D)}));
  }
  auto repeat_kv = [&](const Var<S>& t) {  // [B,Hkv,T,D] -> [B,H,T,D]: k/v head g serves q heads g G .. g G + G - 1
    if (Hkv == H) return t;
    std::vector<Var<S>> repeated;
    for (const auto& part : split(t, 1, std::vector<std::size_t>(Hkv, 1)))
      for (std::size_t r = 0; r < H / Hkv; ++r) repeated.push_back(part);
    return concat(repeated, 1);
  };
  const std::vector<std::size_t> to_heads{0, 2, 1, 3};  // [B,T,n,D] <-> [B,n,T,D]
  const Var<S> q = permute(qkv_heads[0], to_heads), k = repeat_kv(permute(qkv_heads[1], to_heads)),
               v = repeat_kv(permute(qkv_heads[2], to_heads));
  Var<S> att = scale(matmul(q, k, false, true), S(1) / std::sqrt(static_cast<S>(D)));  // [B,H,T,T]
  att = hooks("attn.hook_pattern", softmax(hooks("attn.hook_attn_scores", causal_mask(att))));
  if (record_) weights_ = att.value();
  att = dropout(att, dropout_, this->training(), *dropout_rng_);
  const Var<S> z = hooks("attn.hook_z", permute(matmul(att, v), to_heads));  // [B,H,T,D] -> [B,T,H,D]
  return reshape(z, {long(B), long(T), long(C)});                            // [B,T,C]
}

template <class S>
Var<S> CausalSelfAttention<S>::forward(const Var<S>& x, const HookScope<S>& hooks) {
  Var<S> qkv = c_attn.forward(x);  // [B,T,(H+2Hkv)D]
  Var<S> y;
  if (impl_ == config::AttentionImpl::fused && !hooks.needs_parts("attn.")) {
    if (rope_) qkv = rotary_qk(qkv, n_head_, 10000.0, 0, heads_.n_kv_head);  // q and k turned by position
    y = causal_self_attention(qkv, training_heads(), *dropout_rng_, record_ ? &weights_ : nullptr);
  } else {
    // The composed ops, also for a fused layer when hooks read or replace q, k, v, the scores, the pattern or z: the
    // fused kernel has none of them as a tensor. Its results differ from the kernel's by rounding only.
    y = attend_composed(qkv, hooks);
  }
  if (record_) head_outputs_ = y.value();
  if (!ablated_.empty()) y = apply_ablation(y);
  return dropout(c_proj.forward(y), dropout_, this->training(), *dropout_rng_);  // residual dropout
}

template <class S>
KVCache<S> CausalSelfAttention<S>::make_cache(std::size_t capacity) const {
  return make_kv_cache<S>(kv_heads(heads_), capacity, d_model_ / n_head_);
}

template <class S>
Var<S> CausalSelfAttention<S>::forward_cached(const Var<S>& x, KVCache<S>& cache) {
  if (x.shape().size() != 3 || x.size(0) != 1 || x.size(2) != d_model_)
    throw std::invalid_argument(
        fmt::format("forward_cached: x must be [1,n,{}], got {}", d_model_, shape_str(x.shape())));
  Var<S> qkv = c_attn.forward(x);  // [1,n,3C]
  if (rope_) qkv = rotary_qk(qkv, n_head_, 10000.0, cache.length, heads_.n_kv_head);
  return c_proj.forward(causal_self_attention_cached(qkv, cache, heads_));
}

template <class S>
void CausalSelfAttention<S>::ablate_head(std::size_t h, std::optional<Array<S>> replacement) {
  const std::size_t D = d_model_ / n_head_;
  if (h >= n_head_)
    throw std::invalid_argument(fmt::format("ablate_head: head {} of a layer with {} heads", h, n_head_));
  if (replacement && (replacement->dimension() != 2 || replacement->shape()[1] != D))
    throw std::invalid_argument(fmt::format("ablate_head: the replacement must be [T,D] with D = {}, got {}", D,
                                            shape_str(to_shape(replacement->shape()))));
  ablated_.emplace_back(h, std::move(replacement));
}

template <class S>
void CausalSelfAttention<S>::clear_ablation() {
  ablated_.clear();
}

// y [B,T,C] -> y * keep + fill: keep [C] is 0 on the ablated heads' columns and 1 elsewhere; fill [T,C] holds the
// replacements there (zeros for a zero ablation).
template <class S>
Var<S> CausalSelfAttention<S>::apply_ablation(const Var<S>& y) const {
  const std::size_t T = y.size(1), C = d_model_, D = C / n_head_;
  Array<S> keep = xt::ones<S>({C});
  Array<S> fill = xt::zeros<S>({T, C});
  for (const auto& [h, r] : ablated_) {
    if (r && r->shape()[0] < T)
      throw std::invalid_argument(
          fmt::format("ablation of head {}: the replacement has {} rows, the input {}", h, r->shape()[0], T));
    for (std::size_t d = 0; d < D; ++d) {
      keep(h * D + d) = S(0);
      if (r)
        for (std::size_t t = 0; t < T; ++t) fill(t, h * D + d) = (*r)(t, d);
    }
  }
  return add(mul(y, Var<S>(keep)), Var<S>(fill));
}

template class CausalSelfAttention<float>;
template class CausalSelfAttention<double>;

}  // namespace tf::nn
