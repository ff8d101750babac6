// Multi-head attention exists twice: the fused op (hand-written backward) and the composition of
// primitive ops. They must agree in output, attention weights and every gradient; both pass gradcheck.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/nn/self_attention.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using namespace tf::nn;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;
using config::AttentionImpl;

config::ModelConfig attention_config(std::size_t d_model, std::size_t n_head, double dropout, AttentionImpl impl,
                                     std::size_t n_kv_head = 0) {
  config::ModelConfig cfg;
  cfg.d_model = d_model;
  cfg.n_head = n_head;
  cfg.n_kv_head = n_kv_head;
  cfg.dropout = dropout;
  cfg.attention = impl;
  return cfg;
}

struct AttentionRun {
  Array<double> out, weights;
  std::vector<Array<double>> grads;  // x, then each parameter
};

AttentionRun run_attention(AttentionImpl impl, double dropout_p, bool training, std::size_t n_head = 2,
                           std::size_t n_kv_head = 0, config::Position position = config::Position::learned) {
  Rng init_rng(7);
  config::ModelConfig cfg = attention_config(8, n_head, dropout_p, impl, n_kv_head);
  cfg.position = position;
  CausalSelfAttention<double> attn(cfg, init_rng, std::make_shared<Rng>(99));
  attn.record_weights(true);
  attn.train(training);
  Var<double> x(random_array({2, 5, 8}, 3), true);
  Var<double> y = attn.forward(x);
  y.backward(random_array({2, 5, 8}, 4));
  AttentionRun r{y.value(), attn.last_weights(), {x.grad()}};
  for (auto& [name, p] : attn.named_parameters()) r.grads.push_back(p.grad());
  return r;
}
}  // namespace

TEST_CASE("nn: fused and composed attention agree in output, weights and every gradient", "[nn]") {
  for (double p : {0.0, 0.3}) {
    INFO("dropout " << p);
    const AttentionRun fused = run_attention(AttentionImpl::fused, p, true);
    const AttentionRun composed = run_attention(AttentionImpl::composed, p, true);
    CHECK(xt::allclose(fused.out, composed.out, 1e-12, 1e-12));
    CHECK(xt::allclose(fused.weights, composed.weights, 1e-12, 1e-12));
    REQUIRE(fused.grads.size() == composed.grads.size());
    for (std::size_t i = 0; i < fused.grads.size(); ++i)
      CHECK(xt::allclose(fused.grads[i], composed.grads[i], 1e-12, 1e-12));
  }
}

TEST_CASE("nn: fused and composed grouped-query attention agree in output, weights and every gradient", "[nn]") {
  for (std::size_t kv : {2, 1})
    for (double p : {0.0, 0.3})
      for (auto position : {config::Position::learned, config::Position::rope}) {
        INFO("n_head 4, n_kv_head " << kv << ", dropout " << p << ", rope " << (position == config::Position::rope));
        const AttentionRun fused = run_attention(AttentionImpl::fused, p, true, 4, kv, position);
        const AttentionRun composed = run_attention(AttentionImpl::composed, p, true, 4, kv, position);
        CHECK(xt::allclose(fused.out, composed.out, 1e-12, 1e-12));
        CHECK(xt::allclose(fused.weights, composed.weights, 1e-12, 1e-12));
        REQUIRE(fused.grads.size() == composed.grads.size());
        for (std::size_t i = 0; i < fused.grads.size(); ++i)
          CHECK(xt::allclose(fused.grads[i], composed.grads[i], 1e-12, 1e-12));
        CHECK(fused.grads[1].shape()[0] == 8 + 2 * kv * 2);  // c_attn.weight [(H + 2 Hkv) D, C], D = 2
      }
}

TEST_CASE("nn: attention weights are causal and rows sum to one", "[nn]") {
  const AttentionRun r = run_attention(AttentionImpl::fused, 0.0, false);
  REQUIRE(r.weights.shape()[1] == 2);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t i = 0; i < 5; ++i) {
        double total = 0;
        for (std::size_t j = 0; j < 5; ++j) {
          if (j > i) CHECK(r.weights(b, h, i, j) == 0.0);
          total += r.weights(b, h, i, j);
        }
        CHECK(total == Approx(1.0).epsilon(1e-12));
      }
}

TEST_CASE("gradcheck: CausalSelfAttention module, composed and fused, every parameter", "[gradcheck][nn]") {
  for (AttentionImpl impl : {AttentionImpl::composed, AttentionImpl::fused}) {
    INFO((impl == AttentionImpl::fused ? "fused" : "composed"));
    Rng init_rng(11);
    CausalSelfAttention<double> attn(attention_config(8, 2, 0.0, impl), init_rng, std::make_shared<Rng>(12));
    Var<double> x(random_array({2, 4, 8}, 13), true);
    auto params = attn.named_parameters();
    params.emplace_back("x", x);
    REQUIRE_GRADCHECK(gradcheck_params([&] { return attn.forward(x); }, params));
  }
}

TEST_CASE("nn: fused attention in float32 with SIMD head sizes 16 and 32 matches the composed ops", "[nn]") {
  // D = 16 and 32 take the register-tiled SIMD loops; T = 37 leaves partial tiles and vectors
  for (std::size_t heads : {4, 2})
    for (double p : {0.0, 0.2}) {
      INFO("heads " << heads << " dropout " << p);
      auto run = [&](AttentionImpl impl) {
        Rng init_rng(11);
        CausalSelfAttention<float> attn(attention_config(64, heads, p, impl), init_rng, std::make_shared<Rng>(12));
        attn.record_weights(true);
        Var<float> x(test::random_array_f({2, 37, 64}, 13), true);
        Var<float> y = attn.forward(x);
        y.backward(test::random_array_f({2, 37, 64}, 14));
        std::vector<Array<float>> out{y.value(), attn.last_weights(), x.grad()};
        for (auto& [name, param] : attn.named_parameters()) out.push_back(param.grad());
        return out;
      };
      const auto fused = run(AttentionImpl::fused), composed = run(AttentionImpl::composed);
      for (std::size_t i = 0; i < fused.size(); ++i) {
        INFO("array " << i << " (y, weights, dx, then parameter gradients)");
        CHECK(xt::allclose(fused[i], composed[i], 1e-4, 1e-5));
      }
    }
}
