#include "tinyformer/nn/gpt.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

template <class S>
MLP<S>::MLP(const config::ModelConfig& cfg, Rng& init_rng, std::shared_ptr<Rng> dropout_rng)
    : c_fc(cfg.d_model, mlp_fc_width(cfg), cfg.bias, cfg.init, init_rng),
      c_proj(mlp_hidden(cfg), cfg.d_model, cfg.bias, cfg.init, init_rng),
      kind_(cfg.mlp),
      dropout_(static_cast<S>(cfg.dropout)),
      dropout_rng_(std::move(dropout_rng)) {
  if (!dropout_rng_) throw std::invalid_argument("MLP: dropout_rng is null");
  this->register_module("c_fc", c_fc);
  this->register_module("c_proj", c_proj);
}

template <class S>
Var<S> MLP<S>::forward(const Var<S>& x, const HookScope<S>& hooks) {
  Var<S> h;
  if (hooks.needs_parts("mlp.")) {
    h = hidden_composed(x, hooks);
  } else {
    switch (kind_) {
      case config::Mlp::swiglu:
        h = swiglu(c_fc.forward(x));
        break;
      case config::Mlp::relu:
        h = relu(c_fc.forward(x));
        break;
      case config::Mlp::gelu:
      case config::Mlp::none:  // a Block builds no MLP then
        h = c_fc.forward_gelu(x);
        break;
    }
  }
  return dropout(c_proj.forward(h), dropout_, this->training(), *dropout_rng_);
}

// The hidden activation [B,T,F] op by op, through the hook points: pre = c_fc(x) (swiglu: [gate | up] on the last
// axis, split), post = act(pre) (swiglu: silu(gate) up). The same values as the fused kernels to rounding.
template <class S>
Var<S> MLP<S>::hidden_composed(const Var<S>& x, const HookScope<S>& hooks) const {
  const Var<S> fc = c_fc.forward(x);
  if (kind_ == config::Mlp::swiglu) {
    const long F = static_cast<long>(fc.shape().back() / 2);
    const Var<S> gate = hooks("mlp.hook_pre", slice(fc, -1, 0, F));
    const Var<S> up = hooks("mlp.hook_pre_linear", slice(fc, -1, F, 2 * F));
    return hooks("mlp.hook_post", mul(silu(gate), up));
  }
  const Var<S> pre = hooks("mlp.hook_pre", fc);
  return hooks("mlp.hook_post", kind_ == config::Mlp::relu ? relu(pre) : gelu(pre));
}

template <class S>
Block<S>::Block(const config::ModelConfig& cfg, Rng& init_rng, std::shared_ptr<Rng> dropout_rng)
    : ln_1(cfg), attn(cfg, init_rng, dropout_rng) {
  this->register_module("ln_1", ln_1);
  this->register_module("attn", attn);
  if (!has_mlp(cfg)) return;
  ln_2 = std::make_unique<Norm<S>>(cfg);
  mlp = std::make_unique<MLP<S>>(cfg, init_rng, std::move(dropout_rng));
  this->register_module("ln_2", *ln_2);
  this->register_module("mlp", *mlp);
}

template <class S>
Var<S> Block<S>::forward(const Var<S>& x, const HookScope<S>& hooks) {
  const Var<S> resid_pre = hooks("hook_resid_pre", x);
  const Var<S> attn_out = hooks("hook_attn_out", attn.forward(ln_1.forward(resid_pre, hooks, "ln1."), hooks));
  if (!mlp) return hooks("hook_resid_post", add(resid_pre, attn_out));  // attention-only, as TransformerLens' attn_only
  const Var<S> resid_mid = hooks("hook_resid_mid", add(resid_pre, attn_out));
  const Var<S> mlp_out = hooks("hook_mlp_out", mlp->forward(ln_2->forward(resid_mid, hooks, "ln2."), hooks));
  return hooks("hook_resid_post", add(resid_mid, mlp_out));
}

