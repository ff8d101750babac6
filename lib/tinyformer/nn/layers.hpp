#pragma once
// The basic layers: Linear, Embedding, LayerNorm (parameter names and layouts as in PyTorch).
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

// Normalises the last axis (size `dim`), then scales by weight (ones) and shifts by bias (zeros).
template <class S>
class LayerNorm : public Module<S> {
 public:
  LayerNorm(std::size_t dim, bool bias);
  Var<S> forward(const Var<S>& x) const;

 private:
  Var<S> weight_, bias_;
};

extern template class Linear<float>;
extern template class Linear<double>;
extern template class Embedding<float>;
extern template class Embedding<double>;
extern template class LayerNorm<float>;
extern template class LayerNorm<double>;

}  // namespace tf::nn
