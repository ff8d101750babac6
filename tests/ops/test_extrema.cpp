// max, min, argmax, argmin, maximum, minimum: values and indices by hand, ties and NaN as torch, and float64
// gradchecks away from ties.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("ops: max and min over everything and along an axis, with the first index of equal values", "[ops]") {
  const Var<double> a(Array<double>{{3, 7, 7}, {9, -1, 2}});
  CHECK(max(a).item() == 9);
  CHECK(min(a).item() == -1);
  const ValuesIndices<double> m = max(a, 1);
  CHECK((m.values.value() == Array<double>{7, 9}));
  CHECK((m.indices == IndexArray{1, 0}));  // 7 twice in row 0: the first
  const ValuesIndices<double> n = min(a, 0, true);
  CHECK(n.values.shape() == Shape{1, 3});
  CHECK((n.values.value() == Array<double>{{3, -1, 2}}));
  CHECK((n.indices == IndexArray{{0, 1, 1}}));
  CHECK(argmax(a)() == 3);
  CHECK(argmin(a)() == 4);
  CHECK((argmax(a, -1) == IndexArray{1, 0}));
  CHECK((argmin(a, 0, true) == IndexArray{{0, 1, 1}}));
}

TEST_CASE("ops: a NaN is the max and the min, and maximum and minimum broadcast", "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Var<double> a(Array<double>{1.0, nan, 3.0});
  CHECK(std::isnan(max(a).item()));
  CHECK(std::isnan(min(a).item()));
  CHECK(argmax(a)() == 1);
  const Array<double> mx = maximum(a, Var<double>(Array<double>{2.0})).value();
  CHECK(mx(0) == 2.0);
  CHECK(std::isnan(mx(1)));
  CHECK(mx(2) == 3.0);
  CHECK((minimum(Var<double>(Array<double>{{1.0, 5.0}, {4.0, 0.0}}), Var<double>(Array<double>{2.0, 3.0})).value() ==
         Array<double>{{1.0, 3.0}, {2.0, 0.0}}));
}

TEST_CASE("ops: equal maxima share the gradient as torch does", "[ops]") {
  Var<double> a(Array<double>{5.0, 1.0, 5.0, 5.0}, true);
  max(a).backward();
  CHECK((a.grad() == Array<double>{1.0 / 3, 0.0, 1.0 / 3, 1.0 / 3}));
  Var<double> x(Array<double>{1.0, 2.0, 3.0}, true), y(Array<double>{1.0, 5.0, 0.0}, true);
  maximum(x, y).backward(Array<double>{1.0, 1.0, 1.0});
  CHECK((x.grad() == Array<double>{0.5, 0.0, 1.0}));
  CHECK((y.grad() == Array<double>{0.5, 1.0, 0.0}));
  Var<double> r(Array<double>{{2.0, 2.0}}, true);
  max(r, 1).values.backward(Array<double>{1.0});
  CHECK((r.grad() == Array<double>{{1.0, 0.0}}));  // along an axis the gradient goes to the index returned
}

TEST_CASE("gradcheck: max and min over everything and along each axis", "[gradcheck][ops]") {
  const auto a = random_array({3, 4, 2}, 101);  // distinct values: no ties
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return max(in[0]); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return min(in[0]); }, {a}));
  for (const long axis : {0L, 1L, -1L})
    for (const bool keep : {false, true}) {
      REQUIRE_GRADCHECK(gradcheck([=](const Inputs& in) { return max(in[0], axis, keep).values; }, {a}));
      REQUIRE_GRADCHECK(gradcheck([=](const Inputs& in) { return min(in[0], axis, keep).values; }, {a}));
    }
}

TEST_CASE("gradcheck: maximum and minimum, broadcast, away from ties", "[gradcheck][ops]") {
  const auto a = random_array({3, 4}, 102), b = random_array({4}, 103);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return maximum(in[0], in[1]); }, {a, b}, {}, {"a", "b"}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return minimum(in[1], in[0]); }, {a, b}, {}, {"a", "b"}));
}