template <class S>
Var<S> Block<S>::forward_cached(const Var<S>& x, KVCache<S>& cache) {
  const Var<S> h = add(x, attn.forward_cached(ln_1.forward(x), cache));
  return mlp ? add(h, mlp->forward(ln_2->forward(h))) : h;
}

template <class S>
GPT<S>::Trunk::Trunk(const config::ModelConfig& cfg, Rng& rng) : wte(*cfg.vocab_size, cfg.d_model, rng), ln_f(cfg) {
  this->register_module("wte", wte);
  if (cfg.position == config::Position::learned) {
    wpe = std::make_unique<Embedding<S>>(*cfg.context, cfg.d_model, rng);
    this->register_module("wpe", *wpe);
  }
  this->register_module("h", h);
  this->register_module("ln_f", ln_f);
}

template <class S>
GPT<S>::GPT(const config::ModelConfig& cfg, std::uint64_t seed)
    : cfg_(cfg), init_rng_(seed), dropout_rng_(std::make_shared<Rng>(0)) {
  if (!cfg_.vocab_size || !cfg_.context)
    throw std::invalid_argument(fmt::format("GPT: {} and {} must be numbers (resolve 'auto' from the data first, as "
                                            "train::make_run does)",
                                            config::keys::model::vocab_size, config::keys::model::context));
  config::validate_model(cfg_);
  *dropout_rng_ = init_rng_.split();
  transformer_ = std::make_unique<Trunk>(cfg_, init_rng_);
  for (std::size_t i = 0; i < cfg_.n_layer; ++i) {
    blocks_.push_back(std::make_unique<Block<S>>(cfg_, init_rng_, dropout_rng_));
    transformer_->h.add(std::to_string(i), *blocks_.back());
  }
  this->register_module("transformer", *transformer_);
  if (!cfg_.tie_weights) {
    lm_head_ = std::make_unique<Linear<S>>(cfg_.d_model, *cfg_.vocab_size, false, cfg_.init, init_rng_);
    this->register_module("lm_head", *lm_head_);
  }
  check_against_parameter_shapes();
  if (cfg_.init == InitScheme::normal) {
    // GPT-2: residual projections get std 0.02 / sqrt(2 n_layer)
    const double stddev = 0.02 / std::sqrt(2.0 * static_cast<double>(cfg_.n_layer));
    for (auto& [name, p] : this->named_parameters())
      if (name.size() > 13 && name.compare(name.size() - 13, 13, "c_proj.weight") == 0)
        p.mutable_value() = normal<S>(p.shape(), 0.0, stddev, init_rng_);
  }
}

template <class S>
GPT<S>::~GPT() = default;

// The modules above must build exactly the tensors that nn::parameter_shapes describes: the checkpoint's checks and
// the memory estimate rely on that description.
template <class S>
void GPT<S>::check_against_parameter_shapes() const {
  const auto expected = parameter_shapes(cfg_);
  const auto built = this->named_parameters();
  bool same = expected.size() == built.size();
  for (std::size_t i = 0; same && i < built.size(); ++i)
    same = expected[i].name == built[i].first && expected[i].shape == built[i].second.shape();
  if (!same) throw std::logic_error("GPT: the modules built other parameters than nn::parameter_shapes describes");
}

template <class S>
Var<S> GPT<S>::forward(const IndexArray& ids) {
  return forward_hooked(ids, nullptr);
}

template <class S>
Var<S> GPT<S>::forward(const IndexArray& ids, const Hooks<S>& hooks) {
  hooks.check_names(hook_names());
  return forward_hooked(ids, &hooks);
}

template <class S>
Var<S> GPT<S>::run_with_cache(const IndexArray& ids, ActivationCache<S>& cache) {
  Hooks<S> hooks;
  hooks.cache_into(cache);
  return forward_hooked(ids, &hooks);
}

