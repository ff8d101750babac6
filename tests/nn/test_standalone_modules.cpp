// The building blocks stand alone: Linear with PyTorch's defaults, Norm and CausalSelfAttention without a model
// config, each refusing sizes of zero; and no module keeps a reference to its caller's generator, so one built inside
// a function works, with dropout, after the function returned.
#include <catch2/catch.hpp>

#include <memory>

#include "support/configs.hpp"
#include "support/helpers.hpp"
#include "tinyformer/nn/gpt.hpp"

using namespace tf;
using namespace tf::nn;  // Norm is written nn::Norm: a unity batch may also hold a source using tf::config
                         // (config::Norm)

namespace {
// Built here; the generators it was built from go out of scope on return.
std::unique_ptr<CausalSelfAttention<double>> attention_from_a_function(std::uint64_t seed) {
  SelfAttentionOptions options;
  options.dropout = 0.3;
  options.seed = seed;
  return std::make_unique<CausalSelfAttention<double>>(8, 2, options);
}

std::unique_ptr<Block<double>> block_from_a_function() {
  config::ModelConfig cfg = test::tiny_model();  // C 8, H 2
  cfg.dropout = 0.3;
  Rng init(3);
  return std::make_unique<Block<double>>(cfg, init, std::make_shared<Rng>(4));
}

std::unique_ptr<GPT<float>> gpt_from_a_function() {
  config::ModelConfig cfg = test::tiny_model();
  cfg.dropout = 0.2;
  return std::make_unique<GPT<float>>(cfg, 5);
}
}  // namespace

TEST_CASE("nn: Linear(in, out) has PyTorch's defaults: a bias, Xavier weights from seed 0", "[nn]") {
  const Linear<float> a(3, 2), b(3, 2, true, InitScheme::xavier_uniform, 0);
  Rng rng(0);
  const Linear<float> c(3, 2, true, InitScheme::xavier_uniform, rng);
  REQUIRE(a.named_parameters().size() == 2);
  CHECK(a.named_parameters()[1].first == "bias");
  CHECK(a.named_parameters()[0].second.value() == b.named_parameters()[0].second.value());
  CHECK(a.named_parameters()[0].second.value() == c.named_parameters()[0].second.value());
  CHECK(Linear<float>(3, 2, false).named_parameters().size() == 1);
  CHECK(Linear<float>(3, 2, true, InitScheme::xavier_uniform, 1).named_parameters()[0].second.value() !=
        a.named_parameters()[0].second.value());
}

TEST_CASE("nn: Linear, Norm and CausalSelfAttention refuse sizes of zero, naming the argument", "[nn]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(Linear<float>(0, 3), Contains("Linear") && Contains("in_features"));
  CHECK_THROWS_WITH(Linear<float>(3, 0), Contains("Linear") && Contains("out_features"));
  CHECK_THROWS_AS(Linear<double>(0, 0, false), std::invalid_argument);
  CHECK_THROWS_WITH(nn::Norm<float>(0), Contains("Norm") && Contains("dim"));
  CHECK_THROWS_WITH(CausalSelfAttention<float>(0, 2), Contains("d_model = 0"));
  CHECK_THROWS_WITH(CausalSelfAttention<float>(8, 0), Contains("n_head = 0"));
  CHECK_THROWS_WITH(CausalSelfAttention<float>(10, 4), Contains("d_model = 10") && Contains("n_head = 4"));
  SelfAttentionOptions gqa;
  gqa.n_kv_head = 3;
  CHECK_THROWS_WITH(CausalSelfAttention<float>(8, 4, gqa), Contains("n_kv_head = 3"));
}

TEST_CASE("nn: Norm and CausalSelfAttention built from sizes equal the ones built from a model config", "[nn]") {
  config::ModelConfig cfg = test::tiny_model();  // C 8, H 2
  cfg.norm = config::Norm::rmsnorm;
  CHECK(nn::Norm<float>(8, {config::Norm::rmsnorm}).named_parameters().size() ==
        nn::Norm<float>(cfg).named_parameters().size());
  CHECK(nn::Norm<float>(8).named_parameters().size() == 2);  // LayerNorm with a bias by default
  CHECK(nn::Norm<float>(8, {config::Norm::layernorm, false}).named_parameters().size() == 1);
  SelfAttentionOptions options;
  options.seed = 9;
  options.n_kv_head = 1;
  CausalSelfAttention<double> standalone(8, 2, options);
  config::ModelConfig attn_cfg = test::tiny_model();
  attn_cfg.n_kv_head = 1;
  Rng init(9);
  auto dropout = std::make_shared<Rng>(init.split());
  CausalSelfAttention<double> from_config(attn_cfg, init, dropout);
  const auto a = standalone.named_parameters(), b = from_config.named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].second.value() == b[i].second.value());
  CHECK(a[0].second.shape() == Shape{8 + 2 * 1 * 4, 8});  // c_attn: 2 q heads, 1 k and 1 v head of 4
  const Var<double> x(test::random_array({2, 5, 8}, 1));
  CHECK(standalone.forward(x).value() == from_config.forward(x).value());
}

TEST_CASE("nn: modules built inside a function work, with dropout, after it returned", "[nn]") {
  const Var<double> x(test::random_array({2, 5, 8}, 2));
  auto attn = attention_from_a_function(7);
  auto again = attention_from_a_function(7);  // the same seed: the same weights and dropout masks
  attn->train();
  again->train();
  const Array<double> y1 = attn->forward(x).value(), y2 = attn->forward(x).value();
  CHECK(y1 == again->forward(x).value());
  CHECK(y2 == again->forward(x).value());
  CHECK(y1 != y2);  // dropout draws new masks from the layer's own generator
  auto block = block_from_a_function();
  block->train();
  CHECK(block->forward(x).value() != block->forward(x).value());
  auto gpt = gpt_from_a_function();
  gpt->train();
  IndexArray ids = IndexArray::from_shape({1, 4});
  for (std::size_t t = 0; t < 4; ++t) ids(0, t) = static_cast<Index>(t);
  CHECK(gpt->forward(ids).value() != gpt->forward(ids).value());
  gpt->eval();
  CHECK(gpt->forward(ids).value() == gpt->forward(ids).value());
}

TEST_CASE("nn: LayerNorm and RMSNorm are PyTorch's names for the two kinds of Norm", "[nn]") {
  const Var<double> x(test::random_array({2, 3, 8}, 41));
  const LayerNorm<double> ln(8);
  const RMSNorm<double> rms(8);
  const LayerNorm<double> no_bias(8, false);
  CHECK(ln.named_parameters().size() == 2);
  CHECK(rms.named_parameters().size() == 1);
  CHECK(no_bias.named_parameters().size() == 1);
  const nn::Norm<double> as_layer(8), as_rms(8, nn::NormOptions{config::Norm::rmsnorm});
  CHECK(ln.forward(x).value() == as_layer.forward(x).value());
  CHECK(rms.forward(x).value() == as_rms.forward(x).value());
  CHECK_FALSE(ln.forward(x).value() == rms.forward(x).value());
  CHECK_THROWS_WITH(RMSNorm<double>(0), Catch::Contains("dim"));
}
