// matmul: 2-D, batched 3-D/4-D, a shared 2-D right operand, every transpose flag; forward against
// xtensor-blas's dot (an independent path to BLAS) and float64 gradchecks.
#include <catch2/catch.hpp>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xview.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// Reference: loops over the batch with xt::linalg::dot and explicit transposes.
Array<double> reference_matmul(const Array<double>& a, const Array<double>& b, bool ta, bool tb) {
  auto mat = [](const Array<double>& m, bool t) { return t ? Array<double>(xt::transpose(m)) : m; };
  if (a.dimension() == 2) return xt::linalg::dot(mat(a, ta), mat(b, tb));
  const std::size_t batch = a.shape()[0];
  std::vector<Array<double>> outs;
  for (std::size_t i = 0; i < batch; ++i) {
    Array<double> ai = xt::view(a, i);
    Array<double> bi = b.dimension() == 2 ? b : Array<double>(xt::view(b, i));
    outs.push_back(reference_matmul(ai, bi, ta, tb));
  }
  Shape shape{batch};
  for (auto d : outs[0].shape()) shape.push_back(d);
  Array<double> out = Array<double>::from_shape(shape);
  for (std::size_t i = 0; i < batch; ++i) xt::view(out, i) = outs[i];
  return out;
}

Shape stored(std::size_t r, std::size_t c, bool t) { return t ? Shape{c, r} : Shape{r, c}; }
}  // namespace

TEST_CASE("ops: matmul forward matches xtensor-blas dot for every transpose flag", "[ops]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const auto a = random_array(stored(3, 4, ta), 1), b = random_array(stored(4, 5, tb), 2);
      const Array<double> out = matmul(Var<double>(a), Var<double>(b), ta, tb).value();
      CHECK(xt::allclose(out, reference_matmul(a, b, ta, tb), 1e-12, 1e-12));
      // batched [2, ...]
      Shape sa{2}, sb{2};
      for (auto d : stored(3, 4, ta)) sa.push_back(d);
      for (auto d : stored(4, 5, tb)) sb.push_back(d);
      const auto ab = random_array(sa, 3), bb = random_array(sb, 4);
      CHECK(xt::allclose(matmul(Var<double>(ab), Var<double>(bb), ta, tb).value(), reference_matmul(ab, bb, ta, tb),
                         1e-12, 1e-12));
    }
}

TEST_CASE("ops: matmul forward in float32 agrees with float64", "[ops]") {
  const auto a = test::random_array_f({2, 3, 8}, 5), b = test::random_array_f({8, 4}, 6);
  const Array<double> ad = xt::cast<double>(a), bd = xt::cast<double>(b);
  const Array<float> f = matmul(Var<float>(a), Var<float>(b)).value();
  const Array<double> d = matmul(Var<double>(ad), Var<double>(bd)).value();
  CHECK(xt::allclose(xt::cast<double>(f), d, 1e-5, 1e-6));
}

TEST_CASE("gradcheck: matmul 2-D with each transpose flag", "[gradcheck][ops]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      REQUIRE_GRADCHECK(gradcheck([ta, tb](const Inputs& in) { return matmul(in[0], in[1], ta, tb); },
                                  {random_array(stored(3, 4, ta), 7), random_array(stored(4, 2, tb), 8)}, {},
                                  {"a", "b"}));
    }
}

TEST_CASE("gradcheck: batched matmul 3-D with each transpose flag", "[gradcheck][ops]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      Shape sa{2}, sb{2};
      for (auto d : stored(3, 4, ta)) sa.push_back(d);
      for (auto d : stored(4, 2, tb)) sb.push_back(d);
      REQUIRE_GRADCHECK(gradcheck([ta, tb](const Inputs& in) { return matmul(in[0], in[1], ta, tb); },
                                  {random_array(sa, 9), random_array(sb, 10)}, {}, {"a", "b"}));
    }
}

TEST_CASE("gradcheck: batched matmul 4-D [B,H,T,D] x [B,H,T,D]^T (attention scores)", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return matmul(in[0], in[1], false, true); },
                              {random_array({2, 2, 3, 4}, 11), random_array({2, 2, 3, 4}, 12)}, {}, {"q", "k"}));
  // weights [B,H,T,T] x values [B,H,T,D]
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return matmul(in[0], in[1]); },
                              {random_array({2, 2, 3, 3}, 13), random_array({2, 2, 3, 4}, 14)}, {}, {"p", "v"}));
}

TEST_CASE("gradcheck: matmul [B,T,C] x shared 2-D weight, plain and transposed (Linear)", "[gradcheck][ops]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      Shape sa{2};
      for (auto d : stored(3, 4, ta)) sa.push_back(d);
      REQUIRE_GRADCHECK(gradcheck([ta, tb](const Inputs& in) { return matmul(in[0], in[1], ta, tb); },
                                  {random_array(sa, 15), random_array(stored(4, 5, tb), 16)}, {}, {"x", "w"}));
    }
}