template <class S>
Var<S> GPT<S>::forward_hooked(const IndexArray& ids, const Hooks<S>* hooks) {
  if (ids.dimension() != 2)
    throw std::invalid_argument(
        fmt::format("GPT::forward: token ids must be [B,T], got {}", shape_str(to_shape(ids.shape()))));
  const std::size_t T = ids.shape()[1];
  if (T > context())
    throw std::invalid_argument(
        fmt::format("GPT::forward: sequence length {} exceeds the context length {}", T, context()));
  const HookScope<S> top{hooks, ""};
  Var<S> x = dropout(embed(ids, 0, top), static_cast<S>(cfg_.dropout), this->training(), *dropout_rng_);  // [B,T,C]
  for (std::size_t l = 0; l < blocks_.size(); ++l)
    x = blocks_[l]->forward(x, hooks ? HookScope<S>{hooks, fmt::format("blocks.{}.", l)} : HookScope<S>{});
  return head(x, top);
}

template <class S>
Var<S> GPT<S>::embed(const IndexArray& ids, std::size_t p0, const HookScope<S>& hooks) {
  const std::size_t n = ids.shape()[1];
  Var<S> x = hooks("hook_embed", transformer_->wte.forward(ids));  // [B,n,C]
  if (transformer_->wpe) {                                         // + [n,C]
    IndexArray positions = IndexArray::from_shape({n});
    for (std::size_t t = 0; t < n; ++t) positions(t) = static_cast<Index>(p0 + t);
    Var<S> pos = transformer_->wpe->forward(positions);
    if (hooks) {  // the hook sees [1,n,C], a batch of one as TransformerLens' [batch, pos, d_model]
      const long C = static_cast<long>(cfg_.d_model);
      pos = reshape(hooks("hook_pos_embed", reshape(pos, {1, long(n), C})), {long(n), C});
    }
    x = add(x, pos);
  }
  return x;
}

template <class S>
Var<S> GPT<S>::head(const Var<S>& x, const HookScope<S>& hooks) {
  const Var<S> h = transformer_->ln_f.forward(x, hooks, "ln_final.");  // x itself with model.norm: none (no hook)
  if (lm_head_) return lm_head_->forward(h);
  return matmul(h, transformer_->wte.weight(), false, true);  // tied: [B,n,C] x [V,C]^T
}

template <class S>
std::vector<KVCache<S>> GPT<S>::make_cache() const {
  std::vector<KVCache<S>> cache;
  for (const auto& block : blocks_) cache.push_back(block->attn.make_cache(context()));
  return cache;
}

template <class S>
Var<S> GPT<S>::forward_cached(const IndexArray& ids, std::vector<KVCache<S>>& cache) {
  if (ids.dimension() != 2 || ids.shape()[0] != 1 || cache.size() != blocks_.size())
    throw std::invalid_argument(fmt::format("GPT::forward_cached: token ids must be [1,n] and the cache one per layer, "
                                            "got ids {} and {} caches",
                                            shape_str(to_shape(ids.shape())), cache.size()));
  const std::size_t n = ids.shape()[1], p0 = cache.front().length;
  if (p0 + n > context())
    throw std::length_error(
        fmt::format("GPT::forward_cached: positions {}..{} pass the context length {}", p0, p0 + n - 1, context()));
  Var<S> x = embed(ids, p0);  // [1,n,C]
  for (std::size_t l = 0; l < blocks_.size(); ++l) x = blocks_[l]->forward_cached(x, cache[l]);
  return head(x);
}

template <class S>
Var<S> GPT<S>::loss(const IndexArray& ids, const IndexArray& targets) {
  return cross_entropy(forward(ids), targets);
}

template <class S>
void GPT<S>::record_attention(bool on) {
  for (auto& b : blocks_) b->attn.record_weights(on);
}

template <class S>
std::vector<Array<S>> GPT<S>::attention_weights() const {
  std::vector<Array<S>> out;
  for (const auto& b : blocks_) out.push_back(b->attn.last_weights());
  return out;
}

template class MLP<float>;
template class MLP<double>;
template class Block<float>;
template class Block<double>;
template class GPT<float>;
template class GPT<double>;

}  // namespace tf::nn
