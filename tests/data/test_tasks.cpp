// The synthetic tasks: every answer is recomputed here independently from the decoded text of the sequence,
// the scored positions are exactly the answer tokens, expected_attention points at the right source token,
// the held-out set is fixed and never drawn for training, and bad specs are refused with a clear message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "support/configs.hpp"
#include "tinyformer/data/data.hpp"

using namespace tf;
using namespace tf::data;

namespace {

config::RunConfig task_spec(const std::string& task, std::size_t length = 6, std::size_t alphabet = 5) {
  return test::task_config(task, length, alphabet);
}

// Row b of a batch as the full sequence x[0..T-1] + y[T-1] (the last target is always an answer token).
std::vector<Index> full_row(const Batch& batch, std::size_t b) {
  const std::size_t T = batch.x.shape(1);
  std::vector<Index> seq(T + 1);
  for (std::size_t t = 0; t < T; ++t) seq[t] = batch.x(b, t);
  seq[T] = batch.y(b, T - 1);
  return seq;
}

IndexArray row_x(const Batch& batch, std::size_t b) {
  const std::size_t T = batch.x.shape(1);
  IndexArray x = IndexArray::from_shape({T});
  for (std::size_t t = 0; t < T; ++t) x(t) = batch.x(b, t);
  return x;
}

// Scored positions of row b must be exactly q >= first_scored, each with y = the next input token.
void check_scored(const Batch& batch, std::size_t b, std::size_t first_scored) {
  const std::size_t T = batch.x.shape(1);
  for (std::size_t q = 0; q < T; ++q) {
    INFO("row " << b << " position " << q);
    if (q < first_scored) {
      CHECK(batch.y(b, q) == -1);
    } else {
      REQUIRE(batch.y(b, q) != -1);
      if (q + 1 < T) CHECK(batch.y(b, q) == batch.x(b, q + 1));
    }
  }
}

bool batches_equal(const Batch& a, const Batch& b) { return a.x == b.x && a.y == b.y; }

}  // namespace

TEST_CASE("data: copy, reverse and sort write the source, '|', then the right answer", "[data]") {
  for (const std::string task : {"copy", "reverse", "sort"}) {
    INFO("task " << task);
    auto source = make_data_source(task_spec(task));
    const std::size_t n = 6;
    REQUIRE(source->seq_len() == 2 * n);
    REQUIRE(source->is_task());
    CHECK(source->vocab().tokens() == std::vector<std::string>{"0", "1", "2", "3", "4", "|"});
    Rng rng(11);
    const Batch batch = source->train_batch(32, rng);
    REQUIRE(batch.x.shape() == std::vector<std::size_t>{32, 2 * n});
    REQUIRE(batch.y.shape() == batch.x.shape());
    for (std::size_t b = 0; b < 32; ++b) {
      const std::string text = source->vocab().decode(full_row(batch, b));
      INFO(text);
      REQUIRE(text.size() == 2 * n + 1);
      const std::string src = text.substr(0, n), answer = text.substr(n + 1);
      CHECK(text[n] == '|');
      CHECK(src.find_first_not_of("01234") == std::string::npos);
      std::string want = src;
      if (task == "reverse") std::reverse(want.begin(), want.end());
      if (task == "sort") std::sort(want.begin(), want.end());
      CHECK(answer == want);
      check_scored(batch, b, n);  // queries n..2n-1 predict the n answer tokens
    }
  }
}

TEST_CASE("data: add writes zero-padded operands and the sum with its digits reversed", "[data]") {
  for (std::size_t d : {1, 3, 5}) {
    config::RunConfig spec = task_spec("add");
    spec.data.digits = d;
    auto source = make_data_source(spec);
    REQUIRE(source->seq_len() == 3 * d + 2);
    CHECK(source->vocab().tokens() ==
          std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "="});
    Rng rng(3);
    const Batch batch = source->train_batch(64, rng);
    bool saw_carry_out = false;
    for (std::size_t b = 0; b < 64; ++b) {
      const std::string text = source->vocab().decode(full_row(batch, b));
      INFO("digits " << d << ": " << text);
      REQUIRE(text.size() == 3 * d + 3);
      CHECK(text[d] == '+');
      CHECK(text[2 * d + 1] == '=');
      const long a = std::stol(text.substr(0, d)), bb = std::stol(text.substr(d + 1, d));
      std::string c = text.substr(2 * d + 2);
      REQUIRE(c.size() == d + 1);
      std::reverse(c.begin(), c.end());  // written least significant digit first
      CHECK(std::stol(c) == a + bb);
      saw_carry_out |= c[0] == '1';
      check_scored(batch, b, 2 * d + 1);
    }
    CHECK(saw_carry_out);  // the (d+1)-th digit is really used
  }
}

