// rotary_qk: PyTorch reference values (HF LLaMA's rotate_half), positions with an offset, relative-position
// property, agreement with split / mul / add / concat composed with constant cos and sin (float32 and float64),
// bit-identical results at 1 and 2 threads, argument errors and float64 gradchecks.
#include <cmath>
#include <cstring>
#include <type_traits>

#include <catch2/catch.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

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

// cos or sin of (pos0 + t) base^(-2i/D) as a constant [T, 1, D/2] (broadcasts over batch and heads)
template <class S>
Var<S> angle_table(std::size_t T, std::size_t D, double base, std::size_t pos0, bool sine) {
  Array<S> a = Array<S>::from_shape({T, 1, D / 2});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < D / 2; ++i) {
      const double angle = double(pos0 + t) / std::pow(base, 2.0 * double(i) / double(D));
      a(t, 0, i) = static_cast<S>(sine ? std::sin(angle) : std::cos(angle));
    }
  return Var<S>(a);
}

// rotary_qk from split, reshape, mul, add, sub and concat: each of q and k as [B,T,H,D], halves x1, x2,
// (x1 cos - x2 sin, x2 cos + x1 sin), back to [B,T,C]; v as it is.
template <class S>
Var<S> rotary_qk_composed(const Var<S>& qkv, std::size_t H, double base, std::size_t pos0) {
  const Shape s = qkv.shape();
  const std::size_t B = s[0], T = s[1], C = s[2] / 3, D = C / H;
  const Var<S> cos = angle_table<S>(T, D, base, pos0, false), sin = angle_table<S>(T, D, base, pos0, true);
  const std::vector<Var<S>> qkv_parts = split(qkv, -1, {C, C, C});
  std::vector<Var<S>> out;
  for (int part = 0; part < 2; ++part) {
    const Var<S> heads = reshape(qkv_parts[part], {long(B), long(T), long(H), long(D)});
    const std::vector<Var<S>> x = split(heads, -1, {D / 2, D / 2});
    const Var<S> rotated = concat<S>({x[0] * cos - x[1] * sin, x[1] * cos + x[0] * sin}, -1);
    out.push_back(reshape(rotated, {long(B), long(T), long(C)}));
  }
  out.push_back(qkv_parts[2]);
  return concat(out, -1);
}

// qkv [1, 3, 24] (C = 8, H = 2, D = 4) with two-decimal values
const Array<double>& reference_qkv() {
  static const Array<double> qkv = [] {
    Array<double> a{1.88,  0.83,  -0.16, 1.68,  0.58,  1.16,  -1.29, -0.6,  0.33,  -0.85, -0.19, -1.29,
                    -0.58, 0.49,  -0.07, -0.24, -0.37, -1.18, 0.66,  1.14,  -1.16, 0.71,  -1.56, 0.1,
                    -1.1,  0.23,  0.35,  0.73,  0.98,  -1.09, 1.24,  0.52,  -1.22, -1.39, -0.07, 1.67,
                    0.29,  -0.08, 1.18,  -0.53, -0.91, -1.83, 0.99,  -0.63, 0.15,  -0.13, 1.45,  -1.84,
                    1.99,  1.52,  1.05,  -0.98, -1.24, 1.95,  1.12,  -0.55, 0.26,  0.96,  -1.98, 0.33,
                    0.28,  -1.81, -1.35, 1.99,  0.4,   -1.4,  -0.42, 1.45,  -1.56, 1.24,  1.16,  1.19};
    a.reshape({1, 3, 24});
    return a;
  }();
  return qkv;
}
}  // namespace

