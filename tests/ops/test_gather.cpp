// gather, scatter_add, flip, topk and repeat (reads at computed positions), clamp, rsqrt, isclose and multinomial:
// values as torch prints them for the same inputs, refusals, and float64 gradchecks.
#include <cmath>
#include <limits>
#include <set>

#include <catch2/catch.hpp>

#include <xtensor/xbuilder.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/factory.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
using Positions = Array<std::int64_t>;

// arange(12).reshape(3, 4): each value is its own flat position.
Var<double> grid12() {
  Array<double> a = xt::arange<double>(12.0);
  a.reshape({3, 4});
  return Var<double>(a);
}

std::vector<double> gathered_values(const Var<double>& v) { return {v.value().begin(), v.value().end()}; }

// [n, 1] positions (a nested list of one entry a row is ambiguous to xtensor's constructors)
Positions column_of(std::initializer_list<std::int64_t> v) {
  Positions p = Positions::from_shape({v.size(), 1});
  std::copy(v.begin(), v.end(), p.begin());
  return p;
}
}  // namespace

TEST_CASE("ops: gather reads index's entries along dim, as torch.gather", "[ops]") {
  // torch.arange(12.).reshape(3, 4).gather(1, torch.tensor([[3, 0], [1, 1], [2, 0]])) and .gather(0, [[2, 0, 1, 0]])
  const Var<double> g1 = gather(grid12(), 1, Positions{{3, 0}, {1, 1}, {2, 0}});
  CHECK(g1.shape() == Shape{3, 2});
  CHECK(gathered_values(g1) == std::vector<double>{3, 0, 5, 5, 10, 8});
  CHECK(gathered_values(gather(grid12(), 0, Positions{{2, 0, 1, 0}})) == std::vector<double>{8, 1, 6, 3});
  CHECK(gathered_values(gather(grid12(), -1, column_of({1, 2}))) == std::vector<double>{1, 6});
  CHECK_THROWS_MATCHES(gather(grid12(), 1, column_of({4})), IndexError,
                       Catch::Message("gather: index 4 is out of range for dim 1 of size 4 (valid: 0 to 3)"));
  CHECK_THROWS_AS(gather(grid12(), 1, column_of({-1})), IndexError);
  CHECK_THROWS_WITH(gather(grid12(), 1, Positions{0, 1}),
                    "gather: index has 1 dims and a has 2; they must have the same number");
  CHECK_THROWS_WITH(gather(grid12(), 1, column_of({0, 0, 0, 0})),
                    "gather: index's size 4 in dim 0 is more than a's 3 (only dim 1, the one gathered along, may be "
                    "longer)");
}

TEST_CASE("ops: scatter_add adds src at index's entries along dim, repeats adding up, as torch.scatter_add", "[ops]") {
  // torch.zeros(3, 4).scatter_add(1, torch.tensor([[3, 0], [1, 1], [2, 0]]), torch.arange(1., 7.).reshape(3, 2))
  Array<double> src = xt::arange<double>(1.0, 7.0);
  src.reshape({3, 2});
  const Var<double> zeros(Array<double>(xt::zeros<double>({3, 4})));
  const Var<double> s1 = scatter_add(zeros, 1, Positions{{3, 0}, {1, 1}, {2, 0}}, Var<double>(src));
  CHECK(gathered_values(s1) == std::vector<double>{2, 0, 0, 1, 0, 7, 0, 0, 6, 0, 5, 0});
  // along dim 0, onto arange(12), from a src [2, 4] of which index [1, 4] reads the first row: 1 2 3 4 added at
  // [2][0], [0][1], [1][2], [0][3]
  Array<double> wide = xt::arange<double>(1.0, 9.0);
  wide.reshape({2, 4});
  CHECK(gathered_values(scatter_add(grid12(), 0, Positions{{2, 0, 1, 0}}, Var<double>(wide))) ==
        std::vector<double>{0, 3, 2, 7, 4, 5, 9, 7, 9, 9, 10, 11});
  CHECK_THROWS_MATCHES(scatter_add(grid12(), 1, column_of({4}), Var<double>(src)), IndexError,
                       Catch::Message("scatter_add: index 4 is out of range for dim 1 of size 4 (valid: 0 to 3)"));
  CHECK_THROWS_WITH(scatter_add(grid12(), 1, column_of({0, 0, 0, 0}), Var<double>(src)),
                    Catch::Contains("index's size 4 in dim 0 is more than src's 3 or a's 3"));
  CHECK_THROWS_WITH(scatter_add(grid12(), 1, Positions{0, 1}, Var<double>(src)),
                    Catch::Contains("have 2, 1 and 2 dims"));
}

