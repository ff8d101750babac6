// Comparisons, logical ops, where and masked_fill: values with broadcasting and NaN, constants without a gradient,
// and float64 gradchecks of where and masked_fill.
#include <catch2/catch.hpp>

#include <limits>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("ops: comparisons broadcast, give 1 and 0, and are constants even of inputs that require a gradient",
          "[ops]") {
  const Var<double> a(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, true);
  const Var<double> b(Array<double>{2.0, 2.0, 7.0});
  CHECK((gt(a, b).value() == Array<double>{{0, 0, 0}, {1, 1, 0}}));
  CHECK((ge(a, b).value() == Array<double>{{0, 1, 0}, {1, 1, 0}}));
  CHECK((lt(a, b).value() == Array<double>{{1, 0, 1}, {0, 0, 1}}));
  CHECK((le(a, b).value() == Array<double>{{1, 1, 1}, {0, 0, 1}}));
  CHECK((eq(a, b).value() == Array<double>{{0, 1, 0}, {0, 0, 0}}));
  CHECK((ne(a, b).value() == Array<double>{{1, 0, 1}, {1, 1, 1}}));
  CHECK_FALSE(gt(a, b).requires_grad());
  CHECK_THROWS_WITH(eq(a, Var<double>(Array<double>{1.0, 2.0})), Catch::Contains("eq"));
}

TEST_CASE("ops: NaN compares unequal to everything, and isnan, isinf, isfinite and the logical ops", "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Var<double> a(Array<double>{nan, inf, -inf, 0.0, 2.0});
  CHECK((eq(a, a).value() == Array<double>{0, 1, 1, 1, 1}));
  CHECK((ne(a, a).value() == Array<double>{1, 0, 0, 0, 0}));
  CHECK((isnan(a).value() == Array<double>{1, 0, 0, 0, 0}));
  CHECK((isinf(a).value() == Array<double>{0, 1, 1, 0, 0}));
  CHECK((isfinite(a).value() == Array<double>{0, 0, 0, 1, 1}));
  const Var<double> p(Array<double>{1, 1, 0, 0}), q(Array<double>{1, 0, 1, 0});
  CHECK((logical_and(p, q).value() == Array<double>{1, 0, 0, 0}));
  CHECK((logical_or(p, q).value() == Array<double>{1, 1, 1, 0}));
  CHECK((logical_xor(p, q).value() == Array<double>{0, 1, 1, 0}));
  CHECK((logical_not(p).value() == Array<double>{0, 0, 1, 1}));
}

TEST_CASE("ops: where picks a where the condition is nonzero, and masked_fill fills where the mask is", "[ops]") {
  const Var<double> c(Array<double>{1, 0, 2}), a(Array<double>{{1, 2, 3}, {4, 5, 6}}), b(Array<double>{-1});
  CHECK((where(c, a, b).value() == Array<double>{{1, -1, 3}, {4, -1, 6}}));
  const Var<double> mask(Array<double>{{0, 1, 0}, {1, 0, 0}});
  CHECK((masked_fill(a, mask, -9.0).value() == Array<double>{{1, -9, 3}, {-9, 5, 6}}));
  CHECK_THROWS_WITH(masked_fill(b, c, 0.0), Catch::Contains("masked_fill") && Catch::Contains("does not broadcast"));
}

TEST_CASE("gradcheck: where with a broadcast condition and operands", "[gradcheck][ops]") {
  const Var<double> cond(Array<double>{{1, 0, 1}, {0, 0, 1}});
  REQUIRE_GRADCHECK(gradcheck([cond](const Inputs& in) { return where(cond, in[0], in[1]); },
                              {random_array({2, 3}, 95), random_array({3}, 96)}, {}, {"a", "b"}));
  REQUIRE_GRADCHECK(gradcheck([cond](const Inputs& in) { return where(cond, in[0] * in[1], in[1]); },
                              {random_array({2, 1}, 97), random_array({2, 3}, 98)}, {}, {"a", "b"}));
}

TEST_CASE("gradcheck: masked_fill with a broadcast mask", "[gradcheck][ops]") {
  const Var<double> mask(Array<double>{1, 0, 0, 1});
  REQUIRE_GRADCHECK(gradcheck([mask](const Inputs& in) { return masked_fill(in[0], mask, -2.5) * in[0]; },
                              {random_array({3, 4}, 99)}));
}

TEST_CASE("ops: tril and triu keep the triangles of torch.tril and torch.triu in the last two axes", "[ops]") {
  const Var<double> a(Array<double>{{1, 2, 3}, {4, 5, 6}});
  CHECK((tril(a).value() == Array<double>{{1, 0, 0}, {4, 5, 0}}));
  CHECK((tril(a, 1).value() == Array<double>{{1, 2, 0}, {4, 5, 6}}));
  CHECK((tril(a, -1).value() == Array<double>{{0, 0, 0}, {4, 0, 0}}));
  CHECK((triu(a).value() == Array<double>{{1, 2, 3}, {0, 5, 6}}));
  CHECK((triu(a, 1).value() == Array<double>{{0, 2, 3}, {0, 0, 6}}));
  CHECK((triu(a, -1).value() == Array<double>{{1, 2, 3}, {4, 5, 6}}));
  const Var<double> b(Array<double>{{{1, 1}, {1, 1}}, {{2, 2}, {2, 2}}});
  CHECK((tril(b).value() == Array<double>{{{1, 0}, {1, 1}}, {{2, 0}, {2, 2}}}));
  CHECK_THROWS_WITH(tril(Var<double>(Array<double>{1, 2})), Catch::Contains("tril") && Catch::Contains("[2]"));
}

TEST_CASE("gradcheck: tril and triu, batched, with diagonals of both signs", "[gradcheck][ops]") {
  for (const long k : {-1L, 0L, 2L}) {
    REQUIRE_GRADCHECK(
        gradcheck([k](const Inputs& in) { return tril(in[0], k) * in[0]; }, {random_array({2, 3, 4}, 7)}));
    REQUIRE_GRADCHECK(gradcheck([k](const Inputs& in) { return triu(in[0], k) * in[0]; }, {random_array({3, 4}, 8)}));
  }
}
