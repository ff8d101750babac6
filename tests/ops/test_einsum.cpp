// einsum: products as loops compute them, torch's implicit output, refusals, and float64 gradchecks of each of its
// paths (one operand, two with batch, own and contracted labels, three contracted left to right).
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}  // namespace

TEST_CASE("ops: einsum computes what its loops say, attention's scores included", "[ops]") {
  const Array<double> q = random_array({2, 3, 4}, 321), k = random_array({2, 5, 4}, 322);
  const Var<double> s = einsum<double>("bqd,bkd->bqk", {Var<double>(q), Var<double>(k)});
  REQUIRE(s.shape() == Shape{2, 3, 5});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 5; ++j) {
        double dot = 0;
        for (std::size_t d = 0; d < 4; ++d) dot += q(b, i, d) * k(b, j, d);
        CHECK(s.value()(b, i, j) == Approx(dot).epsilon(1e-12));
      }
  // without "->": the labels used once, alphabetical (torch's rule): "bqd,bkd" gives [k, q] summed over b and d
  const Var<double> implicit = einsum<double>("bqd,bkd", {Var<double>(q), Var<double>(k)});
  REQUIRE(implicit.shape() == Shape{5, 3});
  double total = 0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t d = 0; d < 4; ++d) total += q(b, 1, d) * k(b, 4, d);
  CHECK(implicit.value()(4, 1) == Approx(total).epsilon(1e-12));
  CHECK(einsum<double>("ijk->kj", {Var<double>(q)}).value()(3, 2) == Approx(q(0, 2, 3) + q(1, 2, 3)).epsilon(1e-12));
  CHECK_THROWS_WITH(einsum<double>("ii->i", {Var<double>(random_array({3, 3}, 1))}),
                    "einsum 'ii->i': 'i' appears twice in the operand 'ii' (a diagonal is not supported here)");
  CHECK_THROWS_WITH(einsum<double>("ij,jk->ik", {Var<double>(q), Var<double>(k)}),
                    "einsum 'ij,jk->ik': operand 0 has 3 dims and 'ij' names 2");
  CHECK_THROWS_WITH(einsum<double>("bqd,bkd->bqk", {Var<double>(q), Var<double>(random_array({2, 5, 3}, 2))}),
                    "einsum 'bqd,bkd->bqk': 'd' is 4 in one operand and 3 in operand 1");
  CHECK_THROWS_WITH(einsum<double>("ab,bc->ad", {Var<double>(q), Var<double>(k)}),
                    "einsum 'ab,bc->ad': the output's 'd' is in no operand");
  CHECK_THROWS_WITH(einsum<double>("a..->a", {Var<double>(q)}), "einsum 'a..->a': '.' outside '...'");
  CHECK_THROWS_WITH(einsum<double>("abcd...->a", {Var<double>(q)}),
                    "einsum 'abcd...->a': operand 0 has 3 dims and 'abcd...' names 4 besides '...'");
}

TEST_CASE("ops: einsum's '...' is the letters it stands for, broadcast from length 1, first in the output", "[ops]") {
  // "..." against the same equation with the letters written out (torch's rule: right-aligned across operands).
  const Array<double> a = random_array({2, 3, 4, 5}, 341), b = random_array({3, 5, 6}, 342);
  const auto same = [](const Var<double>& x, const Var<double>& y) {
    return x.shape() == y.shape() && xt::allclose(x.value(), y.value(), 1e-12, 1e-12);
  };
  CHECK(same(einsum<double>("...ij,...jk->...ik", {Var<double>(a), Var<double>(b)}),
             einsum<double>("xyij,yjk->xyik", {Var<double>(a), Var<double>(b)})));
  CHECK(same(einsum<double>("...ij->...", {Var<double>(a)}), einsum<double>("xyij->xy", {Var<double>(a)})));
  CHECK(same(einsum<double>("b...d->...", {Var<double>(a)}), einsum<double>("bxyd->xy", {Var<double>(a)})));
  // without "->": the "..." dims lead, then the labels used once, alphabetical
  CHECK(same(einsum<double>("...ij,...jk", {Var<double>(a), Var<double>(b)}),
             einsum<double>("xyij,yjk->xyik", {Var<double>(a), Var<double>(b)})));
  // a dim of "..." of length 1 broadcasts: [2,1,4,5] x [3,5,6] -> [2,3,4,6]
  const Array<double> one = random_array({2, 1, 4, 5}, 343);
  const Var<double> wide = einsum<double>("...ij,...jk->...ik", {Var<double>(one), Var<double>(b)});
  REQUIRE(wide.shape() == Shape{2, 3, 4, 6});
  double dot = 0;
  for (std::size_t j = 0; j < 5; ++j) dot += one(1, 0, 2, j) * b(2, j, 4);
  CHECK(wide.value()(1, 2, 2, 4) == Approx(dot).epsilon(1e-12));
  // a named dim does not broadcast
  CHECK_THROWS_WITH(einsum<double>("...ij,...jk->...ik", {Var<double>(random_array({2, 3, 4, 1}, 3)), Var<double>(b)}),
                    Catch::Contains("'j' is 1 in one operand and 5 in operand 1"));
}

TEST_CASE("gradcheck: einsum of one, two and three operands", "[gradcheck][ops]") {
  const auto a = random_array({2, 3, 4}, 331), b = random_array({2, 5, 4}, 332), c = random_array({5, 3}, 333);
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return einsum<double>("bik,bjk->bij", {in[0], in[1]});
      },
      {a, b}, {}, {"a", "b"}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return einsum<double>("ijk->ki", {in[0]}); }, {a}));
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return einsum<double>("bik,bjk,jl->bil", {in[0], in[1], in[2]});
      },
      {a, b, c}, {}, {"a", "b", "c"}));
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return einsum<double>("ijk,bjk->", {in[0], in[1]});
      },
      {a, random_array({4, 3, 4}, 334)}, {}, {"a", "b"}));
  // "..." with a dim of length 1 broadcast (its gradient summed back)
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return einsum<double>("...ij,...jk->...ik", {in[0], in[1]});
      },
      {random_array({2, 1, 3, 4}, 335), random_array({5, 4, 2}, 336)}, {}, {"a", "b"}));
}
