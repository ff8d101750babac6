// The decoding engine (infer/decoder.hpp): its logits equal the model's forward at every position for every model
// option, whether the tokens come one at a time or as a prompt (GEMM blocks), and after a sequence that parts from the
// cached one; past the context, learned positions recompute their window (window_shift 1: nanoGPT's crop) and rope
// attends to a rolling window (one layer: the crop; two: the forward with a sliding-window mask on a longer context);
// int8 weights stay close to float32; a token allocates nothing.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "support/allocations.hpp"
#include "support/configs.hpp"
#include "tinyformer/infer/decoder.hpp"
#include "tinyformer/infer/sample.hpp"
#include "tinyformer/tensor/parallel.hpp"

using namespace tf;

namespace {

IndexArray ids_row(const std::vector<Index>& ids, std::size_t begin = 0) {
  IndexArray x = IndexArray::from_shape({1, ids.size() - begin});
  std::copy(ids.begin() + static_cast<long>(begin), ids.end(), x.data());
  return x;
}

std::vector<Index> random_tokens(std::size_t n, std::size_t V, Rng& rng) {
  std::vector<Index> ids(n);
  for (auto& id : ids) id = static_cast<Index>(rng.below(V));
  return ids;
}

// The forward's logits of every position of ids[begin..) [n, V].
Array<float> forward_rows(nn::GPT<float>& model, const std::vector<Index>& ids, std::size_t begin = 0) {
  NoGradGuard no_grad;
  return model.forward(ids_row(ids, begin)).value();
}

// max |decoder - forward row| over the vocabulary, relative to the row's largest magnitude (at least 1)
double logit_gap(const std::vector<float>& logits, const Array<float>& full, std::size_t pos) {
  const std::size_t V = logits.size();
  double worst = 0, scale = 1;
  for (std::size_t v = 0; v < V; ++v) {
    worst = std::max(worst, std::fabs(double(logits[v]) - full(0, pos, v)));
    scale = std::max(scale, std::fabs(double(full(0, pos, v))));
  }
  return worst / scale;
}

config::ModelConfig small_model(std::size_t T, std::size_t L = 2) {
  config::ModelConfig cfg = test::model(11, T, 16, 4, L);  // V 11, C 16, H 4 (D 4)
  cfg.init = config::InitScheme::normal;
  return cfg;
}

}  // namespace

TEST_CASE("infer: the decoder's logits equal the model's forward at every position, for every model option",
          "[infer]") {
  Rng rng(1);
  int checked = 0;
  for (auto position : {config::Position::learned, config::Position::rope})
    for (auto norm : {config::Norm::layernorm, config::Norm::rmsnorm})
      for (auto mlp : {config::Mlp::gelu, config::Mlp::swiglu})
        for (bool bias : {false, true})
          for (bool tied : {false, true})
            for (std::size_t kv_heads : {0, 2, 1}) {
              config::ModelConfig cfg = small_model(12);
              cfg.position = position, cfg.norm = norm, cfg.mlp = mlp, cfg.bias = bias, cfg.tie_weights = tied;
              cfg.n_kv_head = kv_heads;
              INFO("rope " << (position == config::Position::rope) << " rmsnorm " << (norm == config::Norm::rmsnorm)
                           << " swiglu " << (mlp == config::Mlp::swiglu) << " bias " << bias << " tied " << tied
                           << " n_kv_head " << kv_heads);
              nn::GPT<float> model(cfg, 7 + checked);
              const std::vector<Index> ids = random_tokens(12, 11, rng);
              const Array<float> full = forward_rows(model, ids);
              set_num_threads(1 + checked % 2);
              infer::Decoder one_at_a_time(model), all_at_once(model);
              for (std::size_t n = 1; n <= ids.size(); ++n) {
                const std::vector<Index> prefix(ids.begin(), ids.begin() + static_cast<long>(n));
                CHECK(logit_gap(one_at_a_time.next_logits(prefix), full, n - 1) < 1e-5);
              }
              CHECK(logit_gap(all_at_once.next_logits(ids), full, ids.size() - 1) < 1e-5);  // one GEMM block
              ++checked;
            }
  set_num_threads(1);
  CHECK(checked == 96);
}