TEST_CASE("ops: rotary_qk matches HF LLaMA's apply_rotary_pos_emb (rotate_half) computed by torch", "[ops]") {
  // torch, float64, qkv above: q, k, v = qkv.split(8, -1); q, k viewed [B,H,T,D] (H = 2, D = 4);
  //   inv_freq = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
  //   freqs = torch.outer(torch.arange(pos0, pos0 + T, dtype=torch.float64), inv_freq)
  //   emb = torch.cat((freqs, freqs), -1); q * emb.cos() + rotate_half(q) * emb.sin() (and k), rotate_half(x) =
  //   torch.cat((-x[..., D//2:], x[..., :D//2]), -1); then q, k back to [B,T,C] and torch.cat((q, k, v), -1).
  // clang-format off
  const Array<double> expected{  // base 10000, pos0 0: row t = 0 is not turned
      1.88, 0.83, -0.16, 1.68, 0.58, 1.16, -1.29, -0.6, 0.33, -0.85, -0.19, -1.29, -0.58, 0.49, -0.07, -0.24,
      -0.37, -1.18, 0.66, 1.14, -1.16, 0.71, -1.56, 0.1,
      -0.8888473811377176, 0.22268862176189136, -0.7365122762348373, 0.732263461971024, -0.5139277614110146,
      -1.0951454137879317, 1.4946164243882318, 0.5090741818824243, -0.6002658442225777, -1.406630222247223,
      -1.0644157628764035, 1.6560167323613393, -0.8362480933715573, -0.07469608836622489, 0.8815833065186949,
      -0.5307734868875659, -0.91, -1.83, 0.99, -0.63, 0.15, -0.13, 1.45, -1.84,
      -1.7828945028957792, 1.5392947034926647, 1.3725477010086071, -0.9494060331593799, -0.5023910407263069,
      1.9606092796811598, -1.593613266196645, -0.5108926036146183, 1.6922107276125926, 0.9532084463911147,
      1.0603880673380193, 0.3491327222255704, 1.1110304119814705, -1.8494353587862387, 0.8164015088498332,
      1.9534044265515569, 0.4, -1.4, -0.42, 1.45, -1.56, 1.24, 1.16, 1.19};
  const Array<double> expected_base100_pos5{
      0.3798570247247631, -0.07704137848605164, -1.8481635860408165, 1.8722619010173147, -1.0724882467467773,
      1.3056510949553541, -0.9221002985521822, 0.02958408764665188, -0.08858709098313164, -0.1274862328073949,
      -0.3703408258768487, -1.5395932126521534, -0.23164876679509092, 0.5450775845912914, 0.5363197263221945,
      0.024298699062370033, -0.37, -1.18, 0.66, 1.14, -1.16, 0.71, -1.56, 0.1,
      -0.9583918909457786, -0.2223618141491499, 0.6434166483464465, 0.7323627677649233, 1.2874420986840267,
      -1.1932299064169678, 0.9167839672115065, -0.18628577624755605, -1.1909668345873714, -2.090169435294162,
      0.2736749877371639, 0.5934574388800633, 0.6081596710033386, 0.2332336617065946, 1.0519704437697432,
      -0.48259927377373235, -0.91, -1.83, 0.99, -0.63, 0.15, -0.13, 1.45, -1.84,
      0.8104295574884476, 1.7938934581653596, 2.09900069851086, 0.22966554106249193, -1.6706637859507416,
      1.8457619931854825, 0.02970714245320283, 0.8355612871070289, 1.4968480515924616, 0.5216566630046707,
      -1.3219099479328578, 0.8708469015520646, 1.0980245394864907, -2.666357556587929, -0.8338117957222003,
      0.3560019387959108, 0.4, -1.4, -0.42, 1.45, -1.56, 1.24, 1.16, 1.19};
  // clang-format on
  const Var<double> qkv(reference_qkv());
  const Array<double> y = rotary_qk(qkv, 2).value();
  const Array<double> y5 = rotary_qk(qkv, 2, 100.0, 5).value();
  REQUIRE((to_shape(y.shape()) == Shape{1, 3, 24}));
  for (std::size_t i = 0; i < y.size(); ++i) {
    INFO("flat index " << i);
    CHECK(y.flat(i) == Approx(expected(i)).epsilon(1e-14).margin(1e-15));
    CHECK(y5.flat(i) == Approx(expected_base100_pos5(i)).epsilon(1e-14).margin(1e-15));
  }
  const Array<float> yf = rotary_qk(Var<float>(Array<float>(xt::cast<float>(reference_qkv()))), 2, 100.0, 5).value();
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(yf.flat(i) == Approx(expected_base100_pos5(i)).margin(1e-6));
}

