// index (NumPy / PyTorch subscripts) and take: the positions read against NumPy's results on a tensor whose values
// are their own flat positions, errors for bad subscripts, and float64 gradchecks (repeated positions add up).
#include <catch2/catch.hpp>

#include <xtensor/xbuilder.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
using Positions = Array<std::int64_t>;
using I = TensorIndex;

// arange(24).reshape(2, 3, 4): each value is its own flat position.
Var<double> counting() {
  Array<double> a = xt::arange<double>(24.0);
  a.reshape({2, 3, 4});
  return Var<double>(a);
}

Positions positions(std::initializer_list<std::int64_t> v) {
  Positions p = Positions::from_shape({v.size()});
  std::copy(v.begin(), v.end(), p.begin());
  return p;
}

// index(counting(), idx) must have NumPy's shape and values (printed by NumPy for the same subscript).
void check_like_numpy(const std::vector<TensorIndex>& idx, const Shape& shape, const std::vector<double>& values) {
  const Var<double> out = index(counting(), idx);
  REQUIRE(out.shape() == shape);
  REQUIRE(out.numel() == values.size());
  for (std::size_t i = 0; i < values.size(); ++i) CHECK(out.value().data()[i] == values[i]);
}
}  // namespace

TEST_CASE("ops: index reads what NumPy's basic indexing reads (integers, slices with steps, ..., None)", "[ops]") {
  check_like_numpy({1}, {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});  // a[1]
  check_like_numpy({-1, 2}, {4}, {20, 21, 22, 23});                                 // a[-1, 2]
  check_like_numpy({Slice{}, Slice{1, 3}}, {2, 2, 4}, {4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23});
  check_like_numpy({I::ellipsis(), Slice{{}, {}, 2}}, {2, 3, 2}, {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22});
  check_like_numpy({Slice{}, Slice{{}, {}, -1}, -1}, {2, 3}, {11, 7, 3, 23, 19, 15});     // a[:, ::-1, -1]
  check_like_numpy({I::new_axis(), 0, Slice{}, 1}, {1, 3}, {1, 5, 9});                    // a[None, 0, :, 1]
  check_like_numpy({1, Slice{5, 0, -2}, Slice{1, {}}}, {1, 3}, {21, 22, 23});             // a[1, 5:0:-2, 1:]
  check_like_numpy({I::ellipsis(), 1, I::new_axis()}, {2, 3, 1}, {1, 5, 9, 13, 17, 21});  // a[..., 1, None]
  check_like_numpy({1, 2, 3}, {}, {23});                                                  // a 0-d result
}

TEST_CASE("ops: index reads what NumPy's advanced indexing reads (integer arrays, masks, their placement)", "[ops]") {
  check_like_numpy({0, I::positions(positions({2, 0, 2}))}, {3, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  // a[[1,0], :, [3,1]]: the arrays are not side by side, so their dims come first
  check_like_numpy({I::positions(positions({1, 0})), Slice{}, I::positions(positions({3, 1}))}, {2, 3},
                   {15, 19, 23, 1, 5, 9});
  // a[:, [[0],[2]], [1,3]]: [2,1] and [2] broadcast to [2,2], in place of the two axes
  Positions column = positions({0, 2});
  column.reshape({2, 1});
  check_like_numpy({Slice{}, I::positions(column), I::positions(positions({1, 3}))}, {2, 2, 2},
                   {1, 3, 9, 11, 13, 15, 21, 23});
  // a[a % 5 == 0]: a mask over every axis
  Positions mask = Positions::from_shape({2, 3, 4});
  for (std::size_t i = 0; i < 24; ++i) mask.data()[i] = i % 5 == 0;
  check_like_numpy({I::mask(mask)}, {5}, {0, 5, 10, 15, 20});
  // a[:, m] with m [3,4]: the mask covers axes 1 and 2
  Positions m2 = {{1, 0, 0, 1}, {0, 0, 0, 0}, {0, 1, 0, 0}};
  check_like_numpy({Slice{}, I::mask(m2)}, {2, 3}, {0, 3, 9, 12, 15, 21});
  // negative positions count from the end
  check_like_numpy({I::positions(positions({-1})), -1, -1}, {1}, {23});
}

TEST_CASE("ops: take reads a tensor as 1-D in the positions' shape, negative ones from the end", "[ops]") {
  Positions p = {{0, -1}, {5, 5}};
  const Var<double> out = take(counting(), p);
  CHECK(out.shape() == Shape{2, 2});
  CHECK((out.value() == Array<double>{{0, 23}, {5, 5}}));
  CHECK_THROWS_AS(take(counting(), positions({24})), IndexError);
}

TEST_CASE("ops: index refuses out-of-range entries, too many axes, two ellipses, a step of 0 and empty results",
          "[ops]") {
  const Var<double> a = counting();
  CHECK_THROWS_AS(index(a, {2}), IndexError);
  CHECK_THROWS_AS(index(a, {0, -4}), IndexError);
  CHECK_THROWS_AS(index(a, {0, I::positions(positions({0, 3}))}), IndexError);
  CHECK_THROWS_WITH(index(a, {0, 0, 0, 0}), Catch::Contains("reads 4 axes") && Catch::Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(index(a, {I::ellipsis(), I::ellipsis()}), Catch::Contains("one ellipsis"));
  CHECK_THROWS_WITH(index(a, {Slice{{}, {}, 0}}), Catch::Contains("step 0"));
  CHECK_THROWS_WITH(index(a, {Slice{2, 1}}), Catch::Contains("selects nothing"));
  CHECK_THROWS_WITH(index(a, {I::mask(Positions{1, 0, 1})}), Catch::Contains("does not match"));
  CHECK_THROWS_WITH(index(a, {I::mask(Positions{0, 0})}), Catch::Contains("selects nothing"));
  CHECK_THROWS_WITH(index(a, {I::positions(Positions{0, 1}), I::positions(Positions{0, 1, 2})}),
                    Catch::Contains("index"));  // the arrays do not broadcast
}

TEST_CASE("gradcheck: index with integers, slices, steps and new axes", "[gradcheck][ops]") {
  const auto a = random_array({3, 4, 5}, 71);
  for (const auto& idx : std::vector<std::vector<TensorIndex>>{
           {1}, {Slice{}, Slice{1, 3}}, {-1, Slice{{}, {}, -2}, I::new_axis()}, {I::ellipsis(), Slice{1, {}, 2}}}) {
    REQUIRE_GRADCHECK(gradcheck([idx](const Inputs& in) { return index(in[0], idx); }, {a}));
  }
}

TEST_CASE("gradcheck: index with repeated positions and a mask adds the gradient up", "[gradcheck][ops]") {
  const auto a = random_array({3, 4}, 72);
  Positions rows = {2, 0, 2, 2};
  REQUIRE_GRADCHECK(gradcheck([rows](const Inputs& in) { return index(in[0], {I::positions(rows)}); }, {a}));
  REQUIRE_GRADCHECK(gradcheck(
      [rows](const Inputs& in) {
        return index(in[0], {I::positions(rows), I::positions(Positions{1, 1, 3, 1})});
      },
      {a}));
  Positions mask = {{1, 0, 1, 0}, {0, 0, 1, 1}, {1, 1, 1, 0}};
  REQUIRE_GRADCHECK(gradcheck([mask](const Inputs& in) { return index(in[0], {I::mask(mask)}); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return take(in[0], Positions{{0, -1}, {0, 5}}); }, {a}));
}
