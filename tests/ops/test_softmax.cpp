// softmax, log_softmax and causal_mask: closed-form values, stability, exact zeros under the mask, gradchecks.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// softmax([1, 2, 3]) and log_softmax([1, 2, 3]) (torch.softmax / torch.log_softmax in float64; they equal
// exp(k) / (e + e^2 + e^3) and k - log(e + e^2 + e^3) for k = 1, 2, 3).
const double kSoftmax123[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
const double kLogSoftmax123[3] = {-2.4076059644443806, -1.4076059644443804, -0.4076059644443804};

bool is_neg_inf(double v) { return std::isinf(v) && v < 0; }
}  // namespace

TEST_CASE("ops: softmax and log_softmax forward match the closed form", "[ops]") {
  Var<double> a(Array<double>{{1.0, 2.0, 3.0}, {3.0, 1.0, 2.0}});
  const Array<double> y = softmax(a).value();
  const Array<double> ly = log_softmax(a).value();
  REQUIRE((to_shape(y.shape()) == Shape{2, 3}));
  REQUIRE((to_shape(ly.shape()) == Shape{2, 3}));
  const std::size_t second_row_order[3] = {2, 0, 1};  // row 1 is row 0 rotated
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(y(0, j) == Approx(kSoftmax123[j]).epsilon(1e-14));
    CHECK(ly(0, j) == Approx(kLogSoftmax123[j]).epsilon(1e-14));
    CHECK(y(1, j) == Approx(kSoftmax123[second_row_order[j]]).epsilon(1e-14));
    CHECK(ly(1, j) == Approx(kLogSoftmax123[second_row_order[j]]).epsilon(1e-14));
  }
  // Closed form on a random [2,3,5] input: y = exp(x) / sum exp(x) computed directly (small x: no overflow).
  const auto x = random_array({2, 3, 5}, 101, -3.0, 3.0);
  const Array<double> ys = softmax(Var<double>(x)).value();
  const Array<double> lys = log_softmax(Var<double>(x)).value();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t) {
      double total = 0;
      for (std::size_t c = 0; c < 5; ++c) total += std::exp(x(b, t, c));
      for (std::size_t c = 0; c < 5; ++c) {
        CHECK(ys(b, t, c) == Approx(std::exp(x(b, t, c)) / total).epsilon(1e-13));
        CHECK(lys(b, t, c) == Approx(x(b, t, c) - std::log(total)).epsilon(1e-13).margin(1e-14));
      }
    }
}

TEST_CASE("ops: softmax and log_softmax are stable for logits around +-1000", "[ops]") {
  for (double shift : {1000.0, -1000.0}) {
    INFO("logits [1, 2, 3] + " << shift);
    Var<double> a(Array<double>{1.0 + shift, 2.0 + shift, 3.0 + shift});
    const Array<double> y = softmax(a).value();
    const Array<double> ly = log_softmax(a).value();
    for (std::size_t j = 0; j < 3; ++j) {
      CHECK(y(j) == Approx(kSoftmax123[j]).epsilon(1e-12));
      CHECK(ly(j) == Approx(kLogSoftmax123[j]).epsilon(1e-12));
    }
    // float32 too: exp(1000) overflows float long before that, the shift keeps it finite
    Var<float> af(Array<float>{1.0f + float(shift), 2.0f + float(shift), 3.0f + float(shift)});
    const Array<float> yf = softmax(af).value();
    const Array<float> lyf = log_softmax(af).value();
    for (std::size_t j = 0; j < 3; ++j) {
      CHECK(yf(j) == Approx(kSoftmax123[j]).epsilon(1e-6));
      CHECK(lyf(j) == Approx(kLogSoftmax123[j]).epsilon(1e-6));
    }
  }
}

TEST_CASE("ops: causal_mask keeps the lower triangle like np.tril, square and non-square", "[ops]") {
  for (const Shape& shape : {Shape{2, 3, 4, 4}, Shape{2, 3, 5}, Shape{5, 3}}) {
    INFO("scores " << shape_str(shape));
    const auto x = random_array(shape, 102);
    const Array<double> y = causal_mask(Var<double>(x)).value();
    REQUIRE(to_shape(y.shape()) == shape);
    const std::size_t Tq = shape[shape.size() - 2], Tk = shape.back();
    for (std::size_t k = 0; k < x.size(); ++k) {
      const std::size_t i = (k / Tk) % Tq, j = k % Tk;
      if (j <= i)
        CHECK(y.data()[k] == x.data()[k]);
      else
        CHECK(is_neg_inf(y.data()[k]));
    }
  }
  Var<double> one_d(Array<double>{1.0, 2.0});
  CHECK_THROWS_WITH(causal_mask(one_d), Catch::Contains("at least 2 dimensions") && Catch::Contains("[2]"));
}

