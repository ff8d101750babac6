#pragma once
// The basic layers: Linear, Embedding, Norm (parameter names and layouts as in PyTorch). Each draws its initial
// weights from a generator it is given (used only while it is built) or from a seed; none keeps a reference.
#include <cstdint>

#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/hooks.hpp"
#include "tinyformer/nn/init.hpp"
#include "tinyformer/nn/module.hpp"

namespace tf::nn {

// y = x W^T + b;  x [..., in] -> [..., out];  weight [out, in] (PyTorch layout), bias [out] (optional).
// Weight by `init` (default Xavier uniform), bias zero. std::invalid_argument when in_features or out_features is 0.
template <class S>
class Linear : public Module<S> {
 public:
  // As torch.nn.Linear(in, out, bias=True); the weight drawn from Rng(seed).
  Linear(std::size_t in_features, std::size_t out_features, bool bias = true,
         InitScheme init = InitScheme::xavier_uniform, std::uint64_t seed = 0);
  // The weight drawn from `rng` (a model's shared initialisation stream; not kept).
  Linear(std::size_t in_features, std::size_t out_features, bool bias, InitScheme init, Rng& rng);
  Var<S> forward(const Var<S>& x) const;
  Var<S> forward_gelu(const Var<S>& x) const;  // gelu(forward(x)) as one fused op
  Var<S>& weight() { return *weight_; }
  std::size_t in_features() const { return in_; }
  std::size_t out_features() const { return out_; }

 private:
  std::size_t in_, out_;
  Var<S>* weight_ = nullptr;  // where Module keeps the parameters (set_parameter can replace them)
  Var<S>* bias_ = nullptr;    // null without a bias
};

// Token ids [...] -> rows of weight [num, dim] -> [..., dim]. Weight N(0, 0.02^2).
template <class S>
class Embedding : public Module<S> {
 public:
  Embedding(std::size_t num_embeddings, std::size_t dim, Rng& rng);
  Var<S> forward(const IndexArray& ids) const;
  Var<S>& weight() { return *weight_; }

 private:
  Var<S>* weight_ = nullptr;  // where Module keeps it (set_parameter can replace it)
};

// A Norm's settings; the defaults are the model section's (LayerNorm with a bias).
struct NormOptions {
  config::Norm kind = config::Norm::layernorm;
  bool bias = true;  // LayerNorm's learnable shift (RMSNorm has none)
};

// The blocks' normalisation (ln_1, ln_2, ln_f) over the last axis of width `dim`, as model.norm says: LayerNorm
// centres, scales by weight (ones) and shifts by bias (zeros, a learnable parameter when model.bias is on);
// RMSNorm only scales x / rms(x) by weight, and has no bias whatever model.bias says; `none` is the identity, with no
// parameters (an attention-only or grokking model without normalisation).
template <class S>
class Norm : public Module<S> {
 public:
  // std::invalid_argument when dim is 0.
  explicit Norm(std::size_t dim, const NormOptions& options = {});
  explicit Norm(const config::ModelConfig& cfg);  // d_model, norm and bias of the model section
  Var<S> forward(const Var<S>& x) const;
  // forward(x) through the hook points `name`hook_scale [...,1] and `name`hook_normalized (the output; "ln1.":
  // blocks.{l}.ln1.hook_...). The scale is computed beside the fused op, as a constant, when a hook or a cache reaches
  // it; a hook that replaces it makes the norm op by op with that scale as a constant (TransformerLens' frozen scale:
  // centred for layernorm, divided by the scale, times the weight, plus the bias); one that returns it keeps the
  // fused op's bits.
  // model.norm none: x, no hook.
  Var<S> forward(const Var<S>& x, const HookScope<S>& hooks, const char* name) const;

 private:
  const Var<S>& bias() const { return bias_ ? *bias_ : zero_bias_; }
  config::Norm kind_;
  Var<S>* weight_ = nullptr;  // where Module keeps the parameters; null for norm none
  Var<S>* bias_ = nullptr;    // null for RMSNorm and a LayerNorm without a learnable bias
  Var<S> zero_bias_;          // the constant zero shift of LayerNorm(bias=false)
};

// PyTorch's names for the two kinds, over the last axis of width `dim`: LayerNorm<S>(dim) is torch.nn.LayerNorm(dim)
// (weight ones, bias zeros; bias = false: nanoGPT's LayerNorm(bias=False)), RMSNorm<S>(dim) is torch.nn.RMSNorm(dim)
// (a weight only). Both are a Norm (eps 1e-5), the class the model's blocks use.
template <class S>
class LayerNorm : public Norm<S> {
 public:
  explicit LayerNorm(std::size_t dim, bool bias = true) : Norm<S>(dim, NormOptions{config::Norm::layernorm, bias}) {}
};

template <class S>
class RMSNorm : public Norm<S> {
 public:
  explicit RMSNorm(std::size_t dim) : Norm<S>(dim, NormOptions{config::Norm::rmsnorm, false}) {}
};

extern template class Linear<float>;
extern template class Linear<double>;
extern template class Embedding<float>;
extern template class Embedding<double>;
extern template class Norm<float>;
extern template class Norm<double>;

}  // namespace tf::nn
