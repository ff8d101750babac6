#pragma once
// The GPT model (nanoGPT's architecture and parameter names), configured by the model section of the run
// config (config::ModelConfig, the YAML names: d_model, n_head, n_layer, context, ...):
//   transformer.wte [V,C], transformer.wpe [T,C] (model.position: learned; none with rope), transformer.h.{i}
//   blocks, transformer.ln_f, lm_head [V,C]
//   Block: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))  (model.mlp: none, attention-only: the first line alone)
//   MLP: c_proj(gelu(c_fc(x))), hidden = mlp_ratio * C; or (model.mlp: swiglu) c_proj(swiglu(c_fc(x))), or
//   (model.mlp: relu) c_proj(relu(c_fc(x)))
//   model.norm: none makes ln_1, ln_2 and ln_f the identity
// The forward passes its activations to optional hooks under TransformerLens' names (nn/hooks.hpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/nn/self_attention.hpp"

namespace tf::nn {

template <class S>
class MLP : public Module<S> {
 public:
  // Weights drawn from init_rng (used only here); dropout from dropout_rng, shared with the model's other modules.
  MLP(const config::ModelConfig& cfg, Rng& init_rng, std::shared_ptr<Rng> dropout_rng);
  // [B,T,C] -> [B,T,C]; with hooks on mlp.hook_pre, hook_pre_linear or hook_post (nn/hooks.hpp), the composed
  // forward (c_fc, the activation, c_proj) instead of the fused linear+GELU
  Var<S> forward(const Var<S>& x, const HookScope<S>& hooks = {});
  Linear<S> c_fc, c_proj;

 private:
  Var<S> hidden_composed(const Var<S>& x, const HookScope<S>& hooks) const;

  config::Mlp kind_;
  S dropout_;
  std::shared_ptr<Rng> dropout_rng_;
};

template <class S>
class Block : public Module<S> {
 public:
  // As MLP's constructor. A block built on its own: Block(cfg, init, std::make_shared<Rng>(seed)).
  Block(const config::ModelConfig& cfg, Rng& init_rng, std::shared_ptr<Rng> dropout_rng);
  // [B,T,C] -> [B,T,C], through the hook points blocks.{l}.hook_resid_pre .. hook_resid_post of `hooks` (nn/hooks.hpp)
  Var<S> forward(const Var<S>& x, const HookScope<S>& hooks = {});
  Var<S> forward_cached(const Var<S>& x, KVCache<S>& cache);  // [1,n,C] -> [1,n,C], see CausalSelfAttention
  Norm<S> ln_1;
  CausalSelfAttention<S> attn;
  std::unique_ptr<Norm<S>> ln_2;  // null for model.mlp none (attention-only)
  std::unique_ptr<MLP<S>> mlp;    // null for model.mlp none
};

template <class S>
class GPT : public Module<S> {
 public:
  // `cfg` must have vocab_size and context set (not auto) and pass config::validate_model; `seed` drives the
  // initialisation, and the dropout generator is derived from it.
  GPT(const config::ModelConfig& cfg, std::uint64_t seed);
  ~GPT() override;

  // ids [B,T] (T <= context) -> logits [B,T,V]
  Var<S> forward(const IndexArray& ids);
  // The same forward, each activation passed to `hooks` under its TransformerLens name (nn/hooks.hpp: hook_names()
  // lists them) to be read or replaced. Hooks on attention's insides (attn.hook_q .. hook_z) or a cache make the hooked
  // layers take the composed attention (model.attention: fused differs from it by rounding); otherwise, and with
  // hooks that return their input, the logits equal forward(ids) bit for bit. std::invalid_argument for a hooked name
  // the model does not have, and for a hook whose result has another shape than its activation (naming both).
  Var<S> forward(const IndexArray& ids, const Hooks<S>& hooks);
  // forward(ids) with every activation copied into `cache` by hook name (TransformerLens' run_with_cache).
  Var<S> run_with_cache(const IndexArray& ids, ActivationCache<S>& cache);
  std::vector<std::string> hook_names() const { return nn::hook_names(cfg_); }
  // Mean cross-entropy of the next-token logits against targets [B,T] (entries -1 are ignored).
  Var<S> loss(const IndexArray& ids, const IndexArray& targets);

  // Decoding with a cache of keys and values (a KV cache), for sampling: one KVCache per layer, room for the whole
  // context. forward_cached(ids [1,n], cache) gives the logits [1,n,V] of the n tokens that follow the cached
  // positions, which it adds to the cache; in eval mode and without grad it equals the last n rows of forward() on
  // the whole sequence (up to rounding). std::length_error when the positions would pass the context.
  std::vector<KVCache<S>> make_cache() const;
  Var<S> forward_cached(const IndexArray& ids, std::vector<KVCache<S>>& cache);

  const config::ModelConfig& config() const { return cfg_; }
  std::size_t vocab_size() const { return *cfg_.vocab_size; }
  std::size_t context() const { return *cfg_.context; }
  // Attention weights of the last forward, one [B,H,T,T] array per layer (see record_attention).
  void record_attention(bool on);
  std::vector<Array<S>> attention_weights() const;
  Rng& dropout_rng() { return *dropout_rng_; }
  std::size_t n_layer() const { return blocks_.size(); }
  Block<S>& block(std::size_t i) { return *blocks_.at(i); }

 private:
  void check_against_parameter_shapes() const;
  Var<S> forward_hooked(const IndexArray& ids, const Hooks<S>* hooks);  // hooks null: the plain forward
  // The parts forward and forward_cached share: ids [B,n] at positions p0 .. p0+n-1 -> wte (+ wpe) [B,n,C]; and
  // x [B,n,C] -> ln_f, lm_head (or the tied wte) -> logits [B,n,V].
  Var<S> embed(const IndexArray& ids, std::size_t p0, const HookScope<S>& hooks = {});
  Var<S> head(const Var<S>& x, const HookScope<S>& hooks = {});
  struct BlockList : Module<S> {
    void add(const std::string& name, Block<S>& b) { this->register_module(name, b); }
  };
  struct Trunk : Module<S> {
    Trunk(const config::ModelConfig& cfg, Rng& rng);
    Embedding<S> wte;
    std::unique_ptr<Embedding<S>> wpe;  // learned positions only
    BlockList h;
    Norm<S> ln_f;
  };

  config::ModelConfig cfg_;
  Rng init_rng_;
  std::shared_ptr<Rng> dropout_rng_;  // shared by the blocks' dropout
  std::unique_ptr<Trunk> transformer_;
  std::vector<std::unique_ptr<Block<S>>> blocks_;
  std::unique_ptr<Linear<S>> lm_head_;  // null when tied
};

extern template class GPT<float>;
extern template class GPT<double>;

}  // namespace tf::nn
