// Character-level text data and the Vocabulary: UTF-8 decoding, the sorted character vocabulary, training
// windows from the first part and fixed consecutive held-out windows from the last part, file errors
// naming the file and sizes, encode errors naming every unknown character, and the serialized form.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "tinyformer/data/data.hpp"
#include "tinyformer/tensor/files.hpp"

using namespace tf;
using namespace tf::data;
using Catch::Matchers::Contains;

namespace {

// n ASCII letters from a fixed LCG: no short window repeats, so a window's place in the text is unique.
std::string text_letters(std::size_t n) {
  std::string s;
  std::uint32_t state = 12345;
  for (std::size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    s += static_cast<char>('a' + (state >> 24) % 26);
  }
  return s;
}

config::RunConfig text_spec(const std::string& path, std::size_t context = 16) {
  config::RunConfig spec;
  spec.data.task = config::Task::text;
  spec.data.path = path;
  spec.model.context = context;
  spec.data.val_fraction = 0.1;
  spec.data.eval_size = 512;
  return spec;
}

std::string window_text(const Vocabulary& vocab, const Batch& batch, std::size_t b) {
  std::vector<Index> ids;
  for (std::size_t t = 0; t < batch.x.shape(1); ++t) ids.push_back(batch.x(b, t));
  ids.push_back(batch.y(b, batch.x.shape(1) - 1));
  return vocab.decode(ids);
}

}  // namespace

TEST_CASE("data: text vocabulary is the sorted distinct characters, decoded as UTF-8", "[data]") {
  test::TempDir dir;
  const std::string text = "héllo wörld — 1€, 𝄞 ok\n";  // 1-, 2-, 3- and 4-byte characters
  std::string body;
  for (int i = 0; i < 20; ++i) body += text;
  config::RunConfig spec = text_spec(dir.write("t.txt", body), 8);
  auto source = make_data_source(spec);
  CHECK_FALSE(source->is_task());
  CHECK(source->seq_len() == 8);
  const auto& tokens = source->vocab().tokens();
  CHECK(tokens ==
        std::vector<std::string>{"\n", " ", ",", "1", "d", "h", "k", "l", "o", "r", "w", "é", "ö", "—", "€", "𝄞"});
  CHECK(source->vocab().decode(source->vocab().encode(body)) == body);
  CHECK(source->vocab().encode("𝄞").size() == 1);
  CHECK(source->expected_pattern().empty());
  const auto e = source->expected_attention(source->probe_sequence());
  CHECK(e == std::vector<long>(8, -1));
}

TEST_CASE("data: text training windows come from the first part, every position scored", "[data]") {
  test::TempDir dir;
  const std::string text = text_letters(1000);
  auto source = make_data_source(text_spec(dir.write("t.txt", text), 16));
  const std::string train = text.substr(0, 900);  // val_fraction 0.1: the last 100 characters are held out
  Rng rng(1);
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    const Batch batch = source->train_batch(8, rng);
    REQUIRE(batch.x.shape() == std::vector<std::size_t>{8, 16});
    for (std::size_t b = 0; b < 8; ++b) {
      const std::string w = window_text(source->vocab(), batch, b);
      INFO(w);
      CHECK(train.find(w) != std::string::npos);
      for (std::size_t t = 0; t < 16; ++t) {
        CHECK(batch.y(b, t) != -1);
        if (t + 1 < 16) CHECK(batch.y(b, t) == batch.x(b, t + 1));
      }
      seen.insert(w);
    }
  }
  CHECK(seen.size() > 100);  // random windows, not one window repeated
  Rng again(1);
  const Batch first = make_data_source(text_spec(dir.path().string() + "/t.txt", 16))->train_batch(8, again);
  Rng again2(1);
  CHECK((first.x == source->train_batch(8, again2).x));
}

