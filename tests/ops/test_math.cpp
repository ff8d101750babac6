// pow (a constant or a tensor exponent), sqrt, sigmoid, abs, clone, the steps (round, floor, ...) and sin, cos, tan,
// log1p, expm1, erf: forward values against the C library, the derivative rules at their special points (0^0, |0|),
// and float64 gradchecks.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("ops: pow, sqrt, sigmoid and abs forward match std::pow, std::sqrt, 1 / (1 + std::exp(-x)), std::abs",
          "[ops]") {
  const Array<double> x = random_array({3, 5}, 81, -3.0, 3.0);
  const Array<double> pos = random_array({3, 5}, 82, 0.1, 4.0);
  for (const double p : {3.0, 2.0, -2.0, 1.0, 0.0}) {
    const Array<double> y = pow(Var<double>(x), p).value();
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(y.data()[i] == Approx(std::pow(x.data()[i], p)).epsilon(1e-15));
  }
  const Array<double> half = pow(Var<double>(pos), 0.5).value(), root = sqrt(Var<double>(pos)).value();
  const Array<double> tensor_pow = pow(Var<double>(pos), Var<double>(x)).value();
  const Array<double> s = sigmoid(Var<double>(x)).value(), m = abs(Var<double>(x)).value();
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(half.data()[i] == Approx(std::sqrt(pos.data()[i])).epsilon(1e-15));
    CHECK(root.data()[i] == std::sqrt(pos.data()[i]));
    CHECK(tensor_pow.data()[i] == Approx(std::pow(pos.data()[i], x.data()[i])).epsilon(1e-15));
    CHECK(s.data()[i] == Approx(1 / (1 + std::exp(-x.data()[i]))).epsilon(1e-15));
    CHECK(m.data()[i] == std::abs(x.data()[i]));
  }
  // a non-whole power of a negative number is NaN, as in torch and NumPy
  CHECK(std::isnan(pow(Var<double>(Array<double>{-2.0}), 0.5).item()));
}

TEST_CASE("ops: sigmoid is exact at both ends and pow broadcasts its exponent", "[ops]") {
  const Array<double> s = sigmoid(Var<double>(Array<double>{-1000.0, 1000.0, 0.0})).value();
  CHECK(s(0) == 0.0);
  CHECK(s(1) == 1.0);
  CHECK(s(2) == 0.5);
  const Var<double> p =
      pow(Var<double>(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}), Var<double>(Array<double>{2.0, 0.0, 1.0}));
  // within 1e-12, the ARM64 tolerance of docs/platforms.md: xsimd's NEON pow is exp(b log a), not exact for integers
  const Array<double> expected = {{1.0, 1.0, 3.0}, {16.0, 1.0, 6.0}};
  REQUIRE(p.value().shape() == expected.shape());
  for (std::size_t i = 0; i < expected.size(); ++i)
    CHECK(p.value().data()[i] == Approx(expected.data()[i]).epsilon(1e-12));
}

TEST_CASE("ops: the derivatives at the special points follow torch: d|x| at 0 is 0, d(x^0) is 0, d(0^b)/db is 0",
          "[ops]") {
  Var<double> x(Array<double>{0.0, -2.0, 3.0}, true);
  abs(x).backward(Array<double>{1.0, 1.0, 1.0});
  CHECK((x.grad() == Array<double>{0.0, -1.0, 1.0}));
  Var<double> z(Array<double>{0.0, 2.0}, true);
  pow(z, 0.0).backward(Array<double>{1.0, 1.0});
  CHECK((z.grad() == Array<double>{0.0, 0.0}));
  Var<double> base(Array<double>{0.0, 0.0}, true), exponent(Array<double>{0.0, 2.0}, true);
  pow(base, exponent).backward(Array<double>{1.0, 1.0});
  CHECK((base.grad() == Array<double>{0.0, 0.0}));      // b = 0: 0; b = 2: 2 * 0^1 = 0
  CHECK((exponent.grad() == Array<double>{0.0, 0.0}));  // a = 0, b >= 0: 0 (not 0 * -inf)
}

TEST_CASE("gradcheck: pow with a constant exponent, whole powers of any sign and real powers of positives",
          "[gradcheck][ops]") {
  const auto any = random_array({3, 4}, 83, -2.0, 2.0), positive = random_array({3, 4}, 84, 0.2, 3.0);
  for (const double p : {3.0, 2.0, 1.0, -2.0})
    REQUIRE_GRADCHECK(gradcheck([p](const Inputs& in) { return pow(in[0], p); }, {any}));
  for (const double p : {0.5, -1.5, 2.7})
    REQUIRE_GRADCHECK(gradcheck([p](const Inputs& in) { return pow(in[0], p); }, {positive}));
}

TEST_CASE("gradcheck: pow of two tensors, broadcast", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return pow(in[0], in[1]); },
                              {random_array({2, 3}, 85, 0.3, 2.0), random_array({3}, 86, -1.5, 2.5)}, {},
                              {"base", "exponent"}));
}

