#pragma once
// The GPT model (nanoGPT's architecture and parameter names):
//   transformer.wte [V,C], transformer.wpe [T_max,C], transformer.h.{i} blocks, transformer.ln_f, lm_head [V,C]
//   Block: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))        MLP: c_proj(gelu(c_fc(x))), hidden = mlp_ratio * C
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/nn/attention.hpp"

namespace tf::nn {

struct GPTConfig {
  std::size_t vocab_size = 0;
  std::size_t block_size = 0;  // context length: the positional table has this many rows
  std::size_t n_layer = 2;
  std::size_t n_head = 2;
  std::size_t n_embd = 32;
  std::size_t mlp_ratio = 4;
  double dropout = 0.0;
  bool bias = true;
  bool tie_weights = false;  // lm_head shares transformer.wte.weight
  InitScheme init = InitScheme::xavier_uniform;
  std::uint64_t seed = 1337;  // drives init; the dropout generator is derived from it too

  void validate() const;  // throws std::invalid_argument naming the field and the valid range
};

template <class S>
class MLP : public Module<S> {
 public:
  MLP(const GPTConfig& cfg, Rng& init_rng, Rng& dropout_rng);
  Var<S> forward(const Var<S>& x);  // [B,T,C] -> [B,T,C]
  Linear<S> c_fc, c_proj;

 private:
  S dropout_;
  Rng& dropout_rng_;
};

template <class S>
class Block : public Module<S> {
 public:
  Block(const GPTConfig& cfg, Rng& init_rng, Rng& dropout_rng);
  Var<S> forward(const Var<S>& x);  // [B,T,C] -> [B,T,C]
  LayerNorm<S> ln_1;
  CausalSelfAttention<S> attn;
  LayerNorm<S> ln_2;
  MLP<S> mlp;
};

template <class S>
class GPT : public Module<S> {
 public:
  explicit GPT(const GPTConfig& cfg);
  ~GPT() override;

  // ids [B,T] (T <= block_size) -> logits [B,T,V]
  Var<S> forward(const IndexArray& ids);
  // Mean cross-entropy of the next-token logits against targets [B,T] (entries -1 are ignored).
  Var<S> loss(const IndexArray& ids, const IndexArray& targets);

  const GPTConfig& config() const { return cfg_; }
  void set_attention_impl(AttentionImpl impl);
  // Attention weights of the last forward, one [B,H,T,T] array per layer (see record_attention).
  void record_attention(bool on);
  std::vector<Array<S>> attention_weights() const;
  Rng& dropout_rng() { return dropout_rng_; }
  std::size_t n_layer() const { return blocks_.size(); }
  Block<S>& block(std::size_t i) { return *blocks_.at(i); }

 private:
  struct BlockList : Module<S> {
    void add(const std::string& name, Block<S>& b) { this->register_module(name, b); }
  };
  struct Trunk : Module<S> {
    Trunk(const GPTConfig& cfg, Rng& rng);
    Embedding<S> wte, wpe;
    BlockList h;
    LayerNorm<S> ln_f;
  };

  GPTConfig cfg_;
  Rng init_rng_;
  Rng dropout_rng_;
  std::unique_ptr<Trunk> transformer_;
  std::vector<std::unique_ptr<Block<S>>> blocks_;
  std::unique_ptr<Linear<S>> lm_head_;  // null when tied
};

extern template class GPT<float>;
extern template class GPT<double>;

}  // namespace tf::nn
