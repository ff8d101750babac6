// dropout: identity in eval mode, keep rate and scaling in training, reproducible masks, validation, gradcheck.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>
#include <xtensor/xbuilder.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("ops: dropout in eval mode or with p = 0 is the identity and draws nothing", "[ops]") {
  Var<double> a(random_array({3, 4}, 501), true);
  Rng rng(7), untouched(7);
  Var<double> eval = dropout(a, 0.5, false, rng);
  CHECK(eval.node_ptr() == a.node_ptr());  // the same value, not a copy
  Var<double> p0 = dropout(a, 0.0, true, rng);
  CHECK(p0.node_ptr() == a.node_ptr());
  CHECK(rng.next_u64() == untouched.next_u64());  // no draws were made
}

TEST_CASE("ops: dropout with p = 0.5 keeps about half of 100k elements and scales them by 2", "[ops]") {
  const std::size_t n = 100000;
  Var<float> a(Array<float>(xt::ones<float>({n})));
  Rng rng(2024);
  const Array<float> out = dropout(a, 0.5f, true, rng).value();
  std::size_t kept = 0, other = 0;
  for (float v : out) {
    if (v == 2.0f)
      ++kept;
    else if (v != 0.0f)
      ++other;
  }
  CHECK(other == 0);  // every element is either dropped (0) or kept and scaled to exactly 1/(1-p) = 2
  const double frac = static_cast<double>(kept) / static_cast<double>(n);
  INFO("kept fraction " << frac);
  CHECK(std::abs(frac - 0.5) < 0.01);
  // p = 0.2 on the same size: ~80% kept, scaled by 1/0.8.
  Var<double> b(Array<double>(xt::ones<double>({n}) * 3.0));
  const Array<double> out2 = dropout(b, 0.2, true, rng).value();
  std::size_t kept2 = 0, wrong_scale = 0;
  for (double v : out2)
    if (v != 0.0) {
      ++kept2;
      if (std::abs(v - 3.0 / 0.8) > 1e-14) ++wrong_scale;
    }
  CHECK(wrong_scale == 0);
  CHECK(std::abs(static_cast<double>(kept2) / n - 0.8) < 0.01);
}

TEST_CASE("ops: dropout draws one uniform per element in row-major order, so the same seed gives the same mask",
          "[ops]") {
  const auto x = random_array({4, 5, 6}, 502, 0.5, 1.5);  // no zeros, so a zero output means dropped
  Rng r1(99), r2(99), r3(100), replay(99);
  const Array<double> y1 = dropout(Var<double>(x), 0.3, true, r1).value();
  const Array<double> y2 = dropout(Var<double>(x), 0.3, true, r2).value();
  const Array<double> y3 = dropout(Var<double>(x), 0.3, true, r3).value();
  CHECK((y1 == y2));
  CHECK_FALSE((y1 == y3));
  for (std::size_t k = 0; k < x.size(); ++k) {
    const bool keep = replay.uniform() >= 0.3;  // the documented rule: keep when u >= p
    if (keep)
      CHECK(y1.data()[k] == Approx(x.data()[k] / 0.7).epsilon(1e-15));
    else
      CHECK(y1.data()[k] == 0.0);
  }
  CHECK(r1.next_u64() == replay.next_u64());  // exactly x.size() draws
}

TEST_CASE("ops: dropout backward multiplies by the same mask", "[ops]") {
  Var<double> a(random_array({50, 40}, 503, 0.5, 1.5), true);
  Rng rng(5);
  Var<double> y = dropout(a, 0.4, true, rng);
  const Array<double> seed = random_array({50, 40}, 504, 1.0, 2.0);
  y.backward(seed);
  for (std::size_t k = 0; k < seed.size(); ++k) {
    const double mask = y.value().data()[k] / a.value().data()[k];  // 0 or 1/0.6
    CHECK(a.grad().data()[k] == Approx(seed.data()[k] * mask).epsilon(1e-14));
  }
}

TEST_CASE("ops: dropout rejects p outside 0 <= p < 1, naming the value", "[ops]") {
  Var<double> a(random_array({2, 3}, 505));
  Rng rng(1);
  CHECK_THROWS_WITH(dropout(a, 1.0, true, rng), Catch::Contains("p = 1") && Catch::Contains("[0, 1)"));
  CHECK_THROWS_WITH(dropout(a, -0.1, true, rng), Catch::Contains("p = -0.1"));
  CHECK_THROWS_AS(dropout(a, 1.5, false, rng), std::invalid_argument);  // checked in eval mode too
  CHECK_THROWS_AS(dropout(a, std::numeric_limits<double>::quiet_NaN(), true, rng), std::invalid_argument);
  Var<float> af(test::random_array_f({2, 3}, 506));
  CHECK_THROWS_AS(dropout(af, 1.0f, true, rng), std::invalid_argument);
}

TEST_CASE("gradcheck: dropout with a fixed mask", "[gradcheck][ops]") {
  const auto x = random_array({3, 4, 5}, 511);
  // A fresh generator with the same seed on every call: the perturbed evaluations see the same mask.
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        Rng rng(4242);
        return dropout(in[0], 0.25, true, rng);
      },
      {x}));
  // The same input through dropout twice (two different masks from one generator) accumulates.
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        Rng rng(4243);
        Var<double> first = dropout(in[0], 0.5, true, rng);
        return first * dropout(in[0], 0.5, true, rng);
      },
      {x}));
}
