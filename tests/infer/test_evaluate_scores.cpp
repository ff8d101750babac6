// infer::evaluate's per-head scores: text (no expected pattern) gets each head's induction score, tasks their
// expected-pattern score; both equal the head detector's (infer::score_heads_on_data) on the same held-out batches.
#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "support/temp_dir.hpp"

#include <random>

#include "tinyformer/infer/evaluate.hpp"
#include "tinyformer/infer/head_scores.hpp"

using namespace tf;

namespace {

// Words drawn from a dozen, so that tokens repeat inside every window (queries an induction score counts).
std::string word_salad(std::size_t words, std::uint32_t seed) {
  static const char* vocabulary[] = {"the", "cat", "sat", "on", "a", "mat", "and", "ran", "far", "away", "home", "Tom"};
  std::mt19937 rng(seed);
  std::string s;
  for (std::size_t w = 0; w < words; ++w) s += std::string(w % 9 ? " " : ".\n") + vocabulary[rng() % 12];
  return s + ".\n";
}

void check_same_table(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t l = 0; l < got.size(); ++l) {
    REQUIRE(got[l].size() == want[l].size());
    for (std::size_t h = 0; h < got[l].size(); ++h) {
      CAPTURE(l, h);
      CHECK(got[l][h] >= 0.0);
      CHECK(got[l][h] <= 1.0);
      CHECK(got[l][h] == Approx(want[l][h]).margin(1e-12));
    }
  }
}

}  // namespace

TEST_CASE("eval: text gets each head's induction score, the head detector's on the same held-out batches", "[infer]") {
  test::TempDir dir;
  const std::string path = dir.write("s.txt", word_salad(3000, 11));
  for (auto tokenizer : {config::Tokenizer::char_, config::Tokenizer::bpe}) {
    CAPTURE(config::to_string(tokenizer));
    config::RunConfig cfg;
    cfg.data.task = config::Task::text;
    cfg.data.path = path;
    cfg.data.tokenizer = tokenizer;
    cfg.data.vocab_size = 280;
    cfg.data.eval_size = 24;
    cfg.model.context = 32;
    auto source = data::make_data_source(cfg);
    nn::GPT<float> model(test::model(source->vocab().size(), 32, 16, 2, 2), 5);
    for (std::size_t max_batches : {1, 3}) {
      const infer::EvalResult r = infer::evaluate(model, *source, 8, max_batches);
      CHECK(r.attention_score.empty());
      const auto want = infer::score_heads_on_data(model, *source, 8, max_batches);
      REQUIRE(want);
      REQUIRE(want->index_of(analysis::Pattern::induction));
      REQUIRE(r.induction_score.size() == 2);
      check_same_table(r.induction_score, want->table(analysis::Pattern::induction));
    }
  }
}

TEST_CASE("eval: a task gets its expected-pattern score and no induction score", "[infer]") {
  config::RunConfig cfg = test::task_config("reverse");
  auto source = data::make_data_source(cfg);
  nn::GPT<float> model(test::model(source->vocab().size(), source->seq_len(), 8, 2, 2), 3);
  const infer::EvalResult r = infer::evaluate(model, *source, 8, 2);
  CHECK(r.induction_score.empty());
  const auto want = infer::score_heads_on_data(model, *source, 8, 2);
  REQUIRE(want);
  check_same_table(r.attention_score, want->table(analysis::Pattern::expected));
}
