#include "tinyformer/tensor/factory.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace tf {

template <class S>
Array<S> arange(double start, double end, double step) {
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step) || step == 0)
    throw std::invalid_argument(
        fmt::format("arange: start {}, end {} and step {} must be finite and step nonzero", start, end, step));
  const double count = std::ceil((end - start) / step);
  if (count < 1)
    throw std::invalid_argument(fmt::format("arange({}, {}, {}) makes no values: with a positive step end must be "
                                            "above start, with a negative one below",
                                            start, end, step));
  Array<S> out = Array<S>::from_shape({static_cast<std::size_t>(count)});
  for (std::size_t i = 0; i < out.size(); ++i) out.data()[i] = static_cast<S>(start + static_cast<double>(i) * step);
  return out;
}

template <class S>
Array<S> full(const Shape& shape, S value) {
  Array<S> out = Array<S>::from_shape(shape);
  out.fill(value);
  return out;
}

template <class S>
Array<S> rand(const Shape& shape, Rng& rng) {
  Array<S> out = Array<S>::from_shape(shape);
  for (auto& v : out) v = static_cast<S>(rng.uniform());
  return out;
}

template <class S>
Array<S> randn(const Shape& shape, Rng& rng) {
  Array<S> out = Array<S>::from_shape(shape);
  for (auto& v : out) v = static_cast<S>(rng.normal());
  return out;
}

template <class S>
Array<S> randint(long low, long high, const Shape& shape, Rng& rng) {
  if (low >= high)
    throw std::invalid_argument(
        fmt::format("randint: low {} must be below high {} (values are drawn from [low, high))", low, high));
  const auto span = static_cast<std::uint64_t>(high - low);
  Array<S> out = Array<S>::from_shape(shape);
  for (auto& v : out) v = static_cast<S>(low + static_cast<long>(rng.below(span)));
  return out;
}

#define TF_INSTANTIATE(S)                              \
  template Array<S> arange<S>(double, double, double); \
  template Array<S> full<S>(const Shape&, S);          \
  template Array<S> rand<S>(const Shape&, Rng&);       \
  template Array<S> randn<S>(const Shape&, Rng&);      \
  template Array<S> randint<S>(long, long, const Shape&, Rng&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
