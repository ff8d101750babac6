// embedding: row lookup, id validation, scatter-add backward with repeated ids, float64 gradcheck.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
}

TEST_CASE("ops: embedding forward copies row ids[p] of the table to position p", "[ops]") {
  Var<double> w(Array<double>{{0.0, 0.1, 0.2}, {1.0, 1.1, 1.2}, {2.0, 2.1, 2.2}, {3.0, 3.1, 3.2}});  // V=4, C=3
  const IndexArray ids{{0, 3}, {3, 1}};                                                              // [B=2, T=2]
  const Array<double> out = embedding(w, ids).value();
  REQUIRE((to_shape(out.shape()) == Shape{2, 2, 3}));
  const Array<double> expected{{{0.0, 0.1, 0.2}, {3.0, 3.1, 3.2}}, {{3.0, 3.1, 3.2}, {1.0, 1.1, 1.2}}};
  CHECK((out == expected));
  // A 0-d id gives one row [C]; a 1-d list gives [N, C].
  CHECK((embedding(w, IndexArray(2)).value() == Array<double>{2.0, 2.1, 2.2}));
  CHECK((embedding(w, IndexArray{1}).shape() == Shape{1, 3}));
}

TEST_CASE("ops: embedding backward scatter-adds the rows of repeated ids", "[ops]") {
  Var<double> w(random_array({4, 2}, 301), true);
  const IndexArray ids{1, 3, 1, 1};
  const Array<double> seed{{1.0, 10.0}, {2.0, 20.0}, {3.0, 30.0}, {4.0, 40.0}};
  embedding(w, ids).backward(seed);
  const Array<double> expected{{0.0, 0.0}, {8.0, 80.0}, {0.0, 0.0}, {2.0, 20.0}};  // row 1: 1+3+4, row 3: 2
  CHECK((w.grad() == expected));
  // A second lookup adds to the gradient already there.
  embedding(w, IndexArray{0}).backward(Array<double>{{0.5, 0.25}});
  CHECK(w.grad()(0, 0) == 0.5);
  CHECK(w.grad()(0, 1) == 0.25);
  CHECK(w.grad()(1, 0) == 8.0);
}

TEST_CASE("ops: embedding rejects ids outside 0 <= id < V, naming the id, its position and V", "[ops]") {
  Var<double> w(random_array({4, 3}, 302));
  CHECK_THROWS_WITH(embedding(w, IndexArray{{0, 1}, {4, 2}}),
                    Catch::Contains("id 4") && Catch::Contains("position [1, 0]") && Catch::Contains("V = 4"));
  CHECK_THROWS_WITH(embedding(w, IndexArray{2, -1}),
                    Catch::Contains("id -1") && Catch::Contains("position [1]") && Catch::Contains("V = 4"));
  CHECK_THROWS_AS(embedding(w, IndexArray{3, 100}), std::invalid_argument);
  Var<double> not_a_table(random_array({4, 3, 2}, 303));
  CHECK_THROWS_WITH(embedding(not_a_table, IndexArray{0}), Catch::Contains("[V, C]") && Catch::Contains("[4, 3, 2]"));
}

TEST_CASE("gradcheck: embedding with repeated ids", "[gradcheck][ops]") {
  const auto w = random_array({5, 3}, 311);
  const IndexArray ids{{1, 4, 1}, {0, 4, 4}};  // id 2 unused: its gradient rows are zero
  REQUIRE_GRADCHECK(gradcheck([&ids](const Inputs& in) { return embedding(in[0], ids); }, {w}, {}, {"weight"}));
  // The table used twice (tied weights) accumulates both scatter-adds.
  const IndexArray other{3, 1};
  REQUIRE_GRADCHECK(
      gradcheck([&](const Inputs& in) { return sum(embedding(in[0], ids)) * sum(embedding(in[0], other)); }, {w}, {},
                {"weight"}));
}
