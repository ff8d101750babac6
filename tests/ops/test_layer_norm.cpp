// layer_norm: closed-form and PyTorch reference values, shape validation, float64 gradcheck of x, weight, bias.
#include <cmath>

#include <catch2/catch.hpp>
#include <xtensor/xbuilder.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
Var<double> ones(std::size_t c) { return Var<double>(Array<double>(xt::ones<double>({c}))); }
Var<double> zeros(std::size_t c) { return Var<double>(Array<double>(xt::zeros<double>({c}))); }
}  // namespace

TEST_CASE("ops: layer norm of [1, 2, 3, 4] matches the closed form", "[ops]") {
  Var<double> x(Array<double>{1.0, 2.0, 3.0, 4.0});
  // eps = 0: mean 2.5, biased variance 1.25, so y = (x - 2.5) / sqrt(1.25) = (2k - 5) / sqrt(5).
  const double expected0[4] = {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738};
  const Array<double> y0 = layer_norm(x, ones(4), zeros(4), 0.0).value();
  for (std::size_t j = 0; j < 4; ++j) CHECK(y0(j) == Approx(expected0[j]).epsilon(1e-14));
  // eps = 1e-5 (the default): y = (x - 2.5) / sqrt(1.25 + 1e-5); torch.nn.functional.layer_norm in float64 gives
  // [-1.341635419968927, -0.4472118066563091, 0.4472118066563089, 1.3416354199689269].
  const double expected5[4] = {-1.341635419968927, -0.4472118066563091, 0.4472118066563089, 1.3416354199689269};
  const Array<double> y5 = layer_norm(x, ones(4), zeros(4)).value();
  for (std::size_t j = 0; j < 4; ++j) {
    CHECK(y5(j) == Approx(expected5[j]).epsilon(1e-14));
    CHECK(y5(j) == Approx((x.value()(j) - 2.5) / std::sqrt(1.25 + 1e-5)).epsilon(1e-14));
  }
}

TEST_CASE("ops: layer norm with weight and bias matches torch.nn.functional.layer_norm", "[ops]") {
  Var<double> x(Array<double>{{0.5, -1.0, 2.0, 3.5}, {-0.3, 0.8, 0.1, -2.2}});
  Var<double> w(Array<double>{0.5, 1.5, -1.0, 2.0});
  Var<double> b(Array<double>{0.1, 0.2, 0.3, -0.4});
  // torch.nn.functional.layer_norm(x, (4,), w, b, 1e-5) on the float64 tensors above.
  const Array<double> expected{{-0.12360640022784303, -1.8124576020505871, -0.14721280045568602, 2.2832768027341164},
                               {0.1449919449133304, 1.8197100168798928, -0.14991944913330357, -3.6394200337597855}};
  const Array<double> y = layer_norm(x, w, b).value();
  REQUIRE((to_shape(y.shape()) == Shape{2, 4}));
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 4; ++j) CHECK(y(i, j) == Approx(expected(i, j)).epsilon(1e-13));
}

TEST_CASE("ops: layer norm rows have zero mean and unit variance, float32 agrees with float64", "[ops]") {
  const auto xd = random_array({3, 4, 16}, 201, -3.0, 5.0);
  const Array<double> y = layer_norm(Var<double>(xd), ones(16), zeros(16), 0.0).value();
  const Array<float> yf = layer_norm(Var<float>(test::random_array_f({3, 4, 16}, 201, -3.0, 5.0)),
                                     Var<float>(Array<float>(xt::ones<float>({16}))),
                                     Var<float>(Array<float>(xt::zeros<float>({16}))), 0.0f)
                              .value();
  for (std::size_t r = 0; r < 12; ++r) {
    double mean = 0, sq = 0;
    for (std::size_t j = 0; j < 16; ++j) mean += y.data()[r * 16 + j];
    mean /= 16;
    for (std::size_t j = 0; j < 16; ++j) sq += (y.data()[r * 16 + j] - mean) * (y.data()[r * 16 + j] - mean);
    CHECK(mean == Approx(0.0).margin(1e-14));
    CHECK(sq / 16 == Approx(1.0).epsilon(1e-13));
    for (std::size_t j = 0; j < 16; ++j) CHECK(yf.data()[r * 16 + j] == Approx(y.data()[r * 16 + j]).margin(1e-5));
  }
}

TEST_CASE("ops: layer norm rejects weight or bias that are not [C], naming the shapes", "[ops]") {
  Var<double> x(random_array({2, 3, 4}, 202));
  CHECK_THROWS_WITH(layer_norm(x, ones(5), zeros(4)),
                    Catch::Contains("weight") && Catch::Contains("[5]") && Catch::Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(layer_norm(x, ones(4), zeros(3)), Catch::Contains("bias") && Catch::Contains("[3]"));
  Var<double> w2(Array<double>(xt::ones<double>({1, 4})));
  CHECK_THROWS_WITH(layer_norm(x, w2, zeros(4)), Catch::Contains("weight") && Catch::Contains("[1, 4]"));
  CHECK_THROWS_WITH(layer_norm(x, ones(4), zeros(4), -1.0), Catch::Contains("eps = -1"));
  CHECK_THROWS_AS(layer_norm(Var<double>(Array<double>(1.0)), ones(1), zeros(1)), std::invalid_argument);
}

TEST_CASE("gradcheck: layer norm (x, weight, bias)", "[gradcheck][ops]") {
  const auto x = random_array({2, 3, 5}, 211, -2.0, 2.0);
  const auto w = random_array({5}, 212, 0.5, 1.5);
  const auto b = random_array({5}, 213);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return layer_norm(in[0], in[1], in[2]); }, {x, w, b}, {},
                              {"x", "weight", "bias"}));
  // eps large enough to matter in the gradient, and a 2-D input.
  const auto x2 = random_array({4, 6}, 214, -0.2, 0.2);
  const auto w2 = random_array({6}, 215, -1.5, 1.5);
  const auto b2 = random_array({6}, 216);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return layer_norm(in[0], in[1], in[2], 0.01); }, {x2, w2, b2}, {},
                              {"x", "weight", "bias"}));
}

TEST_CASE("gradcheck: layer norm applied twice to the same input accumulates", "[gradcheck][ops]") {
  const auto x = random_array({3, 4}, 217);
  const auto w = random_array({4}, 218, 0.5, 1.5);
  const auto b = random_array({4}, 219);
  REQUIRE_GRADCHECK(
      gradcheck([](const Inputs& in) { return layer_norm(layer_norm(in[0], in[1], in[2]), in[1], in[2]) * in[0]; },
                {x, w, b}, {}, {"x", "weight", "bias"}));
}
