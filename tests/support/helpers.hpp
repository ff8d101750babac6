#pragma once
// Shared test helpers: deterministic inputs and a gradcheck assertion that prints the report.
#include <catch2/catch.hpp>

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

// Restores the kernels' thread count when a test that changes it ends.
struct ThreadsGuard {
  int saved = num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

}  // namespace tf::test

// Passes when every checked element is within tolerance; the report names the worst element of each input.
#define REQUIRE_GRADCHECK(result_expr)            \
  do {                                            \
    const auto tf_gc_result = (result_expr);      \
    INFO(tf_gc_result.report());                  \
    REQUIRE(tf_gc_result.ok);                     \
  } while (0)
