// The decoding op: causal_self_attention_cached, fed a sequence in pieces, gives the rows the fused op gives for the
// whole sequence, and refuses what does not fit.
#include <catch2/catch.hpp>

#include <xtensor/xview.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;

namespace {
// The fused op's y [1,T,C] and the cached op's, fed qkv [1,T,3C] in pieces of the given sizes.
template <class S>
std::pair<Array<S>, Array<S>> whole_and_pieces(const Array<S>& qkv, std::size_t H,
                                               const std::vector<std::size_t>& pieces) {
  const std::size_t T = qkv.shape()[1], C = qkv.shape()[2] / 3;
  Rng rng(1);
  const AttentionOptions options{H};
  Array<S> whole = causal_self_attention(Var<S>(qkv), options, rng).value();
  KVCache<S> cache = make_kv_cache<S>(H, T, C / H);
  Array<S> pieced = Array<S>::from_shape({1, T, C});
  std::size_t t0 = 0;
  for (std::size_t n : pieces) {
    const Array<S> part = xt::view(qkv, xt::all(), xt::range(t0, t0 + n), xt::all());
    const Array<S> y = causal_self_attention_cached(Var<S>(part), cache, options).value();
    xt::view(pieced, xt::all(), xt::range(t0, t0 + n), xt::all()) = y;
    t0 += n;
    CHECK(cache.length == t0);
  }
  return {whole, pieced};
}
}  // namespace

TEST_CASE("ops: cached attention fed a sequence in pieces gives the fused op's rows", "[ops]") {
  for (std::size_t H : {1, 2, 4}) {
    INFO("H " << H);
    const auto qkv = test::random_array({1, 13, 48}, 40 + H, -2.0, 2.0);  // (B, T, 3C), C = 16
    const auto [whole, pieced] = whole_and_pieces<double>(qkv, H, {5, 1, 1, 4, 2});
    CHECK(test::max_abs_diff(whole, pieced) < 1e-12);
    const auto qkv_f = test::random_array_f({1, 13, 48}, 40 + H, -2.0, 2.0);
    const auto [whole_f, pieced_f] = whole_and_pieces<float>(qkv_f, H, {1, 12});
    CHECK(test::max_abs_diff(whole_f, pieced_f) < 1e-5);
  }
}

TEST_CASE("ops: cached attention refuses a full cache, a cache of other heads and a qkv that is not [1,n,3C]",
          "[ops]") {
  const AttentionOptions options{2};
  KVCache<double> cache = make_kv_cache<double>(2, 4, 4);
  const Var<double> three(test::random_array({1, 3, 24}, 1));
  causal_self_attention_cached(three, cache, options);
  CHECK_THROWS_AS(causal_self_attention_cached(three, cache, options), std::length_error);  // 6 > 4
  CHECK(cache.length == 3);  // nothing appended by the refused call
  KVCache<double> other = make_kv_cache<double>(4, 4, 2);
  CHECK_THROWS_AS(causal_self_attention_cached(three, other, options), std::invalid_argument);
  CHECK_THROWS_AS(causal_self_attention_cached(Var<double>(test::random_array({2, 3, 24}, 1)), cache, options),
                  std::invalid_argument);
  CHECK_THROWS_AS(causal_self_attention_cached(Var<double>(test::random_array({1, 3, 20}, 1)), cache, options),
                  std::invalid_argument);
}