TEST_CASE("ops: softmax of causally masked scores is exactly 0 where masked and never NaN", "[ops]") {
  // Large and small scores so exp(-inf - max) would be tempting to get wrong.
  const auto x = random_array({2, 2, 5, 5}, 103, -50.0, 50.0);
  const Array<double> p = softmax(causal_mask(Var<double>(x))).value();
  const Array<double> lp = log_softmax(causal_mask(Var<double>(x))).value();
  const Array<float> pf =
      softmax(causal_mask(Var<float>(test::random_array_f({2, 2, 5, 5}, 103, -50.0, 50.0)))).value();
  for (std::size_t r = 0; r < p.size() / 5; ++r) {  // the rows of (2, 2, 5, 5)
    const std::size_t i = r % 5;
    double total = 0;
    float total_f = 0;
    for (std::size_t j = 0; j < 5; ++j) {
      const std::size_t k = r * 5 + j;
      REQUIRE_FALSE(std::isnan(p.data()[k]));
      REQUIRE_FALSE(std::isnan(lp.data()[k]));
      REQUIRE_FALSE(std::isnan(pf.data()[k]));
      if (j > i) {
        CHECK(p.data()[k] == 0.0);  // exactly
        CHECK(pf.data()[k] == 0.0f);
        CHECK(is_neg_inf(lp.data()[k]));
      } else {
        CHECK(std::isfinite(lp.data()[k]));
      }
      total += p.data()[k];
      total_f += pf.data()[k];
    }
    CHECK(total == Approx(1.0).epsilon(1e-14));
    CHECK(total_f == Approx(1.0f).epsilon(1e-6));
  }
  // Row 0 keeps only column 0: its softmax is exactly [1, 0, 0, 0, 0].
  CHECK(p(0, 0, 0, 0) == 1.0);
}

TEST_CASE("ops: causal_mask backward passes the gradient where kept and 0 where masked", "[ops]") {
  Var<double> x(random_array({2, 3, 4}, 104), true);
  const Array<double> seed = random_array({2, 3, 4}, 105, 1.0, 2.0);  // nonzero everywhere
  causal_mask(x).backward(seed);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 4; ++j) CHECK(x.grad()(b, i, j) == (j <= i ? seed(b, i, j) : 0.0));
}

TEST_CASE("ops: softmax and log_softmax give NaN for a row of only -inf or with a NaN, and reject a 0-d input",
          "[ops]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Var<double> a(Array<double>{{0.0, 1.0}, {-inf, -inf}, {nan, 2.0}});
  for (const Array<double>& y : {softmax(a).value(), log_softmax(a).value()}) {
    CHECK(std::isfinite(y(0, 0)));
    CHECK(std::isfinite(y(0, 1)));
    for (std::size_t r = 1; r < 3; ++r)
      for (std::size_t j = 0; j < 2; ++j) CHECK(std::isnan(y(r, j)));  // as torch.softmax does
  }
  Var<double> scalar(Array<double>(3.0));
  CHECK_THROWS_AS(softmax(scalar), std::invalid_argument);
  CHECK_THROWS_WITH(log_softmax(scalar), Catch::Contains("0-d"));
}

TEST_CASE("gradcheck: softmax", "[gradcheck][ops]") {
  const auto x = random_array({2, 3, 5}, 111, -2.0, 2.0);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return softmax(in[0]); }, {x}));
  const auto v = random_array({7}, 112, -2.0, 2.0);  // 1-D: a single row
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return softmax(in[0]); }, {v}));
}

TEST_CASE("gradcheck: log_softmax", "[gradcheck][ops]") {
  const auto x = random_array({2, 3, 5}, 113, -2.0, 2.0);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return log_softmax(in[0]); }, {x}));
  // The same input through both ops: the two gradients accumulate.
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return log_softmax(in[0]) + softmax(in[0]); }, {x}));
}

TEST_CASE("gradcheck: softmax with causal mask on [B,H,T,T]", "[gradcheck][ops]") {
  const auto scores = random_array({2, 2, 4, 4}, 114, -2.0, 2.0);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return softmax(causal_mask(in[0])); }, {scores}));
}

TEST_CASE("gradcheck: softmax with a non-square causal mask (Tq < Tk and Tq > Tk)", "[gradcheck][ops]") {
  const auto wide = random_array({2, 3, 5}, 115, -2.0, 2.0);  // Tq = 3 < Tk = 5
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return softmax(causal_mask(in[0])); }, {wide}));
  const auto tall = random_array({5, 3}, 116, -2.0, 2.0);  // Tq = 5 > Tk = 3
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return softmax(causal_mask(in[0])); }, {tall}));
}
