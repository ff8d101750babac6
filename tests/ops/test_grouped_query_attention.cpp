// Grouped-query attention in the fused op (n_kv_head < n_head): qkv [B,T,(H+2Hkv)D], query head h reading key/value
// head h / (H/Hkv). Float64 gradchecks (with and without dropout, keeping and recomputing the weights), and the
// equivalence that defines it: the same as ordinary attention on a qkv whose k and v heads are repeated G times, with
// the repeated heads' gradients summed.
#include <catch2/catch.hpp>

#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

AttentionOptions grouped(std::size_t H, std::size_t Hkv, double p = 0, std::size_t keep = kDefaultAttentionKeepBytes) {
  return {H, p, p > 0, keep, Hkv};
}

// [B,T,(H+2Hkv)D] -> [B,T,3HD]: k and v head g copied to heads g G .. g G + G - 1.
Array<double> repeat_kv(const Array<double>& qkv, std::size_t H, std::size_t Hkv) {
  const std::size_t B = qkv.shape()[0], T = qkv.shape()[1], D = qkv.shape()[2] / (H + 2 * Hkv), C = H * D;
  Array<double> out = Array<double>::from_shape({B, T, 3 * C});
  for (std::size_t r = 0; r < B * T; ++r) {
    const double* in = qkv.data() + r * (C + 2 * Hkv * D);
    double* o = out.data() + r * 3 * C;
    std::copy(in, in + C, o);
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t g = h / (H / Hkv);
      std::copy(in + C + g * D, in + C + (g + 1) * D, o + C + h * D);
      std::copy(in + C + (Hkv + g) * D, in + C + (Hkv + g + 1) * D, o + 2 * C + h * D);
    }
  }
  return out;
}

// The gradient of repeat_kv: the G copies of a k or v head summed back.
Array<double> sum_repeated(const Array<double>& g, std::size_t H, std::size_t Hkv) {
  const std::size_t B = g.shape()[0], T = g.shape()[1], C = g.shape()[2] / 3, D = C / H, ld = C + 2 * Hkv * D;
  Array<double> out = xt::zeros<double>({B, T, ld});
  for (std::size_t r = 0; r < B * T; ++r) {
    const double* in = g.data() + r * 3 * C;
    double* o = out.data() + r * ld;
    std::copy(in, in + C, o);
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t grp = h / (H / Hkv);
      for (std::size_t d = 0; d < D; ++d) {
        o[C + grp * D + d] += in[C + h * D + d];
        o[C + (Hkv + grp) * D + d] += in[2 * C + h * D + d];
      }
    }
  }
  return out;
}
}  // namespace

TEST_CASE("gradcheck: grouped-query attention op, 4 query heads on 2 and on 1 key/value heads", "[gradcheck][ops]") {
  for (std::size_t Hkv : {2, 1})
    for (std::size_t keep : {kDefaultAttentionKeepBytes, std::size_t{0}})
      for (double p : {0.0, 0.25}) {
        INFO("n_kv_head " << Hkv << ", keep limit " << keep << ", dropout " << p);
        auto f = [&](const Inputs& in) {
          Rng rng(5);  // same mask on every call
          return causal_self_attention(in[0], grouped(4, Hkv, p, keep), rng);
        };
        REQUIRE_GRADCHECK(gradcheck(f, {random_array({2, 5, (4 + 2 * Hkv) * 4}, 70 + Hkv, -2.0, 2.0)}, {}, {"qkv"}));
      }
}

TEST_CASE("ops: grouped-query attention equals attention on repeated key/value heads, gradients summed", "[ops]") {
  for (std::size_t Hkv : {1, 2, 4}) {
    INFO("n_kv_head " << Hkv);
    const std::size_t H = 4, D = 8, B = 2, T = 11;
    const Array<double> qkv = random_array({B, T, (H + 2 * Hkv) * D}, 80 + Hkv, -2.0, 2.0);
    const Array<double> dy = random_array({B, T, H * D}, 90 + Hkv);
    Rng rng(1);
    Var<double> grouped_in(qkv, true), repeated_in(repeat_kv(qkv, H, Hkv), true);
    Array<double> w_grouped, w_repeated;
    Var<double> y = causal_self_attention(grouped_in, grouped(H, Hkv), rng, &w_grouped);
    Var<double> y_ref = causal_self_attention(repeated_in, AttentionOptions{H}, rng, &w_repeated);
    y.backward(dy);
    y_ref.backward(dy);
    CHECK(test::max_abs_diff(y.value(), y_ref.value()) < 1e-12);
    CHECK(test::max_abs_diff(w_grouped, w_repeated) < 1e-12);
    CHECK(test::max_abs_diff(grouped_in.grad(), sum_repeated(repeated_in.grad(), H, Hkv)) < 1e-12);
  }
}

TEST_CASE("ops: rotary_qk with n_kv_head turns the q and k heads and leaves v, as on repeated heads", "[ops]") {
  const std::size_t H = 4, Hkv = 2, D = 6;
  const Array<double> qkv = random_array({1, 5, (H + 2 * Hkv) * D}, 95, -1.0, 1.0);
  const Array<double> turned = rotary_qk(Var<double>(qkv), H, 10000.0, 3, Hkv).value();
  const Array<double> turned_repeated = rotary_qk(Var<double>(repeat_kv(qkv, H, Hkv)), H, 10000.0, 3).value();
  CHECK(test::max_abs_diff(repeat_kv(turned, H, Hkv), turned_repeated) == 0.0);
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return rotary_qk(in[0], 4, 10000.0, 1, 2); }, {qkv}, {}, {"qkv"}));
}

TEST_CASE("ops: cached grouped-query attention fed a sequence in pieces gives the fused op's rows", "[ops]") {
  const std::size_t H = 4, Hkv = 2, D = 4, T = 9;
  const Array<double> qkv = random_array({1, T, (H + 2 * Hkv) * D}, 97, -2.0, 2.0);
  Rng rng(1);
  const Array<double> whole = causal_self_attention(Var<double>(qkv), grouped(H, Hkv), rng).value();
  KVCache<double> cache = make_kv_cache<double>(Hkv, T, D);
  for (std::size_t t = 0; t < T; ++t) {
    const Array<double> row = xt::view(qkv, xt::all(), xt::range(t, t + 1), xt::all());
    const Array<double> y = causal_self_attention_cached(Var<double>(row), cache, grouped(H, Hkv)).value();
    const Array<double> expected = xt::view(whole, xt::all(), xt::range(t, t + 1), xt::all());
    CHECK(test::max_abs_diff(y, expected) < 1e-12);
  }
}

TEST_CASE("ops: attention refuses an n_kv_head that does not divide n_head and a qkv of the wrong width", "[ops]") {
  Rng rng(1);
  const Var<double> qkv(random_array({1, 3, 24}, 1));  // 6 heads of 4: H 2 (Hkv 2) or H 4, Hkv 1
  CHECK_THROWS_WITH(causal_self_attention(qkv, grouped(4, 3), rng),
                    Catch::Contains("n_kv_head = 3") && Catch::Contains("n_head = 4"));
  CHECK_THROWS_AS(causal_self_attention(qkv, grouped(4, 8), rng), std::invalid_argument);
  CHECK_THROWS_WITH(causal_self_attention(qkv, grouped(5, 1), rng), Catch::Contains("[1, 3, 24]"));  // 24 % 7 != 0
  CHECK_NOTHROW(causal_self_attention(qkv, grouped(4, 1), rng));
  CHECK_THROWS_AS(rotary_qk(qkv, 4, 10000.0, 0, 3), std::invalid_argument);
}
