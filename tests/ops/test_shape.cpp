// permute, transpose, reshape, split and concat: forward values, error messages and float64 gradchecks.
#include <catch2/catch.hpp>

#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// 0, 1, 2, ... in row-major order: every element names its own flat index.
Array<double> iota_array(const Shape& shape) {
  Array<double> a = Array<double>::from_shape(shape);
  double v = 0;
  for (auto& x : a) x = v++;
  return a;
}
}  // namespace

// ---- forward values

TEST_CASE("ops: permute [2,3,4] by (2,0,1) moves every element to its permuted index", "[ops]") {
  const Array<double> a = iota_array({2, 3, 4});
  const Var<double> out = permute(Var<double>(a), {2, 0, 1});
  REQUIRE(out.shape() == Shape{4, 2, 3});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) {
        // out[k, i, j] = a[i, j, k], and a[i, j, k] = 12 i + 4 j + k
        CHECK(out.value()(k, i, j) == static_cast<double>(12 * i + 4 * j + k));
      }
}

TEST_CASE("ops: transpose with negative axes equals the explicit permutation", "[ops]") {
  const Var<double> a(random_array({2, 3, 4, 5}, 301));
  const Var<double> t = transpose(a, -3, -2);  // (B,T,H,D) -> (B,H,T,D)
  CHECK(t.shape() == Shape{2, 4, 3, 5});
  CHECK((t.value() == permute(a, {0, 2, 1, 3}).value()));
  CHECK((transpose(a, 1, 1).value() == a.value()));
  const Var<double> m(Array<double>{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  CHECK((transpose(m, 0, 1).value() == Array<double>{{1.0, 4.0}, {2.0, 5.0}, {3.0, 6.0}}));
}

TEST_CASE("ops: reshape keeps row-major order and infers one -1 dimension", "[ops]") {
  const Var<double> a(iota_array({2, 3, 4}));
  const Var<double> r = reshape(a, {4, -1});
  REQUIRE(r.shape() == Shape{4, 6});
  CHECK(r.value()(1, 0) == 6.0);
  CHECK(r.value()(3, 5) == 23.0);
  CHECK(reshape(a, {-1}).shape() == Shape{24});
  CHECK(reshape(a, {2, -1, 2}).shape() == Shape{2, 6, 2});
  // an input without elements is refused, as by every op (tests/ops/test_preconditions.cpp)
  CHECK_THROWS_WITH(reshape(Var<double>(iota_array({0, 3})), {3, 0}), Catch::Contains("no elements"));
}

TEST_CASE("ops: split along the last axis gives the hand-computed pieces", "[ops]") {
  const Var<double> a(Array<double>{{0.0, 1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0, 9.0}});
  const auto pieces = split(a, -1, {2, 0, 3});
  REQUIRE(pieces.size() == 3);
  CHECK((pieces[0].value() == Array<double>{{0.0, 1.0}, {5.0, 6.0}}));
  CHECK(pieces[1].shape() == Shape{2, 0});
  CHECK((pieces[2].value() == Array<double>{{2.0, 3.0, 4.0}, {7.0, 8.0, 9.0}}));
  const auto rows = split(a, 0, {1, 1});
  CHECK((rows[1].value() == Array<double>{{5.0, 6.0, 7.0, 8.0, 9.0}}));
}

TEST_CASE("ops: concat along a middle axis gives the hand-computed result and undoes split", "[ops]") {
  const Var<double> a(Array<double>{{{1.0, 2.0}}, {{3.0, 4.0}}});                             // [2,1,2]
  const Var<double> b(Array<double>{{{5.0, 6.0}, {7.0, 8.0}}, {{9.0, 10.0}, {11.0, 12.0}}});  // [2,2,2]
  const Var<double> c = concat<double>({a, b}, 1);
  CHECK((c.value() == Array<double>{{{1.0, 2.0}, {5.0, 6.0}, {7.0, 8.0}}, {{3.0, 4.0}, {9.0, 10.0}, {11.0, 12.0}}}));

  const Var<double> x(random_array({2, 6, 3}, 302));
  CHECK((concat(split(x, 1, {1, 2, 3}), 1).value() == x.value()));
}

TEST_CASE("ops: a split piece whose gradient never arrives leaves zeros in its slice", "[ops]") {
  Var<double> a(random_array({2, 6}, 303), true);
  const auto pieces = split(a, 1, {2, 3, 1});
  sum(pieces[1]).backward();  // only the middle piece reaches the loss
  const Array<double> expected{{0.0, 0.0, 1.0, 1.0, 1.0, 0.0}, {0.0, 0.0, 1.0, 1.0, 1.0, 0.0}};
  CHECK((a.grad() == expected));
}

TEST_CASE("ops: float32 permute and concat agree exactly with float64", "[ops]") {
  const Array<double> a64 = random_array({2, 3, 4, 5}, 304);
  const Array<float> a32 = xt::cast<float>(a64);
  const Array<double> p64 = permute(Var<double>(a64), {0, 2, 1, 3}).value();
  const Array<float> p32 = permute(Var<float>(a32), {0, 2, 1, 3}).value();
  CHECK((p32 == Array<float>(xt::cast<float>(p64))));
  const Array<double> c64 = concat<double>({Var<double>(a64), Var<double>(a64)}, -1).value();
  const Array<float> c32 = concat<float>({Var<float>(a32), Var<float>(a32)}, -1).value();
  CHECK((c32 == Array<float>(xt::cast<float>(c64))));
}

// ---- errors name the op and the shapes

TEST_CASE("ops: permute rejects a bad permutation and names the shape", "[ops]") {
  const Var<double> a(random_array({2, 3, 4}, 305));
  CHECK_THROWS_AS(permute(a, {0, 0, 1}), std::invalid_argument);
  CHECK_THROWS_WITH(permute(a, {0, 0, 1}), Catch::Contains("permute") && Catch::Contains("(0, 0, 1)") &&
                                               Catch::Contains("[2, 3, 4]") && Catch::Contains("0..2"));
  CHECK_THROWS_WITH(permute(a, {1, 0}), Catch::Contains("(1, 0)") && Catch::Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(permute(a, {0, 1, 3}), Catch::Contains("(0, 1, 3)") && Catch::Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(transpose(a, 0, 3), Catch::Contains("transpose") && Catch::Contains("axis 3"));
}

TEST_CASE("ops: reshape rejects a wrong element count and names both shapes", "[ops]") {
  const Var<double> a(random_array({2, 3, 4}, 306));
  CHECK_THROWS_AS(reshape(a, {5, 5}), std::invalid_argument);
  CHECK_THROWS_WITH(reshape(a, {5, 5}), Catch::Contains("reshape") && Catch::Contains("[2, 3, 4]") &&
                                            Catch::Contains("24 elements") && Catch::Contains("[5, 5]"));
  CHECK_THROWS_WITH(reshape(a, {5, -1}), Catch::Contains("[2, 3, 4]") && Catch::Contains("[5, -1]"));
  CHECK_THROWS_WITH(reshape(a, {-1, -1}), Catch::Contains("[-1, -1]") && Catch::Contains("at most one"));
  CHECK_THROWS_WITH(reshape(a, {0, -1}), Catch::Contains("[0, -1]"));
  CHECK_THROWS_WITH(reshape(a, {-2, -12}), Catch::Contains("[-2, -12]") && Catch::Contains(">= 0"));
}

TEST_CASE("ops: split rejects sizes that do not add up to the axis length", "[ops]") {
  const Var<double> a(random_array({2, 3, 12}, 307));
  CHECK_THROWS_AS(split(a, -1, {4, 4, 3}), std::invalid_argument);
  CHECK_THROWS_WITH(split(a, -1, {4, 4, 3}), Catch::Contains("split") && Catch::Contains("(4, 4, 3)") &&
                                                 Catch::Contains("11") && Catch::Contains("[2, 3, 12]") &&
                                                 Catch::Contains("length 12"));
  CHECK_THROWS_WITH(split(a, 3, {12}), Catch::Contains("split") && Catch::Contains("axis 3"));
}

TEST_CASE("ops: concat rejects parts whose other dimensions differ and names both shapes", "[ops]") {
  const Var<double> a(random_array({2, 3}, 308));
  const Var<double> b(random_array({4, 3}, 309));
  CHECK(concat<double>({a, b}, 0).shape() == Shape{6, 3});
  CHECK_THROWS_AS(concat<double>({a, b}, 1), std::invalid_argument);
  CHECK_THROWS_WITH(concat<double>({a, b}, 1), Catch::Contains("concat") && Catch::Contains("part 1") &&
                                                   Catch::Contains("[4, 3]") && Catch::Contains("[2, 3]"));
  const Var<double> c(random_array({2, 3, 1}, 310));
  CHECK_THROWS_WITH(concat<double>({a, c}, 0), Catch::Contains("[2, 3, 1]") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(concat<double>({}, 0), Catch::Contains("concat") && Catch::Contains("at least one"));
}

// ---- gradchecks (float64 central differences)

TEST_CASE("gradcheck: permute [2,3,4] by (2,0,1)", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return permute(in[0], {2, 0, 1});
      },
      {random_array({2, 3, 4}, 311)}));
}

TEST_CASE("gradcheck: permute (B,T,H,D) -> (B,H,T,D) as attention heads do", "[gradcheck][ops]") {
  // and back again, with a product in between so the two permutes see different gradients
  const Array<double> w = random_array({2, 4, 3, 5}, 313);
  REQUIRE_GRADCHECK(gradcheck(
      [&w](const Inputs& in) {
        const Var<double> heads = permute(in[0], {0, 2, 1, 3});  // [B,T,H,D] -> [B,H,T,D]
        return permute(heads * Var<double>(w), {0, 2, 1, 3});
      },
      {random_array({2, 3, 4, 5}, 312)}));
}

TEST_CASE("gradcheck: transpose of the last two axes with negative indices", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(
      gradcheck([](const Inputs& in) { return transpose(in[0], -1, -2); }, {random_array({2, 3, 4}, 314)}));
}

TEST_CASE("gradcheck: reshape with -1", "[gradcheck][ops]") {
  const Array<double> w = random_array({6, 4}, 316);
  REQUIRE_GRADCHECK(gradcheck(
      [&w](const Inputs& in) {
        // [2,3,4] -> [6,4], multiplied elementwise so the loss is not symmetric in the elements
        return reshape(reshape(in[0], {-1, 4}) * Var<double>(w), {2, -1});
      },
      {random_array({2, 3, 4}, 315)}));
}

TEST_CASE("gradcheck: split and concat of q/k/v along the last axis", "[gradcheck][ops]") {
  // qkv [B,T,3C] -> q, k, v [B,T,C]; recombined in another order with q*k so every piece matters
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        const auto qkv = split(in[0], -1, {4, 4, 4});
        return concat<double>({qkv[2], qkv[0] * qkv[1]}, -1);
      },
      {random_array({2, 3, 12}, 317)}));
}