TEST_CASE("data: induction repeats the source and scores exactly the second copy", "[data]") {
  const std::size_t n = 7;
  auto source = make_data_source(task_spec("induction", n, 10));
  REQUIRE(source->seq_len() == 2 * n - 1);
  CHECK(source->vocab().size() == 10);  // no separator
  Rng rng(5);
  const Batch batch = source->train_batch(32, rng);
  for (std::size_t b = 0; b < 32; ++b) {
    const std::string text = source->vocab().decode(full_row(batch, b));
    INFO(text);
    REQUIRE(text.size() == 2 * n);
    CHECK(text.substr(n) == text.substr(0, n));
    check_scored(batch, b, n - 1);  // queries n-1..2n-2 predict seq[n..2n-1]
  }
}

TEST_CASE("data: expected attention of copy, reverse and induction points at the token to output", "[data]") {
  for (const std::string task : {"copy", "reverse", "induction"}) {
    INFO("task " << task);
    const std::size_t n = 6;
    auto source = make_data_source(task_spec(task, n, 10));
    const std::size_t T = source->seq_len();
    Rng rng(9);
    const Batch batch = source->train_batch(16, rng);
    for (std::size_t b = 0; b < 16; ++b) {
      const std::vector<long> e = source->expected_attention(row_x(batch, b));
      REQUIRE(e.size() == T);
      for (std::size_t q = 0; q < T; ++q) {
        INFO("row " << b << " query " << q);
        if (batch.y(b, q) == -1) {
          CHECK(e[q] == -1);
          continue;
        }
        REQUIRE(e[q] >= 0);
        CHECK(static_cast<std::size_t>(e[q]) <= q);  // causal: a key the query can see
        CHECK(batch.x(b, static_cast<std::size_t>(e[q])) == batch.y(b, q));
        // the exact positions of the documented pattern
        if (task == "copy") CHECK(e[q] == static_cast<long>(q - n));               // answer k = q-n: key k
        if (task == "reverse") CHECK(e[q] == static_cast<long>(n - 1 - (q - n)));  // key n-1-k
        if (task == "induction") CHECK(e[q] == static_cast<long>(q) - static_cast<long>(n) + 1);
      }
    }
    CHECK_FALSE(source->expected_pattern().empty());
  }
}

TEST_CASE("data: expected attention of sort points at the first occurrence of the value", "[data]") {
  const std::size_t n = 8;
  auto source = make_data_source(task_spec("sort", n, 4));  // small alphabet: values repeat
  Rng rng(2);
  const Batch batch = source->train_batch(32, rng);
  bool saw_repeat = false;
  for (std::size_t b = 0; b < 32; ++b) {
    const std::vector<long> e = source->expected_attention(row_x(batch, b));
    for (std::size_t q = 0; q < 2 * n; ++q) {
      INFO("row " << b << " query " << q);
      if (q < n) {
        CHECK(e[q] == -1);
        continue;
      }
      REQUIRE(e[q] >= 0);
      REQUIRE(e[q] < static_cast<long>(n));
      CHECK(batch.x(b, static_cast<std::size_t>(e[q])) == batch.y(b, q));
      for (long i = 0; i < e[q]; ++i) CHECK(batch.x(b, static_cast<std::size_t>(i)) != batch.y(b, q));
      if (q > n && batch.y(b, q) == batch.y(b, q - 1)) saw_repeat = true;
    }
  }
  CHECK(saw_repeat);
}

