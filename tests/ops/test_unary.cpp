// exp, log, tanh, relu, gelu: forward values against closed forms / reference numbers, float32 vs float64,
// and float64 gradchecks.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// Largest |a - b| over all elements.
double max_abs_diff(const Array<double>& a, const Array<double>& b) {
  return xt::amax(xt::abs(a - b), xt::evaluation_strategy::immediate)();
}

// Values with |x| in [0.1, 1] and random signs: far from relu's kink at 0 compared with gradcheck's step.
Array<double> away_from_zero(const Shape& shape, std::uint64_t seed) {
  Array<double> a = random_array(shape, seed, 0.1, 1.0);
  const Array<double> sign = random_array(shape, seed + 1);
  for (std::size_t i = 0; i < a.size(); ++i)
    if (sign.flat(i) < 0) a.flat(i) = -a.flat(i);
  return a;
}
}  // namespace

// ---- forward values

TEST_CASE("ops: exp and log forward match known values and identities", "[ops]") {
  const Var<double> x(Array<double>{0.0, 1.0, -2.0, 0.5});
  const Array<double> e = exp(x).value();
  CHECK(e(0) == 1.0);
  CHECK(e(1) == Approx(2.718281828459045).epsilon(1e-15));
  CHECK(e(2) == Approx(0.1353352832366127).epsilon(1e-15));
  CHECK(e(3) == Approx(1.6487212707001282).epsilon(1e-15));

  const Var<double> y(Array<double>{1.0, 2.0, 10.0, 0.25});
  const Array<double> l = log(y).value();
  CHECK(l(0) == 0.0);
  CHECK(l(1) == Approx(0.6931471805599453).epsilon(1e-15));
  CHECK(l(2) == Approx(2.302585092994046).epsilon(1e-15));
  CHECK(l(3) == Approx(-1.3862943611198906).epsilon(1e-15));  // log(1/4) = -2 log 2

  // log(exp(a)) = a, exp(log(b)) = b, exp(a + b) = exp(a) exp(b)
  const Var<double> a(random_array({3, 4}, 401, -3.0, 3.0));
  const Var<double> b(random_array({3, 4}, 402, 0.1, 5.0));
  CHECK(max_abs_diff(log(exp(a)).value(), a.value()) < 1e-14);
  CHECK(max_abs_diff(exp(log(b)).value(), b.value()) < 1e-14);
  CHECK(max_abs_diff(exp(a + Var<double>(b)).value(), Array<double>(exp(a).value() * exp(Var<double>(b)).value())) <
        1e-12);
}

TEST_CASE("ops: exp of infinities, of huge values and of NaN, in float and double (vector and tail lanes)", "[ops]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // 15 values: whole SIMD batches and a scalar tail in both precisions
  const Array<double> x = {-inf, -1e4, -1000.0, -800.0, -700.0, 0.0, nan, -inf, 1.0, nan, inf, 1e4, 800.0, -inf, 2.5};
  const Array<double> ed = exp(Var<double>(x)).value();
  const Array<float> ef = exp(Var<float>(Array<float>(xt::cast<float>(x)))).value();
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO(i << ": exp(" << x(i) << ")");
    if (std::isnan(x(i))) {
      CHECK(std::isnan(ed(i)));
      CHECK(std::isnan(ef(i)));
    } else {
      const double want_d = std::exp(x(i));  // the clamp to [-1000, 1000] only touches values whose exp is 0 or inf
      if (std::isinf(want_d) || want_d == 0.0)
        CHECK(ed(i) == want_d);
      else
        CHECK(ed(i) == Approx(want_d).epsilon(1e-15));  // xsimd's exp is within an ulp of std::exp
      const float want = std::exp(static_cast<float>(x(i)));
      if (std::isinf(want) || want == 0.0f)
        CHECK(ef(i) == want);
      else
        CHECK(ef(i) == Approx(want).epsilon(1e-6));
    }
  }
  CHECK(ed(0) == 0.0);
  CHECK(ef(0) == 0.0f);
}

TEST_CASE("ops: tanh forward matches (e^2x - 1) / (e^2x + 1)", "[ops]") {
  const Var<double> x(Array<double>{0.0, 0.5, -1.0, 3.0});
  const Array<double> t = tanh(x).value();
  CHECK(t(0) == 0.0);
  CHECK(t(1) == Approx(0.46211715726000974).epsilon(1e-15));
  CHECK(t(2) == Approx(-0.7615941559557649).epsilon(1e-15));
  CHECK(t(3) == Approx(0.9950547536867305).epsilon(1e-15));
  const Array<double> v = random_array({5, 3}, 403, -2.0, 2.0);
  const Array<double> closed = (xt::exp(2.0 * v) - 1.0) / (xt::exp(2.0 * v) + 1.0);
  CHECK(max_abs_diff(tanh(Var<double>(v)).value(), closed) < 1e-14);
}

