// nn::parameter_shapes is the one description of the GPT's architecture: the model builds exactly its tensors, the
// memory estimate counts them, and a checkpoint whose tensors differ from them is refused.
#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"

using namespace tf;

TEST_CASE("nn: parameter_shapes lists the GPT's parameters, names and shapes in order, for every model option",
          "[nn]") {
  std::size_t combinations = 0;
  for (auto norm : {config::Norm::layernorm, config::Norm::rmsnorm, config::Norm::none})
    for (auto mlp : {config::Mlp::gelu, config::Mlp::swiglu, config::Mlp::relu, config::Mlp::none})
      for (auto position : {config::Position::learned, config::Position::rope})
        for (bool bias : {true, false})
          for (bool tie : {true, false})
            for (std::size_t kv_heads : {0, 1}) {  // n_head (2) key/value heads, and multi-query
              config::ModelConfig cfg = test::model(11, 6, 16, 2, 3);
              cfg.n_kv_head = kv_heads;
              cfg.norm = norm;
              cfg.mlp = mlp;
              cfg.position = position;
              cfg.bias = bias;
              cfg.tie_weights = tie;
              const nn::GPT<float> model(cfg, 1);
              const auto built = model.named_parameters();
              const auto described = nn::parameter_shapes(cfg);
              REQUIRE(built.size() == described.size());
              for (std::size_t i = 0; i < built.size(); ++i) {
                CHECK(built[i].first == described[i].name);
                CHECK(built[i].second.shape() == described[i].shape);
              }
              CHECK(nn::parameter_count(cfg) == static_cast<double>(model.num_parameters()));
              ++combinations;
            }
  CHECK(combinations == 192);
}

TEST_CASE("nn: parameter_shapes gives SwiGLU's c_fc the gate and up rows of the rounded-up hidden width", "[nn]") {
  config::ModelConfig cfg = test::model(7, 5, 64, 4, 1);
  cfg.mlp = config::Mlp::swiglu;
  CHECK(nn::mlp_hidden(cfg) == 176);  // 2 * 4 * 64 / 3 = 170, rounded up to a multiple of 8
  for (const auto& p : nn::parameter_shapes(cfg)) {
    if (p.name == "transformer.h.0.mlp.c_fc.weight") CHECK(p.shape == Shape{352, 64});
    if (p.name == "transformer.h.0.mlp.c_proj.weight") CHECK(p.shape == Shape{64, 176});
  }
}

TEST_CASE("nn: parameter_shapes gives grouped-query attention's c_attn the q heads and n_kv_head k and v heads",
          "[nn]") {
  config::ModelConfig cfg = test::model(7, 5, 64, 8, 1);  // D = 8
  for (std::size_t kv : {0, 8, 4, 1}) {
    cfg.n_kv_head = kv;
    const std::size_t rows = 64 + 2 * (kv == 0 ? 8 : kv) * 8;
    for (const auto& p : nn::parameter_shapes(cfg))
      if (p.name == "transformer.h.0.attn.c_attn.weight") CHECK(p.shape == Shape{rows, 64});
  }
}

TEST_CASE("nn: parameter_count counts a million layers without listing them", "[nn]") {
  config::ModelConfig cfg = test::model(7, 5, 8, 2, 1);
  const double one_layer = nn::parameter_count(cfg);
  cfg.n_layer = 1000000;
  const double block = static_cast<double>(nn::block_parameter_shapes(cfg).size());
  CHECK(block == 12);
  CHECK(nn::parameter_count(cfg) > one_layer * 1000);
}

TEST_CASE("nn: parameter_shapes refuses a model section whose vocab_size or context is still auto", "[nn]") {
  config::ModelConfig cfg = test::tiny_model();
  cfg.vocab_size.reset();
  CHECK_THROWS_WITH(nn::parameter_shapes(cfg), Catch::Contains("vocab_size must be a number"));
}

TEST_CASE("nn: parameter_shapes of an attention-only model without norms holds only embeddings, attention and head",
          "[nn]") {
  config::ModelConfig cfg = test::model(7, 5, 16, 2, 2);
  cfg.mlp = config::Mlp::none;
  cfg.norm = config::Norm::none;
  cfg.bias = false;
  std::vector<std::string> names;
  for (const auto& p : nn::parameter_shapes(cfg)) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"transformer.wte.weight", "transformer.wpe.weight",
                                          "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.weight",
                                          "transformer.h.1.attn.c_attn.weight", "transformer.h.1.attn.c_proj.weight",
                                          "lm_head.weight"});
  CHECK(nn::mlp_hidden(cfg) == 0);
}