TEST_CASE("data: expected attention of add points at a's digit of the same place value", "[data]") {
  const std::size_t d = 4;
  config::RunConfig spec = task_spec("add");
  spec.data.digits = d;
  auto source = make_data_source(spec);
  Rng rng(4);
  const Batch batch = source->train_batch(16, rng);
  for (std::size_t b = 0; b < 16; ++b) {
    const std::string text = source->vocab().decode(full_row(batch, b));
    const long a = std::stol(text.substr(0, d));
    const std::vector<long> e = source->expected_attention(row_x(batch, b));
    INFO(text);
    for (std::size_t q = 0; q < 3 * d + 2; ++q) {
      INFO("query " << q);
      if (q < 2 * d + 1) {
        CHECK(e[q] == -1);
        continue;
      }
      const std::size_t k = q - (2 * d + 1);  // answer digit of place 10^k
      if (k == d) {
        CHECK(e[q] == -1);  // the final carry has no single key
        continue;
      }
      REQUIRE(e[q] >= 0);
      long place = 1;
      for (std::size_t i = 0; i < k; ++i) place *= 10;
      CHECK(batch.x(b, static_cast<std::size_t>(e[q])) == static_cast<Index>((a / place) % 10));
      CHECK(static_cast<std::size_t>(e[q]) < d);  // inside a
    }
  }
}

TEST_CASE("data: the probe of every task is a valid input with an expected attention", "[data]") {
  for (const std::string task : {"copy", "reverse", "sort", "add", "induction"}) {
    INFO("task " << task);
    auto source = make_data_source(task_spec(task));
    const IndexArray probe = source->probe_sequence();
    REQUIRE(probe.shape() == std::vector<std::size_t>{source->seq_len()});
    for (Index id : probe) CHECK((id >= 0 && static_cast<std::size_t>(id) < source->vocab().size()));
    const auto e = source->expected_attention(probe);
    CHECK(std::count_if(e.begin(), e.end(), [](long k) { return k >= 0; }) > 0);
    CHECK((make_data_source(task_spec(task))->probe_sequence() == probe));  // fixed by the seed
    CHECK_THROWS_AS(source->expected_attention(IndexArray::from_shape({source->seq_len() + 1})), std::invalid_argument);
  }
}

TEST_CASE("data: same seed gives the same training batches, another seed other ones", "[data]") {
  auto a = make_data_source(task_spec("reverse"));
  auto b = make_data_source(task_spec("reverse"));
  Rng ra(42), rb(42), rc(43);
  for (int i = 0; i < 3; ++i) {
    const Batch ba = a->train_batch(8, ra), bb = b->train_batch(8, rb);
    CHECK(batches_equal(ba, bb));
    CHECK_FALSE(batches_equal(ba, a->train_batch(8, rc)));
  }
}

TEST_CASE("data: the held-out set is fixed, split in batches, and never drawn for training", "[data]") {
  // 3^6 = 729 distinct sources, 100 held out: without the exclusion about 1 training draw in 7 would be held out
  auto source = make_data_source(task_spec("copy", 6, 3));
  const auto& eval = source->eval_batches(32);
  REQUIRE(eval.size() == 4);  // 32 + 32 + 32 + 4
  CHECK(eval[0].x.shape(0) == 32);
  CHECK(eval[3].x.shape(0) == 4);
  CHECK(&source->eval_batches(32) == &eval);  // built once

  std::set<std::vector<Index>> held_out;
  for (const auto& batch : eval)
    for (std::size_t b = 0; b < batch.x.shape(0); ++b) held_out.insert(full_row(batch, b));
  CHECK(held_out.size() == 100);  // distinct

  // the same rows in other batch sizes, and from another source built with the same seed
  auto twin = make_data_source(task_spec("copy", 6, 3));
  const auto& one = twin->eval_batches(100);
  REQUIRE(one.size() == 1);
  for (std::size_t r = 0; r < 100; ++r) CHECK(full_row(one[0], r) == full_row(eval[r / 32], r % 32));
  config::RunConfig other = task_spec("copy", 6, 3);
  other.training.seed = 8;
  CHECK_FALSE((make_data_source(other)->eval_batches(100)[0].x == one[0].x));

  // 6400 training draws never yield a held-out row
  Rng rng(7);
  std::size_t draws = 0;
  for (int i = 0; i < 100; ++i) {
    const Batch batch = source->train_batch(64, rng);
    for (std::size_t b = 0; b < 64; ++b, ++draws) REQUIRE(held_out.count(full_row(batch, b)) == 0);
  }
  CHECK(draws == 6400);
  CHECK(source->describe().find("never drawn for training") != std::string::npos);
}

