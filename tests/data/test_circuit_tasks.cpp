// The two tasks of the circuit experiments (configs/induction_phase.yaml, configs/grokking.yaml): `repeats`, random
// symbols with a segment repeated at a random offset, scoring the second copy; `modular`, (a, b, =) -> (a op b) mod p
// on a fixed split of the pairs. Answers and keys are recomputed here from the rows themselves.
#include <catch2/catch.hpp>

#include <set>

#include "support/configs.hpp"
#include "tinyformer/data/data.hpp"

using namespace tf;
using namespace tf::data;

namespace {

config::RunConfig repeats_task_config(std::size_t length = 6, std::size_t alphabet = 20, std::size_t context = 40) {
  config::RunConfig cfg = test::task_config("repeats", length, alphabet);
  cfg.model.context = context;
  return cfg;
}

config::RunConfig modular_task_config(std::size_t p = 11, double fraction = 0.4, const std::string& op = "add") {
  config::RunConfig cfg = test::task_config("modular");
  cfg.data.modulus = p;
  cfg.data.train_fraction = fraction;
  cfg.data.operation = config::parse_enum<config::Operation>(op);
  cfg.data.eval_size = p * p;
  return cfg;
}

IndexArray repeats_row(const Batch& batch, std::size_t b) {
  IndexArray x = IndexArray::from_shape({batch.x.shape(1)});
  for (std::size_t t = 0; t < x.size(); ++t) x(t) = batch.x(b, t);
  return x;
}

}  // namespace

TEST_CASE("data: repeats scores the second copy of a segment after its first token, at offsets that vary", "[data]") {
  const std::size_t n_max = 6;
  auto source = make_data_source(repeats_task_config(n_max));
  CHECK(source->seq_len() == 40);
  CHECK(source->vocab().size() == 20);
  // the held-out rows: their keys are the generator's, and every scored target is the token at its query's key
  const Batch& batch = source->eval_batches(100).front();
  std::set<long> offsets;
  std::set<std::size_t> lengths;
  for (std::size_t b = 0; b < 100; ++b) {
    INFO("row " << b);
    const IndexArray x = repeats_row(batch, b);
    const std::vector<long> keys = source->expected_attention(x);
    std::vector<std::size_t> scored;
    for (std::size_t q = 0; q < x.size(); ++q)
      if (batch.y(b, q) != kIgnore) scored.push_back(q);
    REQUIRE(!scored.empty());  // the copy's tokens after its first: 1 to n_max - 1 of them, one after another
    REQUIRE(scored.size() <= n_max - 1);
    CHECK(scored.back() - scored.front() == scored.size() - 1);
    lengths.insert(scored.size() + 1);
    const long offset = static_cast<long>(scored.front()) - keys[scored.front()] + 1;  // b - a
    CHECK(offset >= static_cast<long>(scored.size() + 1));                             // the copies do not overlap
    offsets.insert(offset);
    for (const std::size_t q : scored) {
      // the key is the token after the earlier occurrence of the current token, and the target is that token
      REQUIRE(keys[q] >= 1);
      CHECK(x(static_cast<std::size_t>(keys[q]) - 1) == x(q));
      CHECK(batch.y(b, q) == x(static_cast<std::size_t>(keys[q])));
      CHECK(static_cast<long>(q) - keys[q] + 1 == offset);
    }
    for (std::size_t q = 0; q < x.size(); ++q)
      if (batch.y(b, q) == kIgnore) CHECK(keys[q] == -1);
  }
  CHECK(offsets.size() >= 10);  // no fixed period for a head to find by position
  CHECK(lengths == std::set<std::size_t>{2, 3, 4, 5, 6});
  // training rows: the same layout (the scored run is a copy of the tokens after an earlier occurrence)
  Rng rng(3);
  const Batch train = source->train_batch(64, rng);
  for (std::size_t b = 0; b < 64; ++b) {
    std::size_t first = train.y.shape(1), count = 0;
    for (std::size_t q = 0; q < train.y.shape(1); ++q)
      if (train.y(b, q) != kIgnore) first = std::min(first, q), ++count;
    REQUIRE(count >= 1);
    bool found = false;  // an earlier place a where x[a .. a + count] = x[first .. first + count], y included
    for (std::size_t a = 0; a + count < first && !found; ++a) {
      found = train.x(b, a) == train.x(b, first);
      for (std::size_t k = 0; k < count && found; ++k) found = train.x(b, a + k + 1) == train.y(b, first + k);
    }
    CHECK(found);
  }
}