TEST_CASE("gradcheck: sqrt, sigmoid, abs away from 0, and clone", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return sqrt(in[0]); }, {random_array({3, 4}, 87, 0.1, 4.0)}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return sigmoid(in[0]); }, {random_array({3, 4}, 88, -6.0, 6.0)}));
  Array<double> away = random_array({3, 4}, 89, 0.2, 2.0);
  for (std::size_t i = 0; i < away.size(); i += 2) away.data()[i] = -away.data()[i];
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return abs(in[0]); }, {away}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return clone(in[0]) * in[0]; }, {random_array({2, 3}, 90)}));
}

TEST_CASE("ops: clone is a new buffer with the same values", "[ops]") {
  const Var<double> a(random_array({2, 3}, 91), true);
  const Var<double> c = clone(a);
  CHECK(c.value() == a.value());
  CHECK(c.value().data() != a.value().data());
  CHECK(c.requires_grad());
}

TEST_CASE("ops: round halves to even and to decimals as torch, floor, ceil, trunc, sign and frac as std's", "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Var<double> x(Array<double>{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7, 1.2, nan});
  const Array<double> r = round(x).value();
  const Array<double> expected = {-2, -2, -0.0, 0, 2, 2, -2, 1};
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(r(i) == expected(i));
  CHECK(std::isnan(r(8)));
  CHECK((round(Var<double>(Array<double>{1.2345, 25.0, -0.125}), 2).value() == Array<double>{1.23, 25.0, -0.12}));
  CHECK((round(Var<double>(Array<double>{1234.5, 25.0, -149.0}), -1).value() == Array<double>{1230, 20, -150}));
  const Var<float> y(Array<float>{-1.5F, -0.25F, 0.0F, 0.75F, 2.0F});
  CHECK((floor(y).value() == Array<float>{-2, -1, 0, 0, 2}));
  CHECK((ceil(y).value() == Array<float>{-1, -0.0F, 0, 1, 2}));
  CHECK((trunc(y).value() == Array<float>{-1, -0.0F, 0, 0, 2}));
  CHECK((sign(y).value() == Array<float>{-1, -1, 0, 1, 1}));
  CHECK((frac(y).value() == Array<float>{-0.5F, -0.25F, 0, 0.75F, 0}));
  CHECK(std::isnan(sign(Var<double>(Array<double>{nan})).value()(0)));
}

TEST_CASE("gradcheck: round, floor, ceil, trunc and sign pass 0 away from their steps, frac passes dout",
          "[gradcheck][ops]") {
  // values at least 0.1 from a whole number (or a half, for round): the finite differences stay on one step
  const Array<double> a = {{-1.3, 0.2, 2.7}, {-0.6, 1.15, 3.4}};
  for (const auto& op : std::vector<Var<double> (*)(const Var<double>&)>{&floor<double>, &ceil<double>, &trunc<double>,
                                                                         &sign<double>, &frac<double>})
    REQUIRE_GRADCHECK(gradcheck([op](const Inputs& in) { return op(in[0]); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return round(in[0]) * in[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return round(in[0], 1) + in[0]; }, {Array<double>(a + 0.02)}));
}

TEST_CASE("ops: sin, cos, tan, log1p, expm1 and erf match the C library in both precisions", "[ops]") {
  const Array<double> x = random_array({3, 5}, 93, -3.0, 3.0);
  using Fn = Var<double> (*)(const Var<double>&);
  using Ref = double (*)(double);
  const std::vector<std::pair<Fn, Ref>> pairs = {
      {&sin<double>, [](double v) { return std::sin(v); }}, {&cos<double>, [](double v) { return std::cos(v); }},
      {&tan<double>, [](double v) { return std::tan(v); }}, {&expm1<double>, [](double v) { return std::expm1(v); }},
      {&erf<double>, [](double v) { return std::erf(v); }},
  };
  for (const auto& [op, ref] : pairs) {
    const Array<double> y = op(Var<double>(x)).value();
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(y.flat(i) == ref(x.flat(i)));
  }
  // log1p keeps what log(1 + a) loses for small a
  CHECK(log1p(Var<double>(Array<double>{1e-17})).item() == 1e-17);
  CHECK(expm1(Var<double>(Array<double>{1e-17})).item() == 1e-17);
  CHECK(log1p(Var<float>(Array<float>{3.0F})).item() == std::log1p(3.0F));
  CHECK(erf(Var<float>(Array<float>{0.5F})).item() == std::erf(0.5F));
}

TEST_CASE("gradcheck: sin, cos, tan, log1p, expm1 and erf", "[gradcheck][ops]") {
  const Array<double> any = random_array({3, 4}, 94, -1.4, 1.4);  // inside tan's (-pi/2, pi/2)
  for (const auto& op : std::vector<Var<double> (*)(const Var<double>&)>{&sin<double>, &cos<double>, &tan<double>,
                                                                         &expm1<double>, &erf<double>})
    REQUIRE_GRADCHECK(gradcheck([op](const Inputs& in) { return op(in[0]) * in[0]; }, {any}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return log1p(in[0]); }, {random_array({3, 4}, 95, -0.9, 3.0)}));
}
