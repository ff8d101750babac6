// sum, mean, var and std_dev over all elements, one axis and lists of axes.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("ops: sum and mean forward values", "[ops]") {
  Var<double> a(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  CHECK(sum(a).item() == 21.0);
  CHECK(mean(a).item() == 3.5);
  CHECK((sum(a, 0).value() == Array<double>{5.0, 7.0, 9.0}));
  CHECK((mean(a, -1).value() == Array<double>{2.0, 5.0}));
  CHECK((sum(a, 1, true).shape() == Shape{2, 1}));
  CHECK_THROWS_WITH(sum(a, 2), Catch::Contains("axis 2"));
}

TEST_CASE("gradcheck: sum and mean over all elements", "[gradcheck][ops]") {
  const auto a = random_array({2, 3, 4}, 61);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return sum(in[0]); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return mean(in[0]); }, {a}));
}

TEST_CASE("gradcheck: sum and mean over an axis, with and without keepdim", "[gradcheck][ops]") {
  const auto a = random_array({2, 3, 4}, 62);
  for (long axis : {0L, 1L, -1L})
    for (bool keep : {false, true}) {
      INFO("axis " << axis << " keepdim " << keep);
      REQUIRE_GRADCHECK(gradcheck([axis, keep](const Inputs& in) { return sum(in[0], axis, keep); }, {a}));
      REQUIRE_GRADCHECK(gradcheck([axis, keep](const Inputs& in) { return mean(in[0], axis, keep); }, {a}));
    }
}

TEST_CASE("ops: sum, mean and var over a list of axes, var with torch's and NumPy's corrections", "[ops]") {
  Var<double> a(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 9.0}});
  CHECK(sum(a, std::vector<long>{0, 1}).item() == 24.0);
  Array<double> row_means = {2.0, 6.0};
  row_means.reshape({2, 1});
  CHECK(mean(a, std::vector<long>{-1}, true).value() == row_means);
  CHECK(sum(a, std::vector<long>{1, 0}, true).shape() == Shape{1, 1});
  CHECK(mean(a, std::vector<long>{}).item() == 4.0);  // no axes: all of them, as torch
  // the values 1 2 3 4 5 9: mean 4, squared deviations 9 4 1 0 1 25 (sum 40)
  CHECK(var(a).item() == Approx(40.0 / 5).epsilon(1e-15));
  CHECK(var(a, 0.0).item() == Approx(40.0 / 6).epsilon(1e-15));
  CHECK((var(a, std::vector<long>{1}).value() == Array<double>{1.0, 7.0}));  // rows: (1 + 0 + 1) / 2, (4 + 1 + 9) / 2
  CHECK(std_dev(a, std::vector<long>{0}, 0.0, true).shape() == Shape{1, 3});
  CHECK(std::isnan(var(Var<double>(Array<double>{2.0})).item()));  // n = 1 with correction 1: 0 / 0, as torch
  CHECK_THROWS_WITH(sum(a, std::vector<long>{1, -1}), Catch::Contains("more than once"));
}

TEST_CASE("gradcheck: sum, mean, var and std_dev over lists of axes", "[gradcheck][ops]") {
  const auto a = random_array({2, 3, 4}, 63);
  for (const auto& axes : std::vector<std::vector<long>>{{0, 2}, {-1}, {0, 1, 2}, {}})
    for (const bool keep : {false, true}) {
      REQUIRE_GRADCHECK(gradcheck([=](const Inputs& in) { return sum(in[0], axes, keep); }, {a}));
      REQUIRE_GRADCHECK(gradcheck([=](const Inputs& in) { return mean(in[0], axes, keep); }, {a}));
      REQUIRE_GRADCHECK(gradcheck([=](const Inputs& in) { return var(in[0], axes, 1.0, keep); }, {a}));
      REQUIRE_GRADCHECK(gradcheck([=](const Inputs& in) { return std_dev(in[0], axes, 0.0, keep); }, {a}));
    }
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return var(in[0]); }, {a}));
}

TEST_CASE("ops: cumsum runs along one axis, logsumexp and norm reduce as torch's", "[ops]") {
  Var<double> a(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 9.0}});
  CHECK((cumsum(a, 1).value() == Array<double>{{1.0, 3.0, 6.0}, {4.0, 9.0, 18.0}}));
  CHECK((cumsum(a, 0).value() == Array<double>{{1.0, 2.0, 3.0}, {5.0, 7.0, 12.0}}));
  CHECK(cumsum(Var<double>(Array<double>(3.0)), 0).item() == 3.0);  // 0-d: itself
  const Array<double> lse = logsumexp(a, std::vector<long>{1}).value();
  CHECK(lse(0) == Approx(std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0))).epsilon(1e-14));
  // a row far beyond exp's range stays finite (the max is taken out first); a row of -inf is -inf
  const double inf = std::numeric_limits<double>::infinity();
  Var<double> big(Array<double>{{1000.0, 1000.0}, {-inf, -inf}});
  const Array<double> b = logsumexp(big, std::vector<long>{-1}, true).value();
  CHECK(b(0, 0) == Approx(1000.0 + std::log(2.0)).epsilon(1e-14));
  CHECK(std::isinf(b(1, 0)));
  CHECK(b.shape()[1] == 1);
  CHECK(norm(a, std::vector<long>{}).item() == Approx(std::sqrt(136.0)).epsilon(1e-15));
  CHECK((norm(a, std::vector<long>{0}).value() == Array<double>{std::sqrt(17.0), std::sqrt(29.0), std::sqrt(90.0)}));
  // the 2-norm of zeros passes no gradient (torch's 0), not NaN
  Var<double> zero(Array<double>{0.0, 0.0}, true);
  norm(zero, std::vector<long>{}).backward();
  CHECK((zero.grad() == Array<double>{0.0, 0.0}));
}

TEST_CASE("gradcheck: cumsum, logsumexp and norm over each axis", "[gradcheck][ops]") {
  const auto a = random_array({2, 3, 4}, 64);
  for (long axis : {0L, 1L, -1L}) {
    INFO("axis " << axis);
    REQUIRE_GRADCHECK(gradcheck([axis](const Inputs& in) { return cumsum(in[0], axis); }, {a}));
    REQUIRE_GRADCHECK(gradcheck([axis](const Inputs& in) { return logsumexp(in[0], {axis}); }, {a}));
    REQUIRE_GRADCHECK(gradcheck([axis](const Inputs& in) { return norm(in[0], {axis}, true); }, {a}));
  }
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return logsumexp(in[0], {0, 2}, true); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return norm(in[0], {}); }, {a}));
}
