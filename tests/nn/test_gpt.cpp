// Modules and the GPT model: nanoGPT parameter names, counts, train/eval, determinism, and the float64
// gradient check of a whole small GPT on its loss, every parameter.
#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "support/helpers.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/optim/adam.hpp"

using namespace tf;
using namespace tf::nn;

namespace {

constexpr std::uint64_t kSeed = 42;

config::ModelConfig small_config() { return test::tiny_model(); }

IndexArray tokens(std::initializer_list<std::initializer_list<Index>> rows) {
  IndexArray a = IndexArray::from_shape({rows.size(), rows.begin()->size()});
  std::size_t i = 0;
  for (auto r : rows) {
    std::size_t j = 0;
    for (auto v : r) a(i, j++) = v;
    ++i;
  }
  return a;
}

}  // namespace

TEST_CASE("nn: GPT parameter names follow nanoGPT's state_dict, in order", "[nn]") {
  GPT<float> model(small_config(), kSeed);
  std::vector<std::string> names;
  for (auto& [name, p] : model.named_parameters()) names.push_back(name);
  std::vector<std::string> expected{"transformer.wte.weight", "transformer.wpe.weight"};
  for (int i = 0; i < 2; ++i)
    for (const char* leaf : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                             "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                             "mlp.c_proj.weight", "mlp.c_proj.bias"})
      expected.push_back("transformer.h." + std::to_string(i) + "." + leaf);
  expected.insert(expected.end(), {"transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"});
  CHECK(names == expected);
}

TEST_CASE("nn: GPT parameter shapes use PyTorch's Linear layout (out, in)", "[nn]") {
  GPT<float> model(small_config(), kSeed);
  const auto params = model.named_parameters();
  auto shape_of = [&](const std::string& n) {
    for (auto& [name, p] : params)
      if (name == n) return p.shape();
    FAIL("no parameter " << n);
    return Shape{};
  };
  CHECK(shape_of("transformer.wte.weight") == Shape{7, 8});
  CHECK(shape_of("transformer.wpe.weight") == Shape{5, 8});
  CHECK(shape_of("transformer.h.0.attn.c_attn.weight") == Shape{24, 8});
  CHECK(shape_of("transformer.h.0.attn.c_attn.bias") == Shape{24});
  CHECK(shape_of("transformer.h.1.mlp.c_fc.weight") == Shape{32, 8});
  CHECK(shape_of("transformer.h.1.mlp.c_proj.weight") == Shape{8, 32});
  CHECK(shape_of("lm_head.weight") == Shape{7, 8});
  // V*C + T*C + L*(4C + 3C*C+3C + C*C+C + 4C*C+4C + 4C*C+C) + 2C + V*C
  const std::size_t C = 8, L = 2, V = 7, T = 5;
  CHECK(model.num_parameters() == V * C + T * C + L * (4 * C + 12 * C * C + 9 * C) + 2 * C + V * C);
}

TEST_CASE("nn: tied GPT shares wte with the LM head and has no lm_head.weight", "[nn]") {
  config::ModelConfig cfg = small_config();
  cfg.tie_weights = true;
  GPT<float> model(cfg, kSeed);
  for (auto& [name, p] : model.named_parameters()) CHECK(name != "lm_head.weight");
  const Var<float> logits = model.forward(tokens({{1, 2, 3}}));
  CHECK(logits.shape() == Shape{1, 3, 7});
}

TEST_CASE("nn: train() and eval() reach every sub-module", "[nn]") {
  GPT<float> model(small_config(), kSeed);
  model.eval();
  CHECK_FALSE(model.training());
  CHECK_FALSE(model.block(1).mlp->c_fc.training());
  model.train();
  CHECK(model.block(0).attn.c_proj.training());
}

TEST_CASE("nn: the same seed gives identical weights, another seed different ones", "[nn]") {
  GPT<float> a(small_config(), kSeed), b(small_config(), kSeed);
  config::ModelConfig other = small_config();
  GPT<float> c(other, 43);
  const auto pa = a.named_parameters(), pb = b.named_parameters(), pc = c.named_parameters();
  bool any_diff = false;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CHECK((pa[i].second.value() == pb[i].second.value()));
    any_diff = any_diff || !(pa[i].second.value() == pc[i].second.value());
  }
  CHECK(any_diff);
}