TEST_CASE("data: a task with too few distinct sources says its held-out set overlaps training", "[data]") {
  auto source = make_data_source(task_spec("reverse", 2, 2));  // 4 sources, 100 held out
  const std::string d = source->describe();
  INFO(d);
  CHECK(d.find("overlap") != std::string::npos);
  Rng rng(1);
  CHECK(source->train_batch(4, rng).x.shape(0) == 4);  // still draws (no endless rejection)
}

TEST_CASE("data: a model context other than the task's sequence length is refused with the sizes", "[data]") {
  using Catch::Matchers::Contains;
  config::RunConfig spec = task_spec("reverse", 8);
  CHECK(make_data_source(spec)->seq_len() == 16);  // auto
  spec.model.context = 12;
  CHECK_THROWS_AS(make_data_source(spec), config::ConfigError);
  CHECK_THROWS_WITH(make_data_source(spec),
                    "model.context: task 'reverse' with data.length 8 makes sequences of T = 16 tokens, "
                    "longer than model.context 12; set model.context to 16 or auto");
  spec.model.context = 16;
  CHECK(make_data_source(spec)->seq_len() == 16);
  spec.model.context = 32;  // positions 16..31 would never see a token
  CHECK_THROWS_WITH(make_data_source(spec), Contains("T = 16 tokens; model.context 32 is larger") &&
                                                Contains("positions 16..31") &&
                                                Contains("set model.context to 16 or auto"));
  try {
    make_data_source(spec);
  } catch (const config::ConfigError& e) {
    CHECK(e.keys().front() == "model.context");
  }
  spec = task_spec("induction", 8);
  spec.model.context = 14;
  CHECK_THROWS_WITH(make_data_source(spec), Contains("task 'induction' with data.length 8 makes sequences of T = 15"));
  spec = task_spec("add");
  spec.data.digits = 3;
  spec.model.context = 10;
  CHECK_THROWS_WITH(make_data_source(spec), Contains("task 'add' with data.digits 3 makes sequences of T = 11"));
}

TEST_CASE("data: bad task specs are refused naming the key and the valid values", "[data]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(task_spec("revers"), Contains("'revers'") && Contains("copy, reverse, sort"));
  config::RunConfig spec = task_spec("copy", 6, 63);
  CHECK_THROWS_WITH(make_data_source(spec), Contains("data.alphabet") && Contains("[2, 62]") && Contains("63"));
  spec = task_spec("copy", 6, 1);
  CHECK_THROWS_AS(make_data_source(spec), std::invalid_argument);
  spec = task_spec("sort", 0);
  CHECK_THROWS_WITH(make_data_source(spec), Contains("data.length"));
  spec = task_spec("add");
  spec.data.digits = 10;
  CHECK_THROWS_WITH(make_data_source(spec), Contains("data.digits") && Contains("[1, 9]") && Contains("10"));
  spec = task_spec("copy");
  spec.data.eval_size = 0;
  CHECK_THROWS_WITH(make_data_source(spec), Contains("data.eval_size"));
  auto source = make_data_source(task_spec("copy"));
  Rng rng(1);
  CHECK_THROWS_AS(source->train_batch(0, rng), std::invalid_argument);
}

TEST_CASE("data: a 36-symbol alphabet uses 0-9 then a-z", "[data]") {
  auto source = make_data_source(task_spec("copy", 4, 36));
  const auto& tokens = source->vocab().tokens();
  REQUIRE(tokens.size() == 37);
  CHECK(tokens[9] == "9");
  CHECK(tokens[10] == "a");
  CHECK(tokens[35] == "z");
  CHECK(tokens[36] == "|");
}

