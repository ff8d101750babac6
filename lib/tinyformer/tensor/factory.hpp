#pragma once
// Arrays made from a rule, as torch's factory functions: arange, full, and random ones drawn from a seeded Rng
// (rand: uniform in [0, 1), randn: standard normal, randint: integers in [low, high)), in row-major order, one draw
// an element, so that one seed gives the same values on every platform.
#include "tinyformer/tensor/random.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf {

// start, start + step, ... while below end (above it for a negative step): ceil((end - start) / step) values, as
// torch.arange. std::invalid_argument when step is 0, the bounds are not finite, or no value would be made.
template <class S>
Array<S> arange(double start, double end, double step = 1);
template <class S>
Array<S> full(const Shape& shape, S value);
template <class S>
Array<S> rand(const Shape& shape, Rng& rng);
template <class S>
Array<S> randn(const Shape& shape, Rng& rng);
// std::invalid_argument unless low < high.
template <class S>
Array<S> randint(long low, long high, const Shape& shape, Rng& rng);
// torch.multinomial: `samples` category indices drawn from each row of `weights` ([n] -> [samples], [rows, n] ->
// [rows, samples]) in proportion to its entries (finite, 0 or more, not all 0), one rng.uniform() a draw; without
// replacement a drawn category leaves the row.
template <class S>
Array<std::int64_t> multinomial(const Array<S>& weights, std::size_t samples, bool replacement, Rng& rng);

}  // namespace tf
