// rms_norm: PyTorch reference values and gradients, agreement with the same maths composed from primitive ops
// (float32 and float64), bit-identical results at 1 and 2 threads, shape validation, float64 gradchecks of x and
// weight.
#include <cmath>
#include <cstring>
#include <type_traits>

#include <catch2/catch.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::bit_identical;
using test::max_abs_diff;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// x * (mean(x^2, -1) + eps)^(-1/2) * w from primitive ops (the power as exp(-0.5 log(.))).
template <class S>
Var<S> rms_norm_composed(const Var<S>& x, const Var<S>& w, S eps) {
  const Var<S> mean_sq = mean(x * x, -1, true);  // [..., 1]
  const Var<S> rstd = exp(scale(log(mean_sq + Var<S>(Array<S>{eps})), S(-0.5)));
  return x * rstd * w;
}

template <class S>
struct NormRun {
  Array<S> y, dx, dw;
};

// y = f(x, w) and the gradients of sum(y * seed).
template <class S, class F>
NormRun<S> run(F f, const Array<S>& x, const Array<S>& w, const Array<S>& seed) {
  Var<S> vx(x, true), vw(w, true);
  const Var<S> y = f(vx, vw);
  y.backward(seed);
  return {y.value(), vx.grad(), vw.grad()};
}

}  // namespace

TEST_CASE("ops: rms norm and its gradients match torch's x * rsqrt(mean(x^2) + eps) * w", "[ops]") {
  const Array<double> x{{0.5, -1.0, 2.0, 3.5, -0.25}, {-0.3, 0.8, 0.1, -2.2, 1.7}};
  const Array<double> w{0.5, 1.5, -1.0, 2.0, 0.75};
  // x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w on the float64 tensors above, eps = 1e-5 and 0.1
  const Array<double> expected{
      {0.13339244224570712, -0.8003546534742427, -1.067139537965657, 3.7349883828797994, -0.10004433168428034},
      {-0.11524796729828879, 0.9219837383863104, -0.0768319781988592, -3.380607040749805, 0.9796077220354548}};
  const Array<double> expected_eps01{
      {0.1315334104411641, -0.7892004626469846, -1.0522672835293128, 3.6829354923525948, -0.09865005783087308},
      {-0.11199020501841618, 0.8959216401473296, -0.07466013667894413, -3.285046013873542, 0.9519167426565376}};
  // y.backward(g) through that expression (eps = 1e-5): x.grad and w.grad from torch
  const Array<double> g{{1.0, -2.0, 0.5, 0.25, -1.5}, {0.3, 0.7, -0.9, 1.1, -0.2}};
  const Array<double> expected_dx{
      {0.20175032022091438, -1.4706401784074856, -0.5269231415734137, -0.1884570654020848, -0.5677487079704321},
      {0.0006810066957431693, 1.112247666028143, 0.7296767906572479, 0.8501458092895677, 0.5339648094494697}};
  const Array<double> expected_dw{0.19763610411244098, 1.4973986158792685, 0.46442098860385517, -1.3924603245524176,
                                  -0.0611400625075606};
  const auto fused = [](const Var<double>& a, const Var<double>& b) { return rms_norm(a, b); };
  const NormRun<double> r = run<double>(fused, x, w, g);
  const Array<double> y01 = rms_norm(Var<double>(x), Var<double>(w), 0.1).value();
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(r.y.flat(i) == Approx(expected.flat(i)).epsilon(1e-14));
    CHECK(y01.flat(i) == Approx(expected_eps01.flat(i)).epsilon(1e-14));
    CHECK(r.dx.flat(i) == Approx(expected_dx.flat(i)).epsilon(1e-13).margin(1e-15));
  }
  for (std::size_t j = 0; j < w.size(); ++j) CHECK(r.dw(j) == Approx(expected_dw(j)).epsilon(1e-13));
}

TEST_CASE("ops: rms norm rows have unit root mean square with weight 1 and eps 0", "[ops]") {
  const Array<double> y = rms_norm(Var<double>(random_array({3, 4, 13}, 301, -3.0, 5.0)),
                                   Var<double>(Array<double>(xt::ones<double>({13}))), 0.0)
                              .value();
  for (std::size_t r = 0; r < 12; ++r) {
    double sq = 0;
    for (std::size_t j = 0; j < 13; ++j) sq += y.data()[r * 13 + j] * y.data()[r * 13 + j];
    CHECK(sq / 13 == Approx(1.0).epsilon(1e-14));
  }
}

