#pragma once
// Weight initialisation. Xavier/Glorot for a weight with fan_in inputs and fan_out outputs:
//   uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out))     normal: N(0, std^2), std = sqrt(2 / (fan_in + fan_out))
#include "tinyformer/config/fields.hpp"
#include "tinyformer/tensor/random.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf::nn {

// model.init: xavier_uniform | xavier_normal | normal (N(0, 0.02^2), as GPT-2/nanoGPT); declared in the config.
using config::InitScheme;

template <class S>
Array<S> xavier_uniform(const Shape& shape, std::size_t fan_in, std::size_t fan_out, Rng& rng);
template <class S>
Array<S> xavier_normal(const Shape& shape, std::size_t fan_in, std::size_t fan_out, Rng& rng);
template <class S>
Array<S> normal(const Shape& shape, double mean, double stddev, Rng& rng);
// A [out, in] Linear weight by the given scheme.
template <class S>
Array<S> init_weight(InitScheme scheme, std::size_t out_features, std::size_t in_features, Rng& rng);

}  // namespace tf::nn