TEST_CASE("ops: rotary_qk with pos0 turns rows like the same rows of a longer sequence", "[ops]") {
  // a KV-cache decoder rotates rows t0.. of a sequence alone: the bits must equal those of the whole sequence
  const Array<double> qkv = random_array({2, 7, 36}, 601, -2.0, 2.0);  // (B, T, 3C), C = 12
  const Array<double> whole = rotary_qk(Var<double>(qkv), 3).value();
  for (std::size_t t0 : {0u, 3u, 6u}) {
    const Array<double> tail = xt::view(qkv, xt::all(), xt::range(t0, 7), xt::all());
    const Array<double> part = rotary_qk(Var<double>(tail), 3, 10000.0, t0).value();
    const Array<double> want = xt::view(whole, xt::all(), xt::range(t0, 7), xt::all());
    CHECK(bit_identical(part, want));
  }
}

TEST_CASE("ops: rotary_qk keeps v, keeps each pair's length, and q_m . k_n depends only on m - n", "[ops]") {
  const std::size_t C = 16, H = 2, D = 8, T = 5;
  const Array<double> qkv = random_array({1, T, 3 * C}, 602, -1.0, 1.0);
  const Array<double> y = rotary_qk(Var<double>(qkv), H).value();
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t j = 2 * C; j < 3 * C; ++j) CHECK(y(0, t, j) == qkv(0, t, j));
    for (std::size_t h = 0; h < 2 * H; ++h)
      for (std::size_t i = 0; i < D / 2; ++i) {
        const std::size_t a = h * D + i, b = a + D / 2;
        CHECK(std::hypot(y(0, t, a), y(0, t, b)) == Approx(std::hypot(qkv(0, t, a), qkv(0, t, b))).epsilon(1e-14));
      }
  }
  // the same q and k rows at every position: their rotated dot product depends on the distance only
  Array<double> same = qkv;
  for (std::size_t t = 1; t < T; ++t) xt::view(same, 0, t, xt::all()) = xt::view(qkv, 0, 0, xt::all());
  const Array<double> r = rotary_qk(Var<double>(same), H, 10000.0, 11).value();
  auto score = [&](std::size_t m, std::size_t n, std::size_t h) {  // q at m . k at n, head h
    double s = 0;
    for (std::size_t i = 0; i < D; ++i) s += r(0, m, h * D + i) * r(0, n, C + h * D + i);
    return s;
  };
  for (std::size_t h = 0; h < H; ++h) {
    CHECK(score(3, 1, h) == Approx(score(4, 2, h)).epsilon(1e-12));
    CHECK(score(2, 2, h) == Approx(score(0, 0, h)).epsilon(1e-12));
    CHECK(score(1, 4, h) == Approx(score(0, 3, h)).epsilon(1e-12));
  }
}

TEMPLATE_TEST_CASE("ops: rotary_qk agrees with split, mul, add and concat composed, values and gradients", "[ops]",
                   float, double) {
  using S = TestType;
  const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-13;
  struct Case {
    std::size_t B, T, H, D, pos0;
    double base;
  };
  // D / 2 = 2, 5, 13 (not multiples of the SIMD width), 16 and 32 (multiples)
  for (const Case& c : {Case{2, 3, 2, 4, 0, 10000.0}, Case{1, 4, 1, 10, 2, 10000.0}, Case{2, 3, 2, 26, 0, 500.0},
                        Case{1, 5, 2, 32, 0, 10000.0}, Case{2, 3, 1, 64, 9, 10000.0}}) {
    INFO("B " << c.B << " T " << c.T << " H " << c.H << " D " << c.D << " pos0 " << c.pos0 << " base " << c.base);
    const Shape shape{c.B, c.T, 3 * c.H * c.D};
    const Array<S> x = xt::cast<S>(random_array(shape, 603 + c.D, -2.0, 2.0));
    const Array<S> seed = xt::cast<S>(random_array(shape, 604 + c.D));
    const Run<S> fused = run<S>([&](const Var<S>& v) { return rotary_qk(v, c.H, c.base, c.pos0); }, x, seed);
    const Run<S> composed =
        run<S>([&](const Var<S>& v) { return rotary_qk_composed(v, c.H, c.base, c.pos0); }, x, seed);
    CHECK(max_abs_diff(fused.y, composed.y) < tol);
    CHECK(max_abs_diff(fused.dx, composed.dx) < tol);
  }
}

