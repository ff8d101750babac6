// infer/lens.hpp: the logit lens's last row is the model's own softmax; the direct logit attribution's parts add up to
// the logit difference for every norm and MLP; without norms, a last-layer head's part is exactly what zeroing its z
// takes away (which a wrong slice of c_proj would miss).
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "support/configs.hpp"
#include "tinyformer/infer/lens.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;

namespace {

struct LensVariant {
  const char* name;
  config::Norm norm;
  config::Mlp mlp;
  bool bias, tie;
};

const LensVariant kLensVariants[] = {
    {"layernorm, gelu, biases", config::Norm::layernorm, config::Mlp::gelu, true, false},
    {"layernorm without bias, tied", config::Norm::layernorm, config::Mlp::gelu, false, true},
    {"rmsnorm, swiglu", config::Norm::rmsnorm, config::Mlp::swiglu, false, false},
    {"no norm, relu", config::Norm::none, config::Mlp::relu, true, false},
    {"attention-only, no norm", config::Norm::none, config::Mlp::none, false, false}};

std::unique_ptr<nn::GPT<float>> make_lens_model(const LensVariant& v) {
  config::ModelConfig cfg = test::model(11, 9, 16, 4, 2);
  cfg.norm = v.norm, cfg.mlp = v.mlp, cfg.bias = v.bias, cfg.tie_weights = v.tie;
  cfg.init = config::InitScheme::normal;
  auto model = std::make_unique<nn::GPT<float>>(cfg, 5);
  for (auto& [name, p] : model->named_parameters()) p.mutable_value() *= 8.0f;  // away from a near-uniform output
  model->eval();
  return model;
}

IndexArray lens_prompt() { return IndexArray{3, 1, 4, 1, 5, 9, 2, 6, 5}; }

// logit[t] - mean logit at `position` of the plain forward, with `hooks`.
double lens_logit_difference(nn::GPT<float>& model, std::size_t position, Index t, const nn::Hooks<float>& hooks = {}) {
  NoGradGuard no_grad;
  IndexArray x = IndexArray::from_shape({1, 9});
  const IndexArray p = lens_prompt();
  std::copy(p.begin(), p.end(), x.begin());
  const Array<float> logits = model.forward(x, hooks).value();
  double mean = 0;
  for (std::size_t v = 0; v < 11; ++v) mean += logits(0, position, v) / 11.0;
  return logits(0, position, static_cast<std::size_t>(t)) - mean;
}

}  // namespace

TEST_CASE("infer: the logit lens's last row is the model's softmax, its first the embeddings' own reading",
          "[infer][lens]") {
  for (const LensVariant& v : kLensVariants) {
    INFO(v.name);
    auto model = make_lens_model(v);
    const std::vector<infer::LensRow> rows = infer::logit_lens(*model, lens_prompt(), 6, 3);
    REQUIRE(rows.size() == 3);  // embed, block 0, block 1
    CHECK(rows[0].stage == "embed");
    CHECK(rows[2].stage == "block 1");
    NoGradGuard no_grad;
    IndexArray x = IndexArray::from_shape({1, 9});
    const IndexArray p = lens_prompt();
    std::copy(p.begin(), p.end(), x.begin());
    const Array<float> probs = softmax(model->forward(x)).value();
    for (std::size_t i = 0; i < 3; ++i) {
      const auto t = static_cast<std::size_t>(rows[2].tokens[i]);
      CHECK(rows[2].probabilities[i] == Approx(probs(0, 6, t)).margin(1e-5));
      if (i > 0) CHECK(rows[2].probabilities[i] <= rows[2].probabilities[i - 1]);
    }
    CHECK_THROWS_AS(infer::logit_lens(*model, lens_prompt(), 9, 3), std::invalid_argument);
    CHECK_THROWS_AS(infer::logit_lens(*model, lens_prompt(), 0, 12), std::invalid_argument);
  }
}

