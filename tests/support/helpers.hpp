#pragma once
// Shared test helpers: deterministic inputs and a gradcheck assertion that prints the report.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tinyformer/autograd/gradcheck.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/tensor/random.hpp"

namespace tf::test {

// Values uniform in [lo, hi), from a fixed seed.
inline Array<double> random_array(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  Array<double> a = Array<double>::from_shape(shape);
  for (auto& v : a) v = rng.uniform(lo, hi);
  return a;
}

inline Array<float> random_array_f(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  Array<float> a = Array<float>::from_shape(shape);
  for (auto& v : a) v = static_cast<float>(rng.uniform(lo, hi));
  return a;
}

// The largest |a - b| over two arrays of the same shape.
template <class S>
double max_abs_diff(const Array<S>& a, const Array<S>& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a.flat(i)) - double(b.flat(i))));
  return m;
}

// Same shape and the same bytes (so -0 differs from 0 and a NaN equals itself).
template <class S>
bool bit_identical(const Array<S>& a, const Array<S>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(S)) == 0;
}

// y = f(x) and the gradient of sum(y * seed) with respect to x.
template <class S>
struct Run {
  Array<S> y, dx;
};
template <class S, class F>
Run<S> run(F f, const Array<S>& x, const Array<S>& seed) {
  Var<S> vx(x, true);
  const Var<S> y = f(vx);
  y.backward(seed);
  return {y.value(), vx.grad()};
}

// Restores the kernels' thread count when a test that changes it ends.
struct ThreadsGuard {
  int saved = num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

}  // namespace tf::test

// Passes when every checked element is within tolerance; the report names the worst element of each input.
#define REQUIRE_GRADCHECK(result_expr)       \
  do {                                       \
    const auto tf_gc_result = (result_expr); \
    INFO(tf_gc_result.report());             \
    REQUIRE(tf_gc_result.ok);                \
  } while (0)