TEST_CASE("ops: relu forward keeps positives and zeroes the rest, and its derivative at 0 is 0", "[ops]") {
  Var<double> x(Array<double>{{-2.0, -0.5, 0.0}, {0.25, 1.0, 3.0}}, true);
  const Var<double> r = relu(x);
  CHECK((r.value() == Array<double>{{0.0, 0.0, 0.0}, {0.25, 1.0, 3.0}}));
  r.backward(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  CHECK((x.grad() == Array<double>{{0.0, 0.0, 0.0}, {4.0, 5.0, 6.0}}));
}

TEST_CASE("ops: gelu forward matches the tanh approximation at hand-picked points", "[ops]") {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated independently in float64
  const Var<double> x(Array<double>{1.0, -1.0, 2.0, -0.5, 0.0, 3.0});
  const Array<double> g = gelu(x).value();
  CHECK(g(0) == Approx(0.8411919906082768).epsilon(1e-14));
  CHECK(g(1) == Approx(-0.15880800939172324).epsilon(1e-14));
  CHECK(g(2) == Approx(1.954597694087775).epsilon(1e-14));
  CHECK(g(3) == Approx(-0.15428599017485606).epsilon(1e-14));
  CHECK(g(4) == 0.0);
  CHECK(g(5) == Approx(2.996362607918227).epsilon(1e-14));

  // the tanh is odd, so gelu(x) - gelu(-x) = x
  const Array<double> v = random_array({4, 5}, 404, -4.0, 4.0);
  const Array<double> diff = gelu(Var<double>(v)).value() - gelu(Var<double>(Array<double>(-v))).value();
  CHECK(max_abs_diff(diff, v) < 1e-14);
}

TEST_CASE("ops: float32 forward agrees with float64 to 1e-6 for exp, tanh and gelu", "[ops]") {
  const Array<double> v64 = random_array({8, 16}, 405, -3.0, 3.0);
  const Array<float> v32 = xt::cast<float>(v64);  // exact inputs of the float32 run, widened below
  const Array<double> v32_wide = xt::cast<double>(v32);
  const Array<double> gelu32 = xt::cast<double>(gelu(Var<float>(v32)).value());
  const Array<double> tanh32 = xt::cast<double>(tanh(Var<float>(v32)).value());
  const Array<double> v32_small = xt::cast<double>(Array<float>(v32 / 3.0f));
  const Array<double> exp32 = xt::cast<double>(exp(Var<float>(Array<float>(v32 / 3.0f))).value());
  CHECK(max_abs_diff(gelu32, gelu(Var<double>(v32_wide)).value()) < 1e-6);
  CHECK(max_abs_diff(tanh32, tanh(Var<double>(v32_wide)).value()) < 1e-6);
  CHECK(max_abs_diff(exp32, exp(Var<double>(v32_small)).value()) < 1e-6);  // inputs in [-1, 1): e^x < 2.72
}

// ---- gradchecks (float64 central differences)

TEST_CASE("gradcheck: exp", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return exp(in[0]); }, {random_array({3, 4}, 406, -2.0, 2.0)}));
}

TEST_CASE("gradcheck: log of positive inputs", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return log(in[0]); }, {random_array({3, 4}, 407, 0.2, 3.0)}));
}

TEST_CASE("gradcheck: tanh", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return tanh(in[0]); }, {random_array({3, 4}, 408, -2.5, 2.5)}));
}

TEST_CASE("gradcheck: relu away from the kink at 0", "[gradcheck][ops]") {
  const Array<double> x = away_from_zero({4, 5}, 409);
  REQUIRE(xt::any(x > 0.0));
  REQUIRE(xt::any(x < 0.0));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return relu(in[0]); }, {x}));
}

TEST_CASE("gradcheck: gelu", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return gelu(in[0]); }, {random_array({4, 5}, 411, -3.0, 3.0)}));
}

TEST_CASE("gradcheck: gelu of tanh of exp chained, input used twice", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return gelu(tanh(exp(in[0])) * in[0]); },
                              {random_array({3, 3}, 412, -1.5, 1.5)}));
}