TEST_CASE("infer: a prompt of several GEMM blocks, and a sequence that parts from the cached one, give the forward's "
          "logits",
          "[infer]") {
  Rng rng(2);
  for (auto position : {config::Position::learned, config::Position::rope}) {
    INFO("rope " << (position == config::Position::rope));
    config::ModelConfig cfg = small_model(150);
    cfg.position = position;
    nn::GPT<float> model(cfg, 3);
    std::vector<Index> ids = random_tokens(150, 11, rng);
    const Array<float> full = forward_rows(model, ids);
    infer::Decoder decoder(model);
    const std::vector<Index> prompt(ids.begin(), ids.begin() + 130);  // blocks of 64, 64 and 2 tokens
    CHECK(logit_gap(decoder.next_logits(prompt), full, 129) < 1e-5);
    for (std::size_t n = 131; n <= 140; ++n)
      CHECK(logit_gap(decoder.next_logits({ids.begin(), ids.begin() + static_cast<long>(n)}), full, n - 1) < 1e-5);
    CHECK(logit_gap(decoder.next_logits({ids.begin(), ids.begin() + 140}), full, 139) < 1e-5);  // asked again
    // parts from the cached sequence at 100: computed again from there
    std::vector<Index> other(ids.begin(), ids.begin() + 120);
    other[100] = (other[100] + 1) % 11;
    const Array<float> other_full = forward_rows(model, other);
    CHECK(logit_gap(decoder.next_logits(other), other_full, 119) < 1e-5);
    CHECK(logit_gap(decoder.next_logits({other.begin(), other.begin() + 60}), other_full, 59) < 1e-5);  // a prefix
  }
  CHECK_THROWS_WITH(infer::Decoder(nn::GPT<float>(small_model(12), 1)).next_logits({3, 11}),
                    Catch::Contains("token 11 at position 1") && Catch::Contains("0 to 10"));
  CHECK_THROWS_WITH(infer::Decoder(nn::GPT<float>(small_model(12), 1)).next_logits({}), Catch::Contains("empty"));
  infer::DecoderOptions too_far;
  too_far.window_shift = 13;
  CHECK_THROWS_WITH(infer::Decoder(nn::GPT<float>(small_model(12), 1), too_far), Catch::Contains("window_shift 13"));
}

TEST_CASE("infer: past the context, learned positions recompute the window every window_shift tokens; window_shift 1 "
          "is nanoGPT's crop",
          "[infer]") {
  Rng rng(3);
  nn::GPT<float> model(small_model(12), 5);
  const std::vector<Index> ids = random_tokens(40, 11, rng);
  for (std::size_t shift : {1, 3, 12}) {
    INFO("window_shift " << shift);
    infer::DecoderOptions o;
    o.window_shift = shift;
    infer::Decoder incremental(model, o);
    for (std::size_t n = 1; n <= ids.size(); ++n) {
      // the window: the last 12 tokens, its start moved forward in steps of `shift`
      const std::size_t start = n <= 12 ? 0 : (n - 12 + shift - 1) / shift * shift;
      CHECK(n - start <= 12);
      if (n > 12) CHECK(n - start >= 12 - shift + 1);
      const std::vector<Index> seq(ids.begin(), ids.begin() + static_cast<long>(n));
      const Array<float> window = forward_rows(model, seq, start);
      CHECK(logit_gap(incremental.next_logits(seq), window, n - start - 1) < 1e-5);
      infer::Decoder fresh(model, o);
      CHECK(logit_gap(fresh.next_logits(seq), window, n - start - 1) < 1e-5);
    }
  }
}