TEST_CASE("ops: flip reverses each dim given, repeat tiles, as torch", "[ops]") {
  CHECK(gathered_values(flip(grid12(), {1})) == std::vector<double>{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  CHECK(gathered_values(flip(grid12(), {0, -1})) == std::vector<double>{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(gathered_values(flip(grid12(), {})) == gathered_values(grid12()));
  CHECK_THROWS_WITH(flip(grid12(), {1, -1}), "flip: dim 1 is given twice");
  // torch.arange(4.).reshape(2, 2).repeat(2, 1, 2)
  Array<double> small = xt::arange<double>(4.0);
  small.reshape({2, 2});
  const Var<double> r = repeat(Var<double>(small), {2, 1, 2});
  CHECK(r.shape() == Shape{2, 2, 4});
  CHECK(gathered_values(r) == std::vector<double>{0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3});
  CHECK_THROWS_WITH(repeat(Var<double>(small), {2}),
                    "repeat: 1 counts for a tensor of 2 dims; give one a dim at least (more put dims of 1 in front)");
  CHECK_THROWS_WITH(repeat(Var<double>(small), {1, 0}), "repeat: count 0 for dim 1 must be 1 or more");
}

TEST_CASE("ops: topk ranks largest or smallest first, NaN on top, ties in their order", "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Var<double> a(Array<double>{{1, 5, 3, 5}, {nan, 2, -1, 0}});
  const TopK<double> big = topk(a, 3);
  CHECK((big.indices == Positions{{1, 3, 2}, {0, 1, 3}}));
  CHECK(big.values.value()(0, 0) == 5);
  CHECK(std::isnan(big.values.value()(1, 0)));
  const TopK<double> small = topk(a, 2, 1, false);
  CHECK((small.indices == Positions{{0, 2}, {2, 3}}));
  CHECK(gathered_values(small.values) == std::vector<double>{1, 3, -1, 0});
  CHECK((topk(a, 1, 0).indices == Positions{{1, 0, 0, 0}}));
  CHECK_THROWS_WITH(topk(a, 5), "topk: k must be from 1 to 4 (the size of dim 1), got 5");
}

TEST_CASE("ops: clamp holds values within the bounds and passes the gradient within them, bounds included", "[ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Var<double> a(Array<double>{-2, -1, 0, 1, 2, nan}, true);
  const Var<double> c = clamp<double>(a, -1.0, 1.0);
  CHECK(gathered_values(c)[0] == -1);
  CHECK(gathered_values(c)[4] == 1);
  CHECK(std::isnan(gathered_values(c)[5]));
  c.backward(Array<double>{1, 1, 1, 1, 1, 1});
  CHECK(gathered_values(Var<double>(a.grad())) == std::vector<double>{0, 1, 1, 1, 0, 0});  // as torch: bounds pass
  CHECK(gathered_values(clamp<double>(Var<double>(Array<double>{-5, 5}), std::nullopt, 0.5)) ==
        std::vector<double>{-5, 0.5});
  CHECK(gathered_values(clamp<double>(Var<double>(Array<double>{-5, 5}), 2.0, 1.0)) == std::vector<double>{1, 1});
  CHECK_THROWS_WITH(clamp<double>(a, std::nullopt, std::nullopt), "clamp: give min, max or both");
  CHECK(gathered_values(rsqrt(Var<double>(Array<double>{4, 0.25}))) == std::vector<double>{0.5, 2});
}

TEST_CASE("ops: isclose as torch.isclose, infinities and NaN included", "[ops]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Var<double> a(Array<double>{1, 1, inf, inf, nan, 0}), b(Array<double>{1 + 1e-6, 1.1, inf, -inf, nan, 1e-9});
  CHECK(gathered_values(isclose(a, b)) == std::vector<double>{1, 0, 1, 0, 0, 1});
  CHECK(gathered_values(isclose(a, b, 1e-5, 1e-8, true)) == std::vector<double>{1, 0, 1, 0, 1, 1});
  CHECK(gathered_values(isclose(a, b, 0.0, 0.0)) == std::vector<double>{0, 0, 1, 0, 0, 0});
  CHECK_THROWS_WITH(isclose(a, b, -1.0), "isclose: rtol and atol must be 0 or more, got -1 and 1e-08");
}

TEST_CASE("gradcheck: gather with repeated indices, flip, topk, repeat, clamp and rsqrt", "[gradcheck][ops]") {
  const auto a = random_array({3, 4}, 301);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return gather(in[0], 1, Positions{{3, 3, 0}, {1, 1, 1}}); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return gather(in[0], 0, Positions{{2, 0, 2, 1}}); }, {a}));
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return scatter_add(in[0], 1, Positions{{3, 3, 0}, {1, 1, 1}}, in[1]) * in[0];
      },
      {a, random_array({2, 4}, 118)}, {}, {"a", "src"}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return flip(in[0], {0, 1}) * in[0]; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return topk(in[0], 2, 1).values; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return topk(in[0], 2, 0, false).values; }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return repeat(in[0], {2, 1, 3}); }, {a}));
  // entries below, within and above the bounds, none within 0.05 of one (where the derivative jumps)
  Array<double> spread = random_array({4, 5}, 302, -2.0, 2.0);
  for (double& v : spread)
    if (std::abs(std::abs(v) - 0.5) < 0.05) v += 0.1;
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return clamp<double>(in[0], -0.5, 0.5) * in[0]; }, {spread}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return clamp<double>(in[0], std::nullopt, 0.5); }, {spread}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return rsqrt(in[0]); }, {random_array({3, 4}, 303, 0.2, 3.0)}));
}

