// silu and swiglu: PyTorch reference values and gradients, agreement with primitive ops composed (float32 and
// float64), the SwiGLU hidden width rule, bit-identical results at 1 and 2 threads, shape validation and float64
// gradchecks, with row widths below, at and above the SIMD width.
#include <cmath>
#include <cstring>
#include <limits>
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
using test::run;
using test::Run;

namespace {
using Inputs = std::vector<Var<double>>;

// silu(a) = a / (1 + e^-a) from primitive ops
template <class S>
Var<S> silu_composed(const Var<S>& a) {
  return a / (Var<S>(Array<S>{S(1)}) + exp(-a));
}

// split the last axis into gate and up, then silu(gate) * up
template <class S>
Var<S> swiglu_composed(const Var<S>& x) {
  const std::size_t H = x.shape().back() / 2;
  const std::vector<Var<S>> parts = split(x, -1, {H, H});
  return silu(parts[0]) * parts[1];
}

Shape with_last(Shape s, std::size_t n) {
  s.back() = n;
  return s;
}
}  // namespace

TEST_CASE("ops: silu matches torch.nn.functional.silu, also for large |a|, in float64 and float32", "[ops]") {
  const Array<double> a{-20.0, -3.0, -0.5, 0.0, 0.25, 1.0, 4.0, 30.0, -1.5};
  // torch.nn.functional.silu(torch.tensor(a, dtype=torch.float64))
  const Array<double> expected{-4.122307236380407e-08, -0.14227761953270035, -0.1887703343990727, 0.0,
                               0.14054412522144952,    0.7310585786300049,   3.928055160151634,   29.999999999997197,
                               -0.2736382857095345};
  const Array<double> y = silu(Var<double>(a)).value();
  const Array<float> yf = silu(Var<float>(Array<float>(xt::cast<float>(a)))).value();
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("silu(" << a(i) << ")");
    CHECK(y(i) == Approx(expected(i)).epsilon(1e-14));
    CHECK(yf(i) == Approx(expected(i)).epsilon(1e-6).margin(1e-12));
  }
  // far below -700 e^-a overflows to inf: silu is -0, not NaN (as torch)
  const Array<double> tiny = silu(Var<double>(Array<double>{-1000.0, -800.0})).value();
  CHECK(tiny(0) == 0.0);
  CHECK(tiny(1) == 0.0);
}

TEMPLATE_TEST_CASE("ops: silu of NaN, +-inf and +-1e30 and its gradient follow torch, in SIMD lanes and the tail",
                   "[ops]", float, double) {
  using S = TestType;
  const S nan = std::numeric_limits<S>::quiet_NaN(), inf = std::numeric_limits<S>::infinity();
  // a = torch.tensor([nan, inf, -inf, -1e30, 1e30], dtype=torch.float64, requires_grad=True);
  // F.silu(a) -> [nan, inf, nan, -0.0, 1e30]; F.silu(a).sum().backward(): a.grad -> [nan, nan, nan, -0.0, 1.0]
  const S special[5] = {nan, inf, -inf, S(-1e30), S(1e30)};
  const S want_y[5] = {nan, inf, nan, S(0), S(1e30)};
  const S want_d[5] = {nan, nan, nan, S(0), S(1)};
  // 37 values: the five at the front (SIMD lanes) and at the back (the scalar tail), ordinary values between
  Array<S> a = xt::cast<S>(random_array({37}, 514, -3.0, 3.0));
  for (std::size_t k = 0; k < 5; ++k) a(k) = a(32 + k) = special[k];
  const Run<S> r = run<S>([](const Var<S>& v) { return silu(v); }, a, Array<S>(xt::ones<S>({37})));
  for (std::size_t i : {0u, 1u, 2u, 3u, 4u, 32u, 33u, 34u, 35u, 36u}) {
    const std::size_t k = i % 32;
    INFO("silu(" << a(i) << ") at " << i);
    if (std::isnan(want_y[k]))
      CHECK(std::isnan(r.y(i)));
    else
      CHECK(r.y(i) == want_y[k]);
    if (std::isnan(want_d[k]))
      CHECK(std::isnan(r.dx(i)));
    else
      CHECK(r.dx(i) == want_d[k]);
  }
  for (std::size_t i = 5; i < 32; ++i) CHECK(std::isfinite(r.y(i)));
}

