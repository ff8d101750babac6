#pragma once
// The basic layers: Linear, Embedding, Norm (parameter names and layouts as in PyTorch).
#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/init.hpp"
#include "tinyformer/nn/module.hpp"

namespace tf::nn {

// y = x W^T + b;  x [..., in] -> [..., out];  weight [out, in] (PyTorch layout), bias [out] (optional).
// Weight by `init` (default Xavier uniform), bias zero.
template <class S>
class Linear : public Module<S> {
 public:
  Linear(std::size_t in_features, std::size_t out_features, bool bias, InitScheme init, Rng& rng);
  Var<S> forward(const Var<S>& x) const;
  Var<S> forward_gelu(const Var<S>& x) const;  // gelu(forward(x)) as one fused op
  Var<S>& weight() { return weight_; }
  std::size_t in_features() const { return in_; }
  std::size_t out_features() const { return out_; }

 private:
  std::size_t in_, out_;
  Var<S> weight_, bias_;
};

// Token ids [...] -> rows of weight [num, dim] -> [..., dim]. Weight N(0, 0.02^2).
template <class S>
class Embedding : public Module<S> {
 public:
  Embedding(std::size_t num_embeddings, std::size_t dim, Rng& rng);
  Var<S> forward(const IndexArray& ids) const;
  Var<S>& weight() { return weight_; }

 private:
  Var<S> weight_;
};

// The blocks' normalisation (ln_1, ln_2, ln_f) over the last axis of width d_model, as model.norm says: LayerNorm
// centres, scales by weight (ones) and shifts by bias (zeros, a learnable parameter when model.bias is on);
// RMSNorm only scales x / rms(x) by weight, and has no bias whatever model.bias says.
template <class S>
class Norm : public Module<S> {
 public:
  explicit Norm(const config::ModelConfig& cfg);
  Var<S> forward(const Var<S>& x) const;

 private:
  config::Norm kind_;
  Var<S> weight_, bias_;
};

extern template class Linear<float>;
extern template class Linear<double>;
extern template class Embedding<float>;
extern template class Embedding<double>;
extern template class Norm<float>;
extern template class Norm<double>;

}  // namespace tf::nn