TEST_CASE("ops: matmul rejects mismatched shapes with both shapes named", "[ops]") {
  Var<double> a(Array<double>::from_shape({2, 3}));
  Var<double> b(Array<double>::from_shape({4, 5}));
  CHECK_THROWS_WITH(matmul(a, b), Catch::Contains("[2, 3]") && Catch::Contains("[4, 5]") && Catch::Contains("inner"));
  Var<double> c(Array<double>::from_shape({2, 3, 4}));
  Var<double> d(Array<double>::from_shape({3, 4, 5}));
  CHECK_THROWS_WITH(matmul(c, d), Catch::Contains("batch"));
}

TEST_CASE("ops: matmul takes torch.matmul's 1-D operands: a row on the left, a column on the right", "[ops]") {
  const auto v = random_array({4}, 21), w = random_array({4}, 22), m = random_array({3, 4}, 23);
  const auto n = random_array({4, 5}, 24), bm = random_array({2, 3, 4}, 25);
  const Var<double> dot = matmul(Var<double>(v), Var<double>(w));
  CHECK(dot.shape() == Shape{});
  CHECK(dot.item() == Approx(xt::linalg::vdot(v, w)).epsilon(1e-14));
  CHECK(xt::allclose(matmul(Var<double>(m), Var<double>(v)).value(), xt::linalg::dot(m, v), 1e-12, 1e-12));
  CHECK(xt::allclose(matmul(Var<double>(v), Var<double>(n)).value(), xt::linalg::dot(v, n), 1e-12, 1e-12));
  const Var<double> bv = matmul(Var<double>(bm), Var<double>(v));
  CHECK(bv.shape() == Shape{2, 3});
  CHECK(xt::allclose(Array<double>(xt::view(bv.value(), 1)), xt::linalg::dot(Array<double>(xt::view(bm, 1)), v), 1e-12,
                     1e-12));
  CHECK_THROWS_WITH(matmul(Var<double>(v), Var<double>(random_array({5}, 26))), Catch::Contains("inner"));
  CHECK_THROWS_WITH(matmul(Var<double>(v), Var<double>(n), true),
                    Catch::Contains("the first operand is read transposed, which needs it 2-D or more"));
  CHECK_THROWS_WITH(matmul(Var<double>(n), Var<double>(v), false, true), Catch::Contains("the second operand"));
}

TEST_CASE("ops: matmul broadcasts batch dims as torch.matmul does, a batch of ones shared without a copy", "[ops]") {
  struct Case {
    Shape a, b, out;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 4}, {1, 4, 2}, {2, 3, 2}},
                                         {{3, 4}, {2, 4, 5}, {2, 3, 5}},
                                         {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},
                                         {{1, 3, 4}, {2, 4, 2}, {2, 3, 2}}}) {
    INFO(shape_str(c.a) << " @ " << shape_str(c.b));
    const auto a = random_array(c.a, 27), b = random_array(c.b, 28);
    const Var<double> out = matmul(Var<double>(a), Var<double>(b));
    REQUIRE(out.shape() == c.out);
    // the same product with both operands stretched to the result's batch dims beforehand
    Shape sa(c.out.begin(), c.out.end() - 2), sb = sa;
    sa.insert(sa.end(), c.a.end() - 2, c.a.end());
    sb.insert(sb.end(), c.b.end() - 2, c.b.end());
    const Array<double> wide_a = xt::broadcast(a, sa), wide_b = xt::broadcast(b, sb);
    const Array<double> ref = matmul(Var<double>(wide_a), Var<double>(wide_b)).value();
    CHECK(xt::allclose(out.value(), ref, 1e-12, 1e-12));
  }
  CHECK_THROWS_WITH(matmul(Var<double>(random_array({2, 3, 4}, 29)), Var<double>(random_array({3, 4, 5}, 30))),
                    Catch::Contains("batch") && Catch::Contains("[2, 3, 4]"));
}

TEST_CASE("gradcheck: matmul of 1-D operands and of broadcast batch dims", "[gradcheck][ops]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{4}, {4}},
                                                       {{3, 4}, {4}},
                                                       {{4}, {4, 2}},
                                                       {{2, 3, 4}, {4}},
                                                       {{2, 3, 4}, {1, 4, 2}},
                                                       {{3, 4}, {2, 4, 2}},
                                                       {{2, 1, 3, 4}, {3, 4, 2}}};
  for (const auto& [sa, sb] : shapes) {
    INFO(shape_str(sa) << " @ " << shape_str(sb));
    REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return matmul(in[0], in[1]); },
                                {random_array(sa, 31), random_array(sb, 32)}, {}, {"a", "b"}));
  }
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return matmul(in[0], in[1], true, false); },
                              {random_array({1, 4, 3}, 33), random_array({2, 4, 2}, 34)}, {}, {"a", "b"}));
}