TEMPLATE_TEST_CASE("ops: rms norm agrees with mul, mean, log and exp composed, values and gradients", "[ops]", float,
                   double) {
  using S = TestType;
  const double tol = std::is_same_v<S, float> ? 2e-5 : 1e-12;
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{3, 13}, Shape{2, 2, 16}, Shape{5, 32}, Shape{2, 70}}) {
    INFO("x " << shape_str(shape));
    const std::size_t C = shape.back();
    const Array<S> x = xt::cast<S>(random_array(shape, 302 + C, -2.0, 2.0));
    const Array<S> w = xt::cast<S>(random_array({C}, 303 + C, 0.5, 1.5));
    const Array<S> seed = xt::cast<S>(random_array(shape, 304 + C));
    for (const S eps : {S(1e-5), S(0.3)}) {
      const NormRun<S> fused =
          run<S>([eps](const Var<S>& a, const Var<S>& b) { return rms_norm(a, b, eps); }, x, w, seed);
      const NormRun<S> composed =
          run<S>([eps](const Var<S>& a, const Var<S>& b) { return rms_norm_composed(a, b, eps); }, x, w, seed);
      CHECK(max_abs_diff(fused.y, composed.y) < tol);
      CHECK(max_abs_diff(fused.dx, composed.dx) < tol);
      CHECK(max_abs_diff(fused.dw, composed.dw) < tol * shape_numel(shape) / C);  // a sum over the rows
    }
  }
}

TEST_CASE("ops: rms norm values and gradients are bit-identical at 1 and 2 threads", "[ops][threads]") {
  test::ThreadsGuard guard;
  // 384 rows of 40: the forward splits rows (64 per piece at least), the backward 6 chunks of 64 rows
  const Array<float> x = test::random_array_f({4, 96, 40}, 305, -2.0, 2.0);
  const Array<float> w = test::random_array_f({40}, 306, 0.5, 1.5);
  const Array<float> seed = test::random_array_f({4, 96, 40}, 307);
  const auto fused = [](const Var<float>& a, const Var<float>& b) { return rms_norm(a, b); };
  set_num_threads(1);
  const NormRun<float> one = run<float>(fused, x, w, seed);
  set_num_threads(2);
  const NormRun<float> two = run<float>(fused, x, w, seed);
  CHECK(bit_identical(one.y, two.y));
  CHECK(bit_identical(one.dx, two.dx));
  CHECK(bit_identical(one.dw, two.dw));
}

TEST_CASE("ops: rms norm rejects a weight that is not [C], a 0-d x and a bad eps, naming the shapes", "[ops]") {
  const Var<double> x(random_array({2, 3, 4}, 308));
  const auto ones = [](const Shape& s) { return Var<double>(Array<double>(xt::ones<double>(s))); };
  CHECK_THROWS_WITH(rms_norm(x, ones({5})), Catch::Contains("rms_norm") && Catch::Contains("weight") &&
                                                Catch::Contains("[5]") && Catch::Contains("[2, 3, 4]") &&
                                                Catch::Contains("[C] = [4]"));
  CHECK_THROWS_AS(rms_norm(x, ones({1, 4})), std::invalid_argument);
  CHECK_THROWS_AS(rms_norm(x, ones({4, 1})), std::invalid_argument);
  CHECK_THROWS_WITH(rms_norm(x, ones({4}), -1.0), Catch::Contains("rms_norm") && Catch::Contains("eps = -1"));
  CHECK_THROWS_AS(rms_norm(x, ones({4}), std::nan("")), std::invalid_argument);
  CHECK_THROWS_WITH(rms_norm(Var<double>(Array<double>(1.0)), ones({1})),
                    Catch::Contains("rms_norm") && Catch::Contains("0-d"));
}

TEST_CASE("gradcheck: rms norm (x, weight) with row widths 5, 13, 16 and 32", "[gradcheck][ops]") {
  for (const Shape& shape : {Shape{2, 3, 2, 5}, Shape{3, 13}, Shape{2, 2, 16}, Shape{4, 32}}) {
    INFO("x " << shape_str(shape));
    const std::size_t C = shape.back();
    const auto x = random_array(shape, 311 + C, -2.0, 2.0);
    const auto w = random_array({C}, 312 + C, -1.5, 1.5);
    REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return rms_norm(in[0], in[1]); }, {x, w}, {}, {"x", "weight"}));
  }
  // eps large enough to matter in the gradient
  const auto x2 = random_array({4, 6}, 313, -0.2, 0.2);
  const auto w2 = random_array({6}, 314, -1.5, 1.5);
  REQUIRE_GRADCHECK(
      gradcheck([](const Inputs& in) { return rms_norm(in[0], in[1], 0.01); }, {x2, w2}, {}, {"x", "weight"}));
}

TEST_CASE("gradcheck: rms norm applied twice to the same input accumulates", "[gradcheck][ops]") {
  const auto x = random_array({3, 2, 7}, 315);
  const auto w = random_array({7}, 316, 0.5, 1.5);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return rms_norm(rms_norm(in[0], in[1]), in[1]) * in[0]; }, {x, w},
                              {}, {"x", "weight"}));
}