TEST_CASE("data: text held-out windows are consecutive windows of the last part", "[data]") {
  test::TempDir dir;
  const std::string text = text_letters(1000);
  const std::string path = dir.write("t.txt", text);
  auto source = make_data_source(text_spec(path, 16));
  const auto& eval = source->eval_batches(4);
  // val = text[900..999]: windows start at 900, 916, ..., 980 (980 + 17 <= 1000): 6 windows
  std::vector<std::string> windows;
  for (const auto& batch : eval)
    for (std::size_t b = 0; b < batch.x.shape(0); ++b) windows.push_back(window_text(source->vocab(), batch, b));
  REQUIRE(windows.size() == 6);
  CHECK(eval.size() == 2);
  for (std::size_t k = 0; k < 6; ++k) CHECK(windows[k] == text.substr(900 + 16 * k, 17));
  CHECK(&source->eval_batches(4) == &eval);
  for (Index y : eval[0].y) CHECK(y != -1);

  const IndexArray probe = source->probe_sequence();
  CHECK(source->vocab().decode(probe) == text.substr(900, 16));

  config::RunConfig capped = text_spec(path, 16);
  capped.data.eval_size = 3;
  CHECK(make_data_source(capped)->eval_batches(8)[0].x.shape(0) == 3);
}

TEST_CASE("data: a missing, empty or directory text file is refused naming it", "[data]") {
  test::TempDir dir;
  const std::string missing = (dir.path() / "nope.txt").string();
  CHECK_THROWS_AS(make_data_source(text_spec(missing)), FileError);  // Python: FileNotFoundError
  CHECK_THROWS_WITH(make_data_source(text_spec(missing)), Contains(missing) && Contains("no such file"));
  const std::string empty = dir.write("empty.txt", "");
  CHECK_THROWS_WITH(make_data_source(text_spec(empty)), Contains(empty) && Contains("empty") && Contains("17"));
  CHECK_THROWS_WITH(make_data_source(text_spec(dir.path().string())), Contains("directory"));
  CHECK_THROWS_WITH(make_data_source(text_spec("")), Contains("data.path"));
}

TEST_CASE("data: invalid UTF-8 in a text file is refused with the byte offset", "[data]") {
  test::TempDir dir;
  const std::string good = text_letters(200);
  struct Case {
    std::string bytes;
    std::size_t offset;
  };
  const std::vector<Case> cases = {
      {"abc\xC3(def", 3},           // 2-byte lead without continuation
      {"ab\xC0\xAF", 2},            // overlong '/'
      {"a\xED\xA0\x80", 1},         // surrogate U+D800
      {"\xF4\x90\x80\x80", 0},      // above U+10FFFF
      {"ok\x80", 2},                // stray continuation byte
      {"h\xC3\xA9llo\xE2\x82", 6},  // truncated at the end (é is 2 bytes)
      {"\xFF", 0},
  };
  for (const auto& c : cases) {
    const std::string path = dir.write("bad.txt", std::string(good).append(c.bytes).append(good));
    INFO(c.offset);
    CHECK_THROWS_AS(make_data_source(text_spec(path)), std::invalid_argument);  // Python: ValueError
    CHECK_THROWS_WITH(make_data_source(text_spec(path)),
                      Contains(path) && Contains("invalid UTF-8 at line 1, column " + std::to_string(201 + c.offset) +
                                                 " (byte offset " + std::to_string(200 + c.offset)));
  }
}

TEST_CASE("data: text shorter than the context needs is refused with the sizes", "[data]") {
  test::TempDir dir;
  const std::string path = dir.write("short.txt", "ten chars!");
  CHECK_THROWS_WITH(make_data_source(text_spec(path, 16)),
                    Contains(path) && Contains("10 characters") && Contains("model.context 16") && Contains("17"));
  // long enough overall, but the held-out 10% is not
  const std::string path2 = dir.write("split.txt", text_letters(60));
  CHECK_THROWS_WITH(make_data_source(text_spec(path2, 16)), Contains(path2) && Contains("54 for training") &&
                                                                Contains("6 for validation") &&
                                                                Contains("17 characters"));
  config::RunConfig spec = text_spec(path2, 16);
  spec.data.val_fraction = 0.5;
  CHECK_NOTHROW(make_data_source(spec));
  spec.data.val_fraction = 1.0;
  CHECK_THROWS_WITH(make_data_source(spec), Contains("data.val_fraction"));
}
