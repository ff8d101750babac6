// add, sub, mul, div, neg, scale: forward values and float64 gradchecks, broadcasting included.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("gradcheck: add, sub, mul, div on equal shapes", "[gradcheck][ops]") {
  const auto a = random_array({3, 4}, 11), b = random_array({3, 4}, 12, 0.5, 2.0);  // b away from 0 for div
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return add(in[0], in[1]); }, {a, b}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return sub(in[0], in[1]); }, {a, b}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return mul(in[0], in[1]); }, {a, b}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return div(in[0], in[1]); }, {a, b}));
}

TEST_CASE("gradcheck: broadcasting [B,T,C] + [C]", "[gradcheck][ops]") {
  const auto x = random_array({2, 3, 4}, 21), bias = random_array({4}, 22);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return add(in[0], in[1]); }, {x, bias}, {}, {"x", "bias"}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return sub(in[1], in[0]); }, {x, bias}, {}, {"x", "bias"}));
}

TEST_CASE("gradcheck: broadcasting [B,1,T] * [B,T,1]", "[gradcheck][ops]") {
  const auto a = random_array({2, 1, 3}, 31), b = random_array({2, 3, 1}, 32, 0.5, 2.0);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return mul(in[0], in[1]); }, {a, b}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return div(in[0], in[1]); }, {a, b}));
}

TEST_CASE("gradcheck: broadcasting a scalar-shaped [1] against [2,3]", "[gradcheck][ops]") {
  const auto a = random_array({2, 3}, 41), s = random_array({1}, 42, 0.5, 2.0);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return div(in[0], in[1]); }, {a, s}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return mul(in[1], in[0]); }, {a, s}));
}

TEST_CASE("gradcheck: neg and scale", "[gradcheck][ops]") {
  const auto a = random_array({2, 5}, 51);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return neg(in[0]); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return scale(in[0], -2.5); }, {a}));
}

TEST_CASE("ops: elementwise forward follows NumPy broadcasting", "[ops]") {
  Var<double> a(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Var<double> b(Array<double>{10.0, 20.0, 30.0});
  const Array<double> expected_add{{11.0, 22.0, 33.0}, {14.0, 25.0, 36.0}};
  CHECK((add(a, b).value() == expected_add));
  const Array<double> expected_div{{0.1, 0.1, 0.1}, {0.4, 0.25, 0.2}};
  CHECK(xt::allclose(div(a, b).value(), expected_div));
  CHECK((sub(a, b).value()(1, 2) == -24.0));
  CHECK((mul(a, b).value()(1, 0) == 40.0));
  CHECK((scale(a, 0.5).value()(0, 1) == 1.0));
  CHECK((neg(a).value()(1, 1) == -5.0));
}

TEST_CASE("ops: incompatible broadcast shapes name both shapes", "[ops]") {
  Var<double> a(Array<double>(xt::zeros<double>({2, 3})));
  Var<double> b(Array<double>(xt::zeros<double>({4})));
  CHECK_THROWS_WITH(add(a, b), Catch::Contains("[2, 3]") && Catch::Contains("[4]") && Catch::Contains("add"));
}

TEST_CASE("ops: sum_to_shape reduces leading and stretched axes", "[ops]") {
  Array<double> g = xt::ones<double>({2, 3, 4});
  CHECK((sum_to_shape(g, {4}) == Array<double>{6.0, 6.0, 6.0, 6.0}));
  const Array<double> r = sum_to_shape(g, {2, 1, 4});
  CHECK((to_shape(r.shape()) == Shape{2, 1, 4}));
  CHECK(r(1, 0, 3) == 3.0);
}

TEST_CASE("gradcheck: add of one shape, including a value added to itself", "[gradcheck][ops]") {
  // the first input takes dout's buffer over; the second gets a copy; a + a must get 2 dout
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return add(in[0], in[1]); },
                              {test::random_array({3, 4}, 31), test::random_array({3, 4}, 32)}, {}, {"a", "b"}));
  REQUIRE_GRADCHECK(
      gradcheck([](const Inputs& in) { return add(in[0], in[0]); }, {test::random_array({3, 4}, 33)}, {}, {"a"}));
  // a residual chain: h = x + f(x), out = h + g(h), where x feeds both branches
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        const Var<double> h = add(in[0], tanh(in[0]));
        return add(h, mul(h, in[1]));
      },
      {test::random_array({2, 3}, 34), test::random_array({2, 3}, 35)}, {}, {"x", "w"}));
}

TEST_CASE("ops: a constant on either side of + - * / gives the values of the same array expression", "[ops]") {
  const Var<float> x(Array<float>{{1.0f, -2.0f}, {4.0f, 0.5f}});
  const Array<float>& v = x.value();
  CHECK(xt::allclose((x * 0.5).value(), Array<float>(v * 0.5f)));
  CHECK(xt::allclose((0.5 * x).value(), Array<float>(0.5f * v)));
  CHECK(xt::allclose((1.0 - x).value(), Array<float>(1.0f - v)));
  CHECK(xt::allclose((x - 1.0f).value(), Array<float>(v - 1.0f)));
  CHECK(xt::allclose((2 + x).value(), Array<float>(2.0f + v)));
  CHECK(xt::allclose((x + 2).value(), Array<float>(v + 2.0f)));
  CHECK(xt::allclose((x / 2).value(), Array<float>(v / 2.0f)));
  CHECK(xt::allclose((3.0 / x).value(), Array<float>(3.0f / v)));
  CHECK(xt::allclose((-x).value(), Array<float>(-v)));
}

TEST_CASE("gradcheck: a constant on either side of + - * / and unary minus", "[gradcheck][ops]") {
  const auto a = random_array({2, 3}, 61, 0.5, 2.0);  // away from 0 for c / a
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return in[0] * 0.5; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return -1.5 * in[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return 1.0 - in[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return in[0] - 1.0; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return 2 + in[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return in[0] + 2; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return in[0] / 4; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return 3.0 / in[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return -in[0]; }, {a}));
  // a value used twice through constants: d/dx (1 - x) * (x / 2) = 0.5 - x
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return (1.0 - in[0]) * (in[0] / 2); }, {a}));
}

TEST_CASE("ops: remainder takes the divisor's sign and floor_divide floors, as Python's % and //", "[ops]") {
  const Var<double> a(Array<double>{5, -5, 7.5, -7.5}), b(Array<double>{3, 3, -2, 2});
  CHECK(remainder(a, b).value() == Array<double>{2, 1, -0.5, 0.5});
  CHECK(floor_divide(a, b).value() == Array<double>{1, -2, -4, -4});
  CHECK_FALSE(floor_divide(Var<double>(Array<double>{1.5}, true), b).requires_grad());
}

TEST_CASE("gradcheck: remainder of both operands, broadcast, away from its jumps", "[gradcheck][ops]") {
  // a / b kept at least 0.1 from a whole number, where floor(a / b) jumps
  Array<double> a = test::random_array({3, 4}, 311, -4.0, 4.0);
  const Array<double> b = test::random_array({4}, 312, 0.7, 1.9);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double q = a.data()[i] / b.data()[i % 4];
    if (std::abs(q - std::round(q)) < 0.1) a.data()[i] += 0.25 * b.data()[i % 4];
  }
  REQUIRE_GRADCHECK(
      gradcheck([](const std::vector<Var<double>>& in) { return remainder(in[0], in[1]); }, {a, b}, {}, {"a", "b"}));
}
