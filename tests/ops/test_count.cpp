// bincount, unique, histc and nonzero: counts against hand-worked values, NaN and empty inputs, torch's edge rules,
// constants even of inputs that require a gradient, and refusals that name the op.
#include <catch2/catch.hpp>

#include <limits>

#include "tinyformer/ops/ops.hpp"

using namespace tf;

TEST_CASE("ops: bincount counts each value, or sums its weights, up to minlength", "[ops]") {
  const Var<double> ids(Array<double>{1, 3, 1, 0, 1});
  CHECK((bincount(ids).value() == Array<double>{1, 3, 0, 1}));
  CHECK((bincount(ids, std::size_t{6}).value() == Array<double>{1, 3, 0, 1, 0, 0}));
  const Var<float> w(Array<float>{0.5F, 2.0F, 0.25F, 1.0F, 4.0F}, true);
  const Var<float> sums = bincount(ids, w);
  CHECK((sums.value() == Array<float>{1.0F, 4.75F, 0.0F, 2.0F}));
  CHECK_FALSE(sums.requires_grad());
  CHECK((bincount(Var<double>(Array<double>::from_shape({0})), std::size_t{2}).value() == Array<double>{0, 0}));
}

TEST_CASE("ops: bincount refuses negative, fractional or NaN values, other dims and mismatched weights", "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const double bad : {-1.0, 0.5, nan})
    CHECK_THROWS_WITH(bincount(Var<double>(Array<double>{0, bad})), Catch::Contains("bincount: input must hold whole"));
  CHECK_THROWS_WITH(bincount(Var<double>(Array<double>{{0, 1}})), Catch::Contains("must be 1-D, got 2-D"));
  CHECK_THROWS_WITH(bincount(Var<double>(Array<double>{0, 1}), Var<double>(Array<double>{1})),
                    Catch::Contains("weights must have the input's shape [2], got [1]"));
  CHECK_THROWS_WITH(bincount(Var<double>(Array<double>{1e30})), Catch::Contains("more than this machine has"));
}

TEST_CASE("ops: unique sorts the distinct values, NaN last and once, with each entry's position and the counts",
          "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Unique<double> u = unique(Var<double>(Array<double>{{3, nan, 1}, {3, -2, nan}}));
  REQUIRE(u.values.value().size() == 4);
  CHECK(u.values.value()(0) == -2);
  CHECK(u.values.value()(1) == 1);
  CHECK(u.values.value()(2) == 3);
  CHECK(std::isnan(u.values.value()(3)));
  CHECK((u.inverse.value() == Array<double>{{2, 3, 1}, {2, 0, 3}}));
  CHECK((u.counts.value() == Array<double>{1, 1, 2, 2}));
  CHECK(unique(Var<float>(Array<float>::from_shape({0}))).values.value().size() == 0);
}

TEST_CASE("ops: histc puts the maximum in the last bin, leaves out NaN and values outside, and widens one value",
          "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Var<double> x(Array<double>{0, 1, 2, 3, 4, nan, 9});
  CHECK((histc(x, 4, 0.0, 4.0).value() == Array<double>{1, 1, 1, 2}));
  CHECK((histc(Var<double>(Array<double>{0, 1, 2, 3, 4, 9}), 3).value() == Array<double>{3, 2, 1}));  // [0, 9]
  CHECK_THROWS_WITH(histc(x, 3), Catch::Contains("histc: the input's range [nan, nan] is not finite; give min"));
  CHECK_THROWS_WITH(histc(Var<double>(Array<double>{1, inf}), 3), Catch::Contains("range [1, inf] is not finite"));
  CHECK((histc(Var<float>(Array<float>{2, 2}), 2).value() == Array<float>{0, 2}));  // [1, 3]
  CHECK((histc(Var<double>(Array<double>{0.1, 0.2, 0.3}), 10, 0.0, 1.0).value() ==
         Array<double>{0, 1, 1, 1, 0, 0, 0, 0, 0, 0}));  // each on a lower edge: bins 1, 2, 3
  CHECK_THROWS_WITH(histc(x, 0), Catch::Contains("histc: bins must be >= 1"));
  CHECK_THROWS_WITH(histc(x, 2, 3.0, 1.0), Catch::Contains("histc: min 3 and max 1"));
}

TEST_CASE("ops: nonzero lists the coordinates of the nonzero entries row by row", "[ops]") {
  CHECK((nonzero(Var<double>(Array<double>{{0, 2, 0}, {1, 0, -1}})).value() == Array<double>{{0, 1}, {1, 0}, {1, 2}}));
  CHECK(nonzero(Var<float>(Array<float>{0, 0})).value().shape() == Shape{0, 1});
  CHECK(nonzero(Var<float>(Array<float>(3.0F))).value().shape() == Shape{1, 0});
}