TEST_CASE("nn: GPT rejects a sequence longer than the context and a bad config", "[nn]") {
  GPT<float> model(small_config(), kSeed);
  CHECK_THROWS_WITH(model.forward(tokens({{1, 2, 3, 4, 5, 6}})), Catch::Contains("context length 5"));
  config::ModelConfig bad = small_config();
  bad.d_model = 9;
  CHECK_THROWS_WITH(GPT<float>(bad, kSeed), Catch::Contains("divisible"));
}

TEST_CASE("gradcheck: whole GPT loss (2 layers, C=8, H=2, T=5, V=7), every parameter", "[gradcheck][nn]") {
  // untied, tied, a ReLU MLP without norms (the grokking model's blocks), attention-only (the induction model's)
  for (int variant = 0; variant < 4; ++variant) {
    const bool tied = variant == 1;
    INFO("variant " << variant);
    config::ModelConfig cfg = small_config();
    cfg.tie_weights = tied;
    if (variant == 2) cfg.mlp = config::Mlp::relu, cfg.norm = config::Norm::none;
    if (variant == 3) cfg.mlp = config::Mlp::none;
    cfg.init = InitScheme::normal;  // small weights keep the softmaxes away from saturation
    GPT<double> model(cfg, kSeed);
    // larger weights than GPT-2's 0.02 so every path carries a clearly non-zero gradient
    for (auto& [name, p] : model.named_parameters()) p.mutable_value() *= 10.0;
    const IndexArray ids = tokens({{1, 2, 3, 4, 5}, {6, 0, 6, 1, 1}});
    const IndexArray targets = tokens({{2, 3, 4, 5, 6}, {0, 6, 1, 1, -1}});
    const auto result = gradcheck_params([&] { return model.loss(ids, targets); }, model.named_parameters());
    INFO(result.report());
    CHECK(result.ok);
    CHECK(result.inputs.size() == model.named_parameters().size());
  }
}

namespace {
// Reversal of N = 4 symbols (ids 0..9) after a separator (id 10): x = a0..a3 SEP a3 a2 a1, y = -1 -1 -1 -1 a3 a2 a1
// a0. Returns the share of y's scored positions the argmax of `model` gets right on a fresh batch, after `steps`
// AdamW steps on batches of 32.
double reverse_accuracy_after_training(GPT<float>& model, std::size_t steps) {
  constexpr std::size_t N = 4, T = 2 * N, B = 32;
  Rng data(3);
  auto batch = [&](IndexArray& x, IndexArray& y) {
    x = IndexArray::from_shape({B, T});
    y = IndexArray::from_shape({B, T});
    for (std::size_t b = 0; b < B; ++b) {
      Index a[N];
      for (auto& v : a) v = static_cast<Index>(data.below(10));
      for (std::size_t i = 0; i < N; ++i) {
        x(b, i) = a[i];
        y(b, i) = -1;
        y(b, N + i) = a[N - 1 - i];
        if (i + 1 < N) x(b, N + 1 + i) = a[N - 1 - i];
      }
      x(b, N) = 10;
    }
  };
  optim::AdamW<float> opt(model.named_parameters(), 3e-3);
  IndexArray x, y;
  for (std::size_t s = 0; s < steps; ++s) {
    batch(x, y);
    opt.zero_grad();
    model.loss(x, y).backward();
    opt.step();
  }
  batch(x, y);
  NoGradGuard no_grad;
  model.eval();
  const Array<float> logits = model.forward(x).value();  // [B,T,11]
  std::size_t right = 0, scored = 0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = N; t < T; ++t) {
      std::size_t best = 0;
      for (std::size_t v = 1; v < 11; ++v)
        if (logits(b, t, v) > logits(b, t, best)) best = v;
      right += static_cast<Index>(best) == y(b, t);
      ++scored;
    }
  return static_cast<double>(right) / static_cast<double>(scored);
}
}  // namespace

TEST_CASE("nn: a GPT with grouped-query (n_kv_head 2) or multi-query (1) attention learns to reverse", "[nn][slow]") {
  for (std::size_t kv : {2, 1}) {
    INFO("n_head 4, n_kv_head " << kv);
    config::ModelConfig cfg = test::model(11, 8, 64, 4, 2);
    cfg.n_kv_head = kv;
    GPT<float> model(cfg, 1);
    CHECK(reverse_accuracy_after_training(model, 300) >= 0.95);
  }
}