TEST_CASE("ops: swiglu and its gradient match torch's F.silu(gate) * up with the gate first", "[ops]") {
  const Array<double> x{{0.5, -1.0, 2.0, 1.5, -0.75, 0.3}, {-2.5, 0.1, 3.0, -0.4, 2.2, -1.1}};
  // gate, up = x.chunk(2, dim=-1); y = F.silu(gate) * up; y.backward(g) with the float64 tensors here
  const Array<double> expected{{0.466844498401391, 0.20170606602749633, 0.5284782467867294},
                               {0.07585818002124356, 0.11549542124536681, -3.14349461851403}};
  const Array<double> g{{1.0, -0.5, 2.0}, {0.25, 1.5, -1.0}};
  const Array<double> expected_dx{{1.1099417809539778, 0.027123558048192473, 0.6544705492709373, 0.3112296656009273,
                                   0.13447071068499755, 3.5231883119115293},
                                  {0.009940111134152683, 1.8147254119441567, 1.1969145166166864, -0.04741136251327722,
                                   0.078746878121841, -2.8577223804672998}};
  const Run<double> r = run<double>([](const Var<double>& v) { return swiglu(v); }, x, g);
  REQUIRE((to_shape(r.y.shape()) == Shape{2, 3}));
  for (std::size_t i = 0; i < r.y.size(); ++i) CHECK(r.y.flat(i) == Approx(expected.flat(i)).epsilon(1e-14));
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(r.dx.flat(i) == Approx(expected_dx.flat(i)).epsilon(1e-13));
}

TEMPLATE_TEST_CASE("ops: silu agrees with a / (1 + exp(-a)) and swiglu with split + silu + mul, values and gradients",
                   "[ops]", float, double) {
  using S = TestType;
  const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-13;
  // row widths 2H with H = 5, 13 (below / not a multiple of the SIMD width), 16 and 32 (multiples)
  for (const Shape& shape : {Shape{2, 3, 2, 10}, Shape{3, 26}, Shape{2, 2, 32}, Shape{3, 64}}) {
    INFO("x " << shape_str(shape));
    const Array<S> x = xt::cast<S>(random_array(shape, 501 + shape.back(), -4.0, 4.0));
    const Array<S> seed = xt::cast<S>(random_array(shape, 502 + shape.back()));
    const Array<S> seed_half = xt::cast<S>(random_array(with_last(shape, shape.back() / 2), 503 + shape.back()));
    const Run<S> silu_fused = run<S>([](const Var<S>& v) { return silu(v); }, x, seed);
    const Run<S> silu_comp = run<S>([](const Var<S>& v) { return silu_composed(v); }, x, seed);
    CHECK(max_abs_diff(silu_fused.y, silu_comp.y) < tol);
    CHECK(max_abs_diff(silu_fused.dx, silu_comp.dx) < tol);
    const Run<S> fused = run<S>([](const Var<S>& v) { return swiglu(v); }, x, seed_half);
    const Run<S> composed = run<S>([](const Var<S>& v) { return swiglu_composed(v); }, x, seed_half);
    REQUIRE(fused.y.shape() == composed.y.shape());
    CHECK(max_abs_diff(fused.y, composed.y) < tol * 4);  // |up| < 4
    CHECK(max_abs_diff(fused.dx, composed.dx) < tol * 4);
  }
}

