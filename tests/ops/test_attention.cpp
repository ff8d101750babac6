// The fused causal self-attention op: float64 gradchecks with and without dropout, and the backward that computes
// the attention weights again (for long sequences) giving the same values and gradients, to the bit, as the one that
// keeps them.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// Restores the op's keep limit when a test that changes it ends.
struct KeepLimitGuard {
  std::size_t saved;
  explicit KeepLimitGuard(std::size_t limit) : saved(set_attention_keep_limit(limit)) {}
  ~KeepLimitGuard() { set_attention_keep_limit(saved); }
};

// y and dqkv of the fused op in float32 on a fixed input, with the given keep limit.
std::pair<Array<float>, Array<float>> run(std::size_t keep_limit, float dropout_p) {
  KeepLimitGuard guard(keep_limit);
  Var<float> qkv(test::random_array_f({2, 37, 3 * 64}, 21, -2.0, 2.0), true);
  Rng rng(8);
  Var<float> y = causal_self_attention(qkv, 4, dropout_p, true, rng);
  y.backward(test::random_array_f({2, 37, 64}, 22));
  return {y.value(), qkv.grad()};
}
}  // namespace

TEST_CASE("gradcheck: fused causal self-attention op on qkv [B,T,3C]", "[gradcheck][ops]") {
  Rng rng(1);
  REQUIRE_GRADCHECK(gradcheck([&](const Inputs& in) { return causal_self_attention(in[0], 2, 0.0, false, rng); },
                              {random_array({2, 4, 12}, 5, -2.0, 2.0)}, {}, {"qkv"}));
}

TEST_CASE("gradcheck: fused causal self-attention with dropout (fixed mask)", "[gradcheck][ops]") {
  auto f = [](const Inputs& in) {
    Rng rng(5);  // same mask on every call
    return causal_self_attention(in[0], 2, 0.25, true, rng);
  };
  REQUIRE_GRADCHECK(gradcheck(f, {random_array({1, 6, 12}, 6, -2.0, 2.0)}, {}, {"qkv"}));
}

TEST_CASE("ops: fused attention that recomputes its weights in the backward gives the same bits as keeping them",
          "[ops]") {
  for (float p : {0.0f, 0.3f}) {
    INFO("dropout " << p);
    const auto kept = run(kDefaultAttentionKeepBytes, p), recomputed = run(0, p);
    CHECK(kept.first == recomputed.first);    // y
    CHECK(kept.second == recomputed.second);  // dqkv
  }
}

TEST_CASE("gradcheck: fused causal self-attention recomputing its weights, with and without dropout",
          "[gradcheck][ops]") {
  KeepLimitGuard guard(0);
  for (double p : {0.0, 0.25}) {
    INFO("dropout " << p);
    auto f = [p](const Inputs& in) {
      Rng rng(5);  // same mask on every call
      return causal_self_attention(in[0], 2, p, true, rng);
    };
    REQUIRE_GRADCHECK(gradcheck(f, {random_array({2, 5, 12}, 6, -2.0, 2.0)}, {}, {"qkv"}));
  }
}