TEST_CASE("gradcheck: split into 3 equal pieces along a middle axis then concat", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        const auto p = split(in[0], 1, {2, 2, 2});
        return concat<double>({p[1], p[2] * p[2], p[0]}, 1);
      },
      {random_array({3, 6, 2}, 318)}));
}

TEST_CASE("gradcheck: split where only some pieces are used", "[gradcheck][ops]") {
  // piece 1 is dropped: its slice of the gradient must be exactly zero, which the numeric side also sees
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        const auto p = split(in[0], 0, {1, 2, 1});
        return p[0] * p[2];
      },
      {random_array({4, 3}, 319)}));
}

TEST_CASE("gradcheck: concat of unequal parts with a repeated input and a constant", "[gradcheck][ops]") {
  const Var<double> constant(random_array({2, 1, 3}, 322));
  REQUIRE_GRADCHECK(gradcheck(
      [&constant](const Inputs& in) {
        return concat<double>({in[0], constant, in[1], in[0]}, -2);
      },
      {random_array({2, 2, 3}, 320), random_array({2, 4, 3}, 321)}));
}

TEST_CASE("ops: slice and index pick what xt::view picks, negative positions counting from the end", "[ops]") {
  const Var<double> a(iota_array({2, 5, 3}));
  CHECK((slice(a, 1, 1, 4).value() == Array<double>(xt::view(a.value(), xt::all(), xt::range(1, 4), xt::all()))));
  CHECK((slice(a, -2, -3, -1).value() == Array<double>(xt::view(a.value(), xt::all(), xt::range(2, 4), xt::all()))));
  CHECK((slice(a, 0, 1, 2).shape() == Shape{1, 5, 3}));
  CHECK((index(a, 1, -1).value() == Array<double>(xt::view(a.value(), xt::all(), 4, xt::all()))));
  CHECK((index(a, 2, 0).shape() == Shape{2, 5}));
  CHECK(index(index(index(a, 0, 1), 0, 2), 0, 1).item() == 1 * 15 + 2 * 3 + 1);
}