TEST_CASE("ops: swiglu_hidden is 2 * mlp_ratio * C / 3 rounded up to a multiple of 8", "[ops]") {
  static_assert(swiglu_hidden(64, 4) == 176, "C = 64, ratio 4: 512 / 3 = 170 -> 176");
  CHECK(swiglu_hidden(64, 4) == 176);
  CHECK(swiglu_hidden(768, 4) == 2048);    // 6144 / 3 = 2048, already a multiple of 8
  CHECK(swiglu_hidden(4096, 4) == 10928);  // LLaMA-7B: 32768 / 3 = 10922; its 11008 rounds to multiples of 256
  CHECK(swiglu_hidden(16, 4) == 48);       // 128 / 3 = 42 -> 48
  CHECK(swiglu_hidden(32, 4) == 88);       // 256 / 3 = 85 -> 88
  CHECK(swiglu_hidden(48, 2) == 64);       // 192 / 3 = 64
  CHECK(swiglu_hidden(10, 1) == 8);        // 20 / 3 = 6 -> 8
  // about the parameters of a GELU MLP: 3 H C vs 2 ratio C^2 within one multiple of 8 of H
  for (std::size_t C : {32u, 64u, 128u, 384u}) CHECK(3 * swiglu_hidden(C, 4) * C < 2 * (4 * C * C) + 3 * (8 * C));
}

TEST_CASE("ops: silu and swiglu values and gradients are bit-identical at 1 and 2 threads", "[ops][threads]") {
  test::ThreadsGuard guard;
  // 384 rows of 2H = 80: silu splits 60 blocks of 512 floats, swiglu rows by at least 4096 / H = 102
  const Array<float> x = test::random_array_f({4, 96, 80}, 504, -4.0, 4.0);
  const Array<float> seed = test::random_array_f({4, 96, 80}, 505);
  const Array<float> seed_half = test::random_array_f({4, 96, 40}, 506);
  Run<float> silu_runs[2], swiglu_runs[2];
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    silu_runs[threads - 1] = run<float>([](const Var<float>& v) { return silu(v); }, x, seed);
    swiglu_runs[threads - 1] = run<float>([](const Var<float>& v) { return swiglu(v); }, x, seed_half);
  }
  CHECK(bit_identical(silu_runs[0].y, silu_runs[1].y));
  CHECK(bit_identical(silu_runs[0].dx, silu_runs[1].dx));
  CHECK(bit_identical(swiglu_runs[0].y, swiglu_runs[1].y));
  CHECK(bit_identical(swiglu_runs[0].dx, swiglu_runs[1].dx));
}

TEST_CASE("ops: swiglu rejects an odd last axis and a 0-d input, naming the shape", "[ops]") {
  CHECK_THROWS_WITH(swiglu(Var<double>(random_array({2, 3, 5}, 507))),
                    Catch::Contains("swiglu") && Catch::Contains("[2, 3, 5]") && Catch::Contains("even"));
  CHECK_THROWS_AS(swiglu(Var<double>(Array<double>(1.0))), std::invalid_argument);
}

TEST_CASE("gradcheck: silu", "[gradcheck][ops]") {
  for (const Shape& shape : {Shape{2, 3, 2, 5}, Shape{3, 13}, Shape{2, 16}, Shape{32}}) {
    INFO("x " << shape_str(shape));
    REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return silu(in[0]); }, {random_array(shape, 511, -5.0, 5.0)}));
  }
}

TEST_CASE("gradcheck: swiglu with H = 5, 13, 16 and 32", "[gradcheck][ops]") {
  for (const Shape& shape : {Shape{2, 3, 2, 10}, Shape{3, 26}, Shape{2, 2, 32}, Shape{2, 64}}) {
    INFO("x " << shape_str(shape));
    REQUIRE_GRADCHECK(
        gradcheck([](const Inputs& in) { return swiglu(in[0]); }, {random_array(shape, 512, -4.0, 4.0)}, {}, {"x"}));
  }
}

TEST_CASE("gradcheck: silu and swiglu used twice on the same input accumulate", "[gradcheck][ops]") {
  const auto x = random_array({3, 2, 14}, 513, -3.0, 3.0);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return silu(in[0]) * silu(in[0]); }, {x}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return swiglu(in[0]) * swiglu(in[0]); }, {x}));
}
