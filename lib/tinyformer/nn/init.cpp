#include "tinyformer/nn/init.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::nn {

template <class S>
Array<S> xavier_uniform(const Shape& shape, std::size_t fan_in, std::size_t fan_out, Rng& rng) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  Array<S> w = Array<S>::from_shape(shape);
  for (auto& v : w) v = static_cast<S>(rng.uniform(-limit, limit));
  return w;
}

template <class S>
Array<S> xavier_normal(const Shape& shape, std::size_t fan_in, std::size_t fan_out, Rng& rng) {
  return normal<S>(shape, 0.0, std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), rng);
}

template <class S>
Array<S> normal(const Shape& shape, double mean, double stddev, Rng& rng) {
  Array<S> w = Array<S>::from_shape(shape);
  for (auto& v : w) v = static_cast<S>(rng.normal(mean, stddev));
  return w;
}

template <class S>
Array<S> init_weight(InitScheme scheme, std::size_t out_features, std::size_t in_features, Rng& rng) {
  const Shape shape{out_features, in_features};
  switch (scheme) {
    case InitScheme::xavier_uniform:
      return xavier_uniform<S>(shape, in_features, out_features, rng);
    case InitScheme::xavier_normal:
      return xavier_normal<S>(shape, in_features, out_features, rng);
    case InitScheme::normal:
      return normal<S>(shape, 0.0, 0.02, rng);
  }
  throw std::logic_error("init_weight: unhandled scheme");
}

#define TF_INSTANTIATE(S)                                                            \
  template Array<S> xavier_uniform<S>(const Shape&, std::size_t, std::size_t, Rng&); \
  template Array<S> xavier_normal<S>(const Shape&, std::size_t, std::size_t, Rng&);  \
  template Array<S> normal<S>(const Shape&, double, double, Rng&);                   \
  template Array<S> init_weight<S>(InitScheme, std::size_t, std::size_t, Rng&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf::nn