TEST_CASE("ops: slice and index refuse positions outside the axis and name them", "[ops]") {
  const Var<double> a(iota_array({2, 5}));
  for (const auto& [begin, end] : std::vector<std::pair<long, long>>{{0, 0}, {3, 2}, {0, 6}, {-6, 2}, {5, 5}})
    CHECK_THROWS_WITH(slice(a, 1, begin, end), Catch::Contains("slice: begin") && Catch::Contains("[2, 5]"));
  CHECK_THROWS_AS(slice(a, 2, 0, 1), std::invalid_argument);
  CHECK_THROWS_WITH(index(a, 1, 5), Catch::Contains("index: 5 is out of range"));
  CHECK_THROWS_WITH(index(a, 0, -3), Catch::Contains("index: -3 is out of range"));
}

TEST_CASE("gradcheck: slice along each axis, and index", "[gradcheck][ops]") {
  const auto a = random_array({3, 4, 5}, 71);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return slice(in[0], 0, 1, 3); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return slice(in[0], 1, -3, -1); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return slice(in[0], 2, 0, 5); }, {a}));
  // two overlapping slices of one value: their gradients add up in the overlap
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return mul(slice(in[0], 2, 0, 3), slice(in[0], 2, 2, 5)); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return index(in[0], 1, 2); }, {a}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return index(in[0], -1, -1); }, {a}));
}
