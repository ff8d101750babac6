// Sampling: the KV-cache decoder gives the logits of the full forward, the cached and uncached samplers write the
// same tokens (past the context too, with the decoder's window_shift 1), and temperature 0 is greedy.
#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "tinyformer/infer/sample.hpp"

using namespace tf;

namespace {

std::unique_ptr<nn::GPT<float>> model_with(config::Position position, bool tied, std::size_t kv_heads = 0) {
  config::ModelConfig cfg = test::tiny_model();  // V 7, T 5, C 8, H 2, L 2
  cfg.n_kv_head = kv_heads;
  cfg.context = 12;
  cfg.position = position;
  cfg.tie_weights = tied;
  auto model = std::make_unique<nn::GPT<float>>(cfg, 11);
  model->eval();
  return model;
}

IndexArray row(const std::vector<Index>& ids) {
  IndexArray x = IndexArray::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), x.data());
  return x;
}

}  // namespace

TEST_CASE("infer: the KV cache decoder gives the full forward's logits, position by position", "[infer]") {
  for (auto position : {config::Position::learned, config::Position::rope})
    for (bool tied : {false, true})
      for (std::size_t kv_heads : {0, 1}) {  // n_head key/value heads, and multi-query
        INFO("rope " << (position == config::Position::rope) << " tied " << tied << " n_kv_head " << kv_heads);
        auto model = model_with(position, tied, kv_heads);
        if (kv_heads == 1) CHECK(model->make_cache().front().k.shape()[0] == 1);  // one key/value head cached
        NoGradGuard no_grad;
        const std::vector<Index> ids{3, 1, 4, 1, 5, 6, 2, 6, 5, 3, 5, 0};
        const Array<float> full = model->forward(row(ids)).value();  // [1,12,V]
        auto cache = model->make_cache();
        // a prompt of 5 at once, then one token at a time
        std::vector<Array<float>> parts{model->forward_cached(row({ids.begin(), ids.begin() + 5}), cache).value()};
        for (std::size_t t = 5; t < ids.size(); ++t)
          parts.push_back(model->forward_cached(row({ids[t]}), cache).value());
        std::size_t pos = 0;
        for (const auto& part : parts)
          for (std::size_t i = 0; i < part.shape()[1]; ++i, ++pos)
            for (std::size_t v = 0; v < 7; ++v) CHECK(part(0, i, v) == Approx(full(0, pos, v)).margin(1e-5));
        CHECK(pos == ids.size());
        CHECK_THROWS_AS(model->forward_cached(row({1}), cache), std::length_error);  // the context is full
      }
}

TEST_CASE("infer: sampling with and without the KV cache writes the same tokens, past the context too (the decoder's "
          "window_shift 1: nanoGPT's crop)",
          "[infer]") {
  auto model = model_with(config::Position::learned, false);
  for (double temperature : {0.0, 0.8, 1.5}) {
    INFO("temperature " << temperature);
    infer::SampleOptions o;
    o.decoder.window_shift = 1;  // the window recomputed for every token past the context, as without the cache
    o.new_tokens = 30;           // 3 + 30 tokens: the context of 12 is passed, and the window slides
    o.temperature = temperature;
    Rng a(5), b(5);
    const auto cached = infer::generate(*model, {1, 2, 3}, o, a);
    o.use_cache = false;
    const auto uncached = infer::generate(*model, {1, 2, 3}, o, b);
    CHECK(cached == uncached);
    CHECK(cached.size() == 33);
  }
}

TEST_CASE("infer: temperature 0 takes the most likely token, the first one on ties, and draws nothing", "[infer]") {
  Array<float> logits{0.5f, 2.0f, -1.0f, 2.0f};
  infer::SampleOptions o;
  o.temperature = 0;
  Rng rng(1);
  const auto state = rng.state();
  CHECK(infer::choose_token(logits, o, rng) == 1);
  CHECK(rng.state() == state);
  o.temperature = -1;
  CHECK_THROWS_AS(infer::choose_token(logits, o, rng), std::invalid_argument);
}
