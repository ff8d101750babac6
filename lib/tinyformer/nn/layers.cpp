#include "tinyformer/nn/layers.hpp"

#include <stdexcept>
#include <string>

#include <xtensor/xbuilder.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

namespace {
// Rng(seed) as the lvalue the generator-taking constructors draw from, alive until the end of the full-expression.
Rng& seeded(Rng&& rng) { return rng; }

void check_positive(std::size_t value, const char* layer, const char* argument) {
  if (value == 0) throw std::invalid_argument(std::string(layer) + ": " + argument + " must be at least 1, got 0");
}
}  // namespace

template <class S>
Linear<S>::Linear(std::size_t in_features, std::size_t out_features, bool bias, InitScheme init, std::uint64_t seed)
    : Linear(in_features, out_features, bias, init, seeded(Rng(seed))) {}

template <class S>
Linear<S>::Linear(std::size_t in_features, std::size_t out_features, bool bias, InitScheme init, Rng& rng)
    : in_(in_features), out_(out_features) {
  check_positive(in_features, "Linear", "in_features");
  check_positive(out_features, "Linear", "out_features");
  weight_ = &this->register_parameter("weight", init_weight<S>(init, out_features, in_features, rng));
  if (bias) bias_ = &this->register_parameter("bias", xt::zeros<S>({out_features}));
}

template <class S>
Var<S> Linear<S>::forward(const Var<S>& x) const {
  return linear(x, *weight_, bias_ ? *bias_ : Var<S>());  // [..., in] x [out, in]^T + [out] -> [..., out]
}

template <class S>
Var<S> Linear<S>::forward_gelu(const Var<S>& x) const {
  return linear_gelu(x, *weight_, bias_ ? *bias_ : Var<S>());
}

template <class S>
Embedding<S>::Embedding(std::size_t num_embeddings, std::size_t dim, Rng& rng) {
  check_positive(num_embeddings, "Embedding", "num_embeddings");
  check_positive(dim, "Embedding", "dim");
  weight_ = &this->register_parameter("weight", normal<S>({num_embeddings, dim}, 0.0, 0.02, rng));
}

template <class S>
Var<S> Embedding<S>::forward(const IndexArray& ids) const {
  return embedding(*weight_, ids);
}

template <class S>
Norm<S>::Norm(std::size_t dim, const NormOptions& options) : kind_(options.kind) {
  check_positive(dim, "Norm", "dim");
  if (kind_ == config::Norm::none) return;  // the identity: no parameters
  weight_ = &this->register_parameter("weight", xt::ones<S>({dim}));
  if (kind_ == config::Norm::rmsnorm) return;
  // Without a learnable bias the shift is a constant zero (nanoGPT's LayerNorm(bias=False)).
  if (options.bias)
    bias_ = &this->register_parameter("bias", xt::zeros<S>({dim}));
  else
    zero_bias_ = Var<S>(xt::zeros<S>({dim}));
}

template <class S>
Norm<S>::Norm(const config::ModelConfig& cfg) : Norm(cfg.d_model, NormOptions{cfg.norm, cfg.bias}) {}

template <class S>
Var<S> Norm<S>::forward(const Var<S>& x) const {
  switch (kind_) {
    case config::Norm::rmsnorm:
      return rms_norm(x, *weight_);
    case config::Norm::none:
      return x;
    case config::Norm::layernorm:
      break;
  }
  return layer_norm(x, *weight_, bias());
}

template <class S>
Var<S> Norm<S>::forward(const Var<S>& x, const HookScope<S>& hooks, const char* name) const {
  if (kind_ == config::Norm::none) return x;
  if (!hooks) return forward(x);  // the plain forward: no hook names built
  const std::string prefix(name), scale_name = prefix + "hook_scale";
  if (!hooks.needs_parts(scale_name)) return hooks(prefix + "hook_normalized", forward(x));
  const auto centre = [&] { return kind_ == config::Norm::layernorm ? sub(x, mean(x, -1, true)) : x; };
  Var<S> computed;
  {
    NoGradGuard constant;  // what hooks read: no graph kept (a cache of a big batch holds only the [...,1] scale)
    const Var<S> c = centre();
    computed = sqrt(add_scalar(mean(mul(c, c), -1, true), static_cast<S>(kNormEps)));
  }
  const Var<S> scale = hooks(scale_name, computed);
  if (scale.node_ptr() == computed.node_ptr())  // read, not replaced: the fused op, bit for bit
    return hooks(prefix + "hook_normalized", forward(x));
  const Var<S> y = mul(div(centre(), scale), *weight_);
  return hooks(prefix + "hook_normalized", kind_ == config::Norm::layernorm ? add(y, bias()) : y);
}

template class Linear<float>;
template class Linear<double>;
template class Embedding<float>;
template class Embedding<double>;
template class Norm<float>;
template class Norm<double>;

}  // namespace tf::nn
