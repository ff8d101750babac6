// sum and mean over all elements and over one axis.
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