TEST_CASE("data: exact-match accuracy needs every scored position right", "[data]") {
  IndexArray y = {{-1, -1, 3, 4}, {-1, -1, 1, 2}, {-1, -1, 0, 0}, {-1, -1, -1, -1}};
  IndexArray pred = {{9, 9, 3, 4}, {1, 1, 1, 0}, {0, 0, 5, 6}, {0, 0, 0, 0}};
  const Accuracy acc = accuracy_from_predictions(pred, y);
  CHECK(acc.sequences == 3);  // the row without scored positions does not count
  CHECK(acc.correct_sequences == 1);
  CHECK(acc.tokens == 6);
  CHECK(acc.correct_tokens == 3);
  CHECK(acc.exact() == Approx(1.0 / 3));
  CHECK(acc.token() == Approx(0.5));
  Accuracy total = acc;
  total += acc;
  CHECK(total.exact() == Approx(1.0 / 3));
  CHECK(total.sequences == 6);
  CHECK_THROWS_AS(accuracy_from_predictions(IndexArray::from_shape({4, 3}), y), std::invalid_argument);
}

TEST_CASE("data: accuracy from logits takes the argmax over the vocabulary", "[data]") {
  // [B=2, T=2, V=3]
  Array<float> logits = {{{0.1f, 2.0f, 0.3f}, {5.0f, 1.0f, 1.0f}}, {{0.0f, 0.0f, 1.0f}, {1.0f, 1.0f, 0.0f}}};
  const IndexArray pred = argmax_last(logits);
  CHECK((pred == IndexArray{{1, 0}, {2, 0}}));  // ties: the first maximum
  const IndexArray y = {{1, 0}, {2, 1}};
  const Accuracy acc = accuracy_from_logits(logits, y);
  CHECK(acc.correct_sequences == 1);
  CHECK(acc.correct_tokens == 3);
  CHECK(acc.token() == Approx(0.75));
}

TEST_CASE("data: a perfect predictor of the task reaches exact-match accuracy 1 on the held-out set", "[data]") {
  for (const std::string task : {"copy", "reverse", "sort", "add", "induction"}) {
    INFO("task " << task);
    auto source = make_data_source(task_spec(task));
    Accuracy acc;
    for (const auto& batch : source->eval_batches(16)) {
      // the oracle: y itself where scored, a wrong guess elsewhere (not scored, so it must not matter)
      IndexArray pred = batch.y;
      for (auto& p : pred)
        if (p == -1) p = 0;
      acc += accuracy_from_predictions(pred, batch.y);
    }
    CHECK(acc.sequences == 100);
    CHECK(acc.exact() == 1.0);
  }
}

TEST_CASE("data: a prompt of another shape than the task's sequences is named, a prefix of one is not", "[data]") {
  auto reverse = make_data_source(task_spec("reverse", 8, 10));
  const Vocabulary& v = reverse->vocab();
  CHECK(reverse->prompt_mismatch(v.encode("12345678|87")).empty());
  CHECK(reverse->prompt_mismatch(v.encode("1234")).empty());
  CHECK(reverse->prompt_mismatch(v.encode("1234|")) ==
        "the model was trained on 8 symbols | the same 8 symbols reversed (T = 16); the prompt has '|' at position 4");
  CHECK_THAT(reverse->prompt_mismatch(v.encode("12345678|87654321")), Catch::Contains("the prompt has 17 tokens"));
  auto add = make_data_source(task_spec("add"));
  CHECK(add->prompt_mismatch(add->vocab().encode("123+456=")).empty());
  CHECK_THAT(add->prompt_mismatch(add->vocab().encode("12+3456=")), Catch::Contains("'+' at position 2"));
  // expected keys of a prefix: the answer queries it holds
  IndexArray prefix = IndexArray::from_shape({11});
  const auto ids = v.encode("12345678|87");
  std::copy(ids.begin(), ids.end(), prefix.begin());
  CHECK(reverse->expected_attention(prefix) == std::vector<long>{-1, -1, -1, -1, -1, -1, -1, -1, 7, 6, 5});
}