TEST_CASE("infer: direct logit attribution's parts add up to the logit difference for every norm and MLP",
          "[infer][lens]") {
  for (const LensVariant& v : kLensVariants) {
    INFO(v.name);
    auto model = make_lens_model(v);
    for (std::size_t position : {0, 4, 8})
      for (Index t : {0, 7}) {
        const infer::LogitAttribution a = infer::direct_logit_attribution(*model, lens_prompt(), position, t);
        CAPTURE(position, t, a.logit, a.sum());
        CHECK(a.positions == 1);
        CHECK(a.logit == Approx(lens_logit_difference(*model, position, t)).margin(1e-4));
        CHECK(a.sum() == Approx(a.logit).margin(1e-3 * std::max(1.0, std::abs(a.logit))));
        CHECK(a.heads.size() == 2);
        CHECK(a.mlp.empty() == (v.mlp == config::Mlp::none));
        if (v.norm != config::Norm::layernorm || !v.bias) CHECK(a.final_bias == 0.0);
      }
  }
}

TEST_CASE("infer: in an attention-only model without norms a last-layer head's attribution is what zeroing its "
          "output takes from the logit",
          "[infer][lens]") {
  // (with an MLP after it, or a norm, zeroing the head also changes what they compute: the attribution is the direct
  // part only)
  for (const LensVariant& v : kLensVariants) {
    if (v.norm != config::Norm::none || v.mlp != config::Mlp::none) continue;
    INFO(v.name);
    auto model = make_lens_model(v);
    const std::size_t position = 7;
    const Index t = 2;
    const infer::LogitAttribution a = infer::direct_logit_attribution(*model, lens_prompt(), position, t);
    const double intact = lens_logit_difference(*model, position, t);
    for (std::size_t h = 0; h < 4; ++h) {
      nn::Hooks<float> zero_head;  // z [B,T,H,D] with head h set to 0
      zero_head.add("blocks.1.attn.hook_z", [h](const Var<float>& z, const std::string&) {
        Array<float> out = z.value();
        for (std::size_t t = 0; t < out.shape()[1]; ++t)
          for (std::size_t d = 0; d < out.shape()[3]; ++d) out(0, t, h, d) = 0.0f;
        return Var<float>(out);
      });
      CAPTURE(h);
      CHECK(intact - lens_logit_difference(*model, position, t, zero_head) == Approx(a.heads[1][h]).margin(1e-4));
    }
  }
}

TEST_CASE("infer: the mean attribution over held-out data averages every scored position's", "[infer][lens]") {
  config::RunConfig cfg = test::task_config("reverse", 4, 5);
  auto source = data::make_data_source(cfg);
  config::ModelConfig m = test::model(source->vocab().size(), source->seq_len(), 16, 2, 2);
  nn::GPT<float> model(m, 3);
  const infer::LogitAttribution mean = infer::mean_direct_logit_attribution(model, *source, 10, 1);
  CHECK(mean.positions == std::size_t{40});  // 10 sequences x 4 answer tokens
  const data::Batch& batch = source->eval_batches(10).front();
  double logit = 0, head = 0;
  for (std::size_t b = 0; b < 10; ++b)
    for (std::size_t q = 0; q < batch.y.shape(1); ++q) {
      if (batch.y(b, q) == data::kIgnore) continue;
      IndexArray x = IndexArray::from_shape({batch.x.shape(1)});
      for (std::size_t i = 0; i < x.size(); ++i) x(i) = batch.x(b, i);
      const infer::LogitAttribution one = infer::direct_logit_attribution(model, x, q, batch.y(b, q));
      logit += one.logit / 40, head += one.heads[1][0] / 40;
    }
  CHECK(mean.logit == Approx(logit).margin(1e-5));
  CHECK(mean.heads[1][0] == Approx(head).margin(1e-5));
  CHECK(mean.sum() == Approx(mean.logit).margin(1e-3));
}