TEST_CASE("ops: multinomial draws in proportion to the weights, from its seed alone", "[ops]") {
  const Array<double> w = {{1, 0, 3}, {0, 2, 2}};
  Rng rng(7), again(7);
  const Array<std::int64_t> drawn = multinomial(w, 20000, true, rng);
  CHECK((drawn == multinomial(w, 20000, true, again)));
  REQUIRE(drawn.shape() == Shape{2, 20000});
  std::size_t counts[2][3] = {};
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t k = 0; k < 20000; ++k) ++counts[r][drawn(r, k)];
  CHECK(counts[0][1] == 0);
  CHECK(counts[1][0] == 0);
  // a share's standard deviation is at most 0.0036 at 20000 draws: 0.02 is over 5 of them
  CHECK(std::abs(counts[0][2] / 20000.0 - 0.75) < 0.02);
  CHECK(std::abs(counts[1][1] / 20000.0 - 0.5) < 0.02);
  // without replacement: distinct categories, and only those of weight above 0
  const Array<std::int64_t> once = multinomial(Array<double>{0.5, 0, 2, 1}, 3, false, rng);
  CHECK(std::set<std::int64_t>(once.begin(), once.end()) == std::set<std::int64_t>{0, 2, 3});
  CHECK_THROWS_WITH(multinomial(Array<double>{1, 0, 1}, 3, false, rng),
                    "multinomial: 3 samples without replacement from row 0, which has 2 categories of weight above 0");
  CHECK_THROWS_WITH(multinomial(Array<double>{1, -1}, 1, true, rng),
                    "multinomial: weight 1 of row 0 is -1; weights must be finite and 0 or more");
  CHECK_THROWS_WITH(multinomial(Array<double>{0, 0}, 1, true, rng), "multinomial: the weights of row 0 sum to 0");
}