TEST_CASE("data: repeats finds the copies of a prompt by their content", "[data]") {
  auto source = make_data_source(repeats_task_config(4, 20, 16));
  // symbols: 0-9 a-j; "1234" at 2 and again at 9
  const std::vector<Index> ids = source->vocab().encode("ab1234cde1234fgh");
  IndexArray x = IndexArray::from_shape({ids.size()});
  std::copy(ids.begin(), ids.end(), x.begin());
  const std::vector<long> keys = source->expected_attention(x);
  const std::vector<long> want = {-1, -1, -1, -1, -1, -1, -1, -1, -1, 3, 4, 5, -1, -1, -1, -1};
  CHECK(keys == want);
  CHECK(source->prompt_mismatch(ids).empty());
}

TEST_CASE("data: repeats needs a context of a number, at least two copies long", "[data]") {
  using Catch::Matchers::Contains;
  config::RunConfig cfg = repeats_task_config();
  cfg.model.context.reset();
  CHECK_THROWS_WITH(make_data_source(cfg), Contains("model.context") && Contains("repeats"));
  cfg = repeats_task_config(8, 20, 15);
  CHECK_THROWS_WITH(make_data_source(cfg), Contains("model.context") && Contains("at least 16"));
}

TEST_CASE("data: modular writes a b = (a op b) mod p, every pair once, on a split fixed by the seed", "[data]") {
  for (const std::string op : {"add", "subtract", "multiply"}) {
    INFO(op);
    const std::size_t p = 11;
    auto source = make_data_source(modular_task_config(p, 0.4, op));
    CHECK(source->seq_len() == 3);
    CHECK(source->vocab().size() == p + 1);
    CHECK(source->vocab().decode(source->vocab().encode("3 10 =")) == "3 10 =");
    const std::size_t n_train = 48;  // round(0.4 x 121)
    const std::vector<Batch>* train = source->training_set(1000);
    REQUIRE(train != nullptr);
    REQUIRE(train->size() == 1);
    const Batch& all = train->front();
    REQUIRE(all.x.shape(0) == n_train);
    const std::vector<Batch>& held_out = source->eval_batches(1000);
    REQUIRE(held_out.front().x.shape(0) == p * p - n_train);
    std::set<std::pair<Index, Index>> seen;
    for (const Batch* part : {&all, &held_out.front()})
      for (std::size_t i = 0; i < part->x.shape(0); ++i) {
        const Index a = part->x(i, 0), b = part->x(i, 1);
        CHECK(part->x(i, 2) == Index(p));  // '='
        const Index want = op == "add"        ? (a + b) % Index(p)
                           : op == "subtract" ? (a - b + Index(p)) % Index(p)
                                              : (a * b) % Index(p);
        CHECK(part->y(i, 2) == want);
        CHECK(part->y(i, 0) == kIgnore);
        CHECK(part->y(i, 1) == kIgnore);
        CHECK(seen.insert({a, b}).second);  // each pair once, in one part only
      }
    CHECK(seen.size() == p * p);
    // the same seed makes the same split, another seed another one
    CHECK(make_data_source(modular_task_config(p, 0.4, op))->training_set(1000)->front().x == all.x);
    config::RunConfig other = modular_task_config(p, 0.4, op);
    other.training.seed = 8;
    CHECK_FALSE(make_data_source(other)->training_set(1000)->front().x == all.x);
  }
}

TEST_CASE("data: a modular batch of the whole training set draws nothing; a smaller one draws distinct pairs",
          "[data]") {
  auto source = make_data_source(modular_task_config(11, 0.4));
  const Batch all = source->training_set(48)->front();
  Rng rng(5);
  const std::string before = rng.state();
  const Batch full = source->train_batch(48, rng);
  CHECK(full.x == all.x);
  CHECK(full.y == all.y);
  CHECK(rng.state() == before);  // the same batch at every step of full-batch training
  std::set<std::pair<Index, Index>> train_pairs;
  for (std::size_t i = 0; i < 48; ++i) train_pairs.insert({all.x(i, 0), all.x(i, 1)});
  const Batch part = source->train_batch(20, rng);
  std::set<std::pair<Index, Index>> drawn;
  for (std::size_t i = 0; i < 20; ++i) {
    CHECK(train_pairs.count({part.x(i, 0), part.x(i, 1)}) == 1);
    drawn.insert({part.x(i, 0), part.x(i, 1)});
  }
  CHECK(drawn.size() == 20);
  CHECK_THROWS_WITH(source->train_batch(49, rng), Catch::Contains("48"));
  CHECK(make_data_source(test::task_config("reverse"))->training_set(8) == nullptr);
}

TEST_CASE("data: a 62-symbol alphabet goes on from z with A-Z", "[data]") {
  auto source = make_data_source(repeats_task_config(6, 62, 40));
  const auto& tokens = source->vocab().tokens();
  REQUIRE(tokens.size() == 62);
  CHECK(tokens[35] == "z");
  CHECK(tokens[36] == "A");
  CHECK(tokens[61] == "Z");
}
