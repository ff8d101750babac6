#include "tinyformer/tensor/factory.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

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

template <class S>
Array<std::int64_t> multinomial(const Array<S>& weights, std::size_t samples, bool replacement, Rng& rng) {
  const std::size_t rank = weights.dimension();
  if (rank != 1 && rank != 2)
    throw std::invalid_argument(fmt::format("multinomial: the weights must have 1 or 2 dims (a row of weights per "
                                            "draw), got {}",
                                            rank));
  const std::size_t rows = rank == 2 ? weights.shape()[0] : 1, n = weights.shape()[rank - 1];
  if (rows == 0 || n == 0) throw std::invalid_argument("multinomial: the weights hold no elements");
  if (samples < 1) throw std::invalid_argument("multinomial: num_samples must be 1 or more");
  if (!replacement && samples > n)
    throw std::invalid_argument(fmt::format("multinomial: {} samples without replacement from {} categories; draw at "
                                            "most {}, or pass replacement=True",
                                            samples, n, n));
  Shape shape{samples};
  if (rank == 2) shape.insert(shape.begin(), rows);
  Array<std::int64_t> out = Array<std::int64_t>::from_shape(shape);
  std::vector<double> w(n);
  for (std::size_t r = 0; r < rows; ++r) {
    double total = 0;
    std::size_t positive = 0;
    for (std::size_t i = 0; i < n; ++i) {
      w[i] = static_cast<double>(weights.data()[r * n + i]);
      if (!std::isfinite(w[i]) || w[i] < 0)
        throw std::invalid_argument(fmt::format("multinomial: weight {} of row {} is {}; weights must be finite and "
                                                "0 or more",
                                                i, r, w[i]));
      total += w[i];
      positive += w[i] > 0;
    }
    if (!(total > 0)) throw std::invalid_argument(fmt::format("multinomial: the weights of row {} sum to 0", r));
    if (!replacement && samples > positive)
      throw std::invalid_argument(fmt::format("multinomial: {} samples without replacement from row {}, which has {} "
                                              "categories of weight above 0",
                                              samples, r, positive));
    for (std::size_t k = 0; k < samples; ++k) {
      const std::size_t chosen = rng.pick(w.data(), n, total);
      out.data()[r * samples + k] = static_cast<std::int64_t>(chosen);
      if (!replacement) {
        total -= w[chosen];
        w[chosen] = 0;
      }
    }
  }
  return out;
}

#define TF_INSTANTIATE(S)                                                                \
  template Array<std::int64_t> multinomial<S>(const Array<S>&, std::size_t, bool, Rng&); \
  template Array<S> arange<S>(double, double, double);                                   \
  template Array<S> full<S>(const Shape&, S);                                            \
  template Array<S> rand<S>(const Shape&, Rng&);                                         \
  template Array<S> randn<S>(const Shape&, Rng&);                                        \
  template Array<S> randint<S>(long, long, const Shape&, Rng&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