TEST_CASE("ops: rotary_qk values and gradients are bit-identical at 1 and 2 threads", "[ops][threads]") {
  test::ThreadsGuard guard;
  // 384 rows of 3C = 144 (H = 3, D = 16): pieces of at least 2048 / 144 = 14 rows
  const Array<float> x = test::random_array_f({4, 96, 144}, 605, -2.0, 2.0);
  const Array<float> seed = test::random_array_f({4, 96, 144}, 606);
  Run<float> runs[2];
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    runs[threads - 1] = run<float>([](const Var<float>& v) { return rotary_qk(v, 3, 10000.0, 3); }, x, seed);
  }
  CHECK(bit_identical(runs[0].y, runs[1].y));
  CHECK(bit_identical(runs[0].dx, runs[1].dx));
}

TEST_CASE("ops: rotary_qk rejects an odd head size, C not divisible by n_head and a qkv that is not [B,T,3C]",
          "[ops]") {
  const Var<double> qkv(random_array({2, 3, 36}, 607));  // (B, T, 3C), C = 12
  CHECK_THROWS_WITH(rotary_qk(qkv, 4), Catch::Contains("rotary_qk") && Catch::Contains("D = C / n_head = 12 / 4 = 3") &&
                                           Catch::Contains("even") && Catch::Contains("[2, 3, 36]"));
  CHECK_THROWS_WITH(rotary_qk(qkv, 5), Catch::Contains("rotary_qk") && Catch::Contains("[2, 3, 36]") &&
                                           Catch::Contains("divisible by n_head = 5"));
  CHECK_THROWS_AS(rotary_qk(qkv, 0), std::invalid_argument);
  CHECK_THROWS_WITH(rotary_qk(Var<double>(random_array({2, 3, 35}, 608)), 1),
                    Catch::Contains("rotary_qk") && Catch::Contains("[B,T,3C]") && Catch::Contains("[2, 3, 35]"));
  CHECK_THROWS_AS(rotary_qk(Var<double>(random_array({6, 36}, 609)), 2), std::invalid_argument);
  CHECK_THROWS_WITH(rotary_qk(qkv, 2, 0.0), Catch::Contains("rotary_qk") && Catch::Contains("base = 0"));
  CHECK_THROWS_AS(rotary_qk(qkv, 2, -10000.0), std::invalid_argument);
}

TEST_CASE("gradcheck: rotary_qk (qkv) with D / 2 = 2, 5, 13, 16 and 32", "[gradcheck][ops]") {
  struct Case {
    std::size_t B, T, H, D, pos0;
  };
  for (const Case& c :
       {Case{2, 3, 2, 4, 0}, Case{1, 4, 1, 10, 0}, Case{2, 2, 1, 26, 5}, Case{1, 3, 2, 32, 0}, Case{1, 2, 1, 64, 7}}) {
    INFO("B " << c.B << " T " << c.T << " H " << c.H << " D " << c.D << " pos0 " << c.pos0);
    const auto qkv = random_array({c.B, c.T, 3 * c.H * c.D}, 611 + c.D, -2.0, 2.0);
    REQUIRE_GRADCHECK(
        gradcheck([&](const Inputs& in) { return rotary_qk(in[0], c.H, 100.0, c.pos0); }, {qkv}, {}, {"qkv"}));
  }
}

TEST_CASE("gradcheck: causal attention on rotary q and k, qkv also used directly", "[gradcheck][ops]") {
  const auto qkv = random_array({2, 4, 24}, 612, -1.0, 1.0);  // (B, T, 3C), C = 8
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        Rng rng(1);
        const Var<double> y = causal_self_attention(rotary_qk(in[0], 2), {2}, rng);
        return concat<double>({y, rotary_qk(in[0], 2, 10.0, 1)}, -1);
      },
      {qkv}, {}, {"qkv"}));
}
