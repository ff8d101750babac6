// unsqueeze, squeeze, flatten, stack, unbind and expand: shapes and values as torch's, errors, float64 gradchecks.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("ops: unsqueeze, squeeze and flatten give torch's shapes and keep the values in order", "[ops]") {
  const Var<double> a(random_array({2, 1, 3}, 111));
  CHECK(unsqueeze(a, 0).shape() == Shape{1, 2, 1, 3});
  CHECK(unsqueeze(a, -1).shape() == Shape{2, 1, 3, 1});
  CHECK(unsqueeze(a, 3).shape() == Shape{2, 1, 3, 1});
  CHECK(squeeze(a).shape() == Shape{2, 3});
  CHECK(squeeze(a, 1).shape() == Shape{2, 3});
  CHECK(squeeze(a, 0).shape() == Shape{2, 1, 3});  // not of length 1: unchanged
  CHECK(flatten(a).shape() == Shape{6});
  CHECK(flatten(unsqueeze(a, 0), 1, 2).shape() == Shape{1, 2, 3});
  Array<double> flat = a.value();
  flat.reshape({6});
  CHECK(flatten(a).value() == flat);
  CHECK_THROWS_WITH(unsqueeze(a, 4), Catch::Contains("unsqueeze"));
  CHECK_THROWS_WITH(flatten(a, 2, 0), Catch::Contains("flatten"));
}

TEST_CASE("ops: stack puts the parts along a new axis, and unbind takes them apart again", "[ops]") {
  const Var<double> p(Array<double>{1, 2, 3}), q(Array<double>{4, 5, 6});
  CHECK((stack<double>({p, q}, 0).value() == Array<double>{{1, 2, 3}, {4, 5, 6}}));
  CHECK((stack<double>({p, q}, -1).value() == Array<double>{{1, 4}, {2, 5}, {3, 6}}));
  const std::vector<Var<double>> rows = unbind(stack<double>({p, q}, 1), 1);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].value() == q.value());
  CHECK_THROWS_WITH(stack<double>({p, Var<double>(Array<double>{1, 2})}, 0), Catch::Contains("stack"));
  CHECK_THROWS_WITH(stack<double>({}, 0), Catch::Contains("stack"));
}

TEST_CASE("ops: expand stretches length-1 axes and adds leading ones, -1 keeping an axis", "[ops]") {
  Array<double> column = {1.0, 2.0};
  column.reshape({2, 1});
  const Var<double> a(column);
  CHECK((expand(a, {2, 3}).value() == Array<double>{{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}}));
  CHECK(expand(a, {4, -1, 3}).shape() == Shape{4, 2, 3});
  CHECK_THROWS_WITH(expand(a, {3, 3}), Catch::Contains("only a dim of length 1 stretches"));
  CHECK_THROWS_WITH(expand(a, {3}), Catch::Contains("at least as many sizes"));
}

TEST_CASE("gradcheck: unsqueeze, squeeze, flatten, stack, unbind and expand", "[gradcheck][ops]") {
  const auto a = random_array({2, 1, 3}, 112), b = random_array({2, 1, 3}, 113);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return unsqueeze(in[0], 1) * in[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return squeeze(in[0]); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return flatten(in[0], 1); }, {a}));
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return stack<double>({in[0], in[1], in[0]}, 2);
      },
      {a, b}, {}, {"a", "b"}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return unbind(in[0], -1)[2] * unbind(in[0], -1)[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return expand(in[0], {4, 2, 5, 3}); }, {a}));
}