TEST_CASE("infer: past the context, rope attends to a rolling window: with one layer nanoGPT's crop, with two the "
          "forward of a longer context under a sliding-window mask",
          "[infer]") {
  Rng rng(4);
  const std::vector<Index> ids = random_tokens(100, 11, rng);  // past the context of 12, and past the ring's 12 + 64
  for (std::size_t layers : {1, 2}) {
    INFO("layers " << layers);
    config::ModelConfig cfg = small_model(12, layers);
    cfg.position = config::Position::rope;
    nn::GPT<float> model(cfg, 6);
    // the same weights with room for the whole sequence; the scores of keys more than 11 positions back are -inf
    config::ModelConfig longer = cfg;
    longer.context = ids.size();
    nn::GPT<float> reference(longer, 6);
    const auto mine = model.named_parameters();
    auto theirs = reference.named_parameters();
    for (std::size_t i = 0; i < mine.size(); ++i) theirs[i].second.mutable_value() = mine[i].second.value();
    nn::Hooks<float> band;
    for (std::size_t l = 0; l < layers; ++l)
      band.add(fmt::format("blocks.{}.attn.hook_attn_scores", l), [](const Var<float>& scores, const std::string&) {
        Array<float> s = scores.value();  // [1,H,T,T]
        const std::size_t H = s.shape()[1], T = s.shape()[2];
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j + 12 <= i; ++j) s(0, h, i, j) = -std::numeric_limits<float>::infinity();
        return Var<float>(s);
      });
    Array<float> banded;
    {
      NoGradGuard no_grad;
      banded = reference.forward(ids_row(ids), band).value();
    }
    infer::Decoder incremental(model);
    for (std::size_t n = 1; n <= ids.size(); ++n) {
      const std::vector<Index> seq(ids.begin(), ids.begin() + static_cast<long>(n));
      const std::vector<float>& logits = incremental.next_logits(seq);
      CHECK(logit_gap(logits, banded, n - 1) < 1e-4);
      if (layers == 1 && n > 12) {  // one layer: the keys and values of a position depend on its token alone
        const Array<float> crop = forward_rows(model, seq, n - 12);
        CHECK(logit_gap(logits, crop, 11) < 1e-4);
      }
    }
    infer::Decoder fresh(model);  // the whole sequence at once: GEMM blocks through the ring
    CHECK(logit_gap(fresh.next_logits(ids), banded, ids.size() - 1) < 1e-4);
  }
}

TEST_CASE("infer: int8 weights give logits close to float32's and mostly the same greedy tokens", "[infer]") {
  Rng rng(5);
  config::ModelConfig cfg = test::model(64, 32, 64, 4, 2);  // rows of 64: two groups of 32
  cfg.init = config::InitScheme::normal;
  cfg.position = config::Position::rope;
  cfg.norm = config::Norm::rmsnorm;
  cfg.mlp = config::Mlp::swiglu;
  nn::GPT<float> model(cfg, 9);
  infer::DecoderOptions q8;
  q8.weights = infer::DecoderWeights::q8;
  infer::Decoder exact(model), quantised(model, q8);
  CHECK(quantised.weight_bytes_per_token() * 3 < exact.weight_bytes_per_token());
  const std::vector<Index> ids = random_tokens(32, 64, rng);
  int same_top = 0;
  for (std::size_t n = 1; n <= ids.size(); ++n) {
    const std::vector<Index> seq(ids.begin(), ids.begin() + static_cast<long>(n));
    const std::vector<float> a = exact.next_logits(seq), b = quantised.next_logits(seq);
    double worst = 0, range = 0;
    for (std::size_t v = 0; v < a.size(); ++v) {
      worst = std::max(worst, std::fabs(double(a[v]) - b[v]));
      range = std::max(range, std::fabs(double(a[v])));
    }
    CHECK(worst < 0.05 * range);
    same_top += std::max_element(a.begin(), a.end()) - a.begin() == std::max_element(b.begin(), b.end()) - b.begin();
  }
  CHECK(same_top >= 28);
}

TEST_CASE("infer: decoding a token allocates nothing, at 1 and 2 threads, with float32 and int8 weights", "[infer]") {
  for (auto weights : {infer::DecoderWeights::f32, infer::DecoderWeights::q8})
    for (int threads : {1, 2}) {
      INFO("threads " << threads << " weights " << infer::name(weights));
      set_num_threads(threads);
      config::ModelConfig cfg = test::model(64, 32, 64, 4, 2);
      cfg.position = config::Position::rope;
      nn::GPT<float> model(cfg, 9);
      infer::DecoderOptions o;
      o.weights = weights;
      infer::Decoder decoder(model, o);
      std::vector<Index> ids;
      ids.reserve(100);
      ids.push_back(1);
      for (int t = 0; t < 8; ++t) ids.push_back(static_cast<Index>(decoder.next_logits(ids)[0] > 0 ? 2 : 3));
      const std::size_t before = test::allocations();
      for (int t = 0; t < 60; ++t) {  // past the context of 32: the ring wraps
        const std::vector<float>& logits = decoder.next_logits(ids);
        ids.push_back(static_cast<Index>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
      }
      CHECK(test::allocations() == before);
    }
  set_num_threads(1);
}
