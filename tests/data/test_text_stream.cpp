// data::TextStream, the text `sample` prints as its tokens are made: for bpe and unigram vocabularies and random
// token sequences (learned pieces, byte pieces of characters outside the vocabulary, characters cut short, <unk>, <s>
// and </s>), every piece it returns is whole UTF-8, it returns the text as soon as the last token is not a byte piece,
// and the pieces put together are the decoding of the whole sequence.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/data/text_stream.hpp"
#include "tinyformer/tensor/utf8.hpp"

using namespace tf;
using namespace tf::data;

namespace {

// Lines of words from a small lexicon, English letters only: é, ☃ and 𝄞 are outside every vocabulary trained on it.
std::string stream_training_text(std::uint32_t seed) {
  static const char* words[] = {"the",  "cat",  "sat",  "on",    "a",     "mat",  "and",   "dog", "ran",  "far",
                                "away", "from", "home", "while", "birds", "sang", "trees", "old", "town", "said"};
  std::mt19937 rng(seed);
  std::string s;
  for (int line = 0; line < 2000; ++line) {
    for (std::size_t w = 0, n = 3 + rng() % 8; w < n; ++w) s += std::string(w ? " " : "") + words[rng() % 20];
    s += ".\n";
  }
  return s;
}

// A token sequence of the kinds sample can make: encoded text with characters outside the vocabulary (their byte
// pieces), random ids (any piece, <unk>, <s>, </s>, a lone byte) and characters cut short (the first bytes of ☃).
std::vector<Index> stream_draw_ids(const Vocabulary& v, std::mt19937& rng) {
  static const std::vector<std::string> texts = {"the cat", " sat", "é", "☃", "𝄞", "\n", "  ", "ß", "old town.", "x"};
  std::vector<Index> ids;
  for (std::size_t part = 0, parts = 1 + rng() % 10; part < parts; ++part) {
    const std::uint32_t kind = rng() % 4;
    if (kind <= 1) {
      for (Index id : v.encode(texts[rng() % texts.size()])) ids.push_back(id);
    } else if (kind == 2) {
      for (std::size_t i = 0, n = 1 + rng() % 3; i < n; ++i) ids.push_back(static_cast<Index>(rng() % v.size()));
    } else {
      const std::vector<Index> snowman = v.encode("☃");  // ▁ and three byte pieces
      for (std::size_t i = 0, n = 1 + rng() % (snowman.size() - 1); i < n; ++i) ids.push_back(snowman[i]);
    }
  }
  return ids;
}

}  // namespace

TEST_CASE("data: a text stream of bpe and unigram tokens returns whole characters at once and the decoded text in "
          "the end",
          "[data][subword]") {
  test::TempDir dir;
  const std::string path = dir.write("words.txt", stream_training_text(3));
  for (const config::Tokenizer tokenizer : {config::Tokenizer::bpe, config::Tokenizer::unigram}) {
    config::RunConfig spec;
    spec.data.task = config::Task::text;
    spec.data.path = path;
    spec.data.tokenizer = tokenizer;
    spec.data.vocab_size = 300;
    spec.model.context = 16;
    const auto source = make_data_source(spec);
    const Vocabulary& v = source->vocab();
    REQUIRE(v.byte_of(v.encode("☃").back()) == 0x83);  // the snowman falls back to bytes
    std::mt19937 rng(tokenizer == config::Tokenizer::bpe ? 1 : 2);
    std::size_t pieces = 0, waits = 0;
    for (int trial = 0; trial < 300; ++trial) {
      const std::vector<Index> ids = stream_draw_ids(v, rng);
      const std::size_t prompt = 1 + rng() % ids.size();  // the first call has the prompt's tokens
      CAPTURE(config::to_string(tokenizer), trial, ids, prompt);
      TextStream stream(v);
      std::string printed;
      for (std::size_t k = prompt; k <= ids.size(); ++k) {
        const std::vector<Index> so_far(ids.begin(), ids.begin() + static_cast<long>(k));
        const std::string piece = stream.next(so_far, false);
        std::vector<std::string> chars;
        CHECK(utf8_split(piece, chars) == std::string::npos);  // never a character cut at a flush
        printed += piece;
        pieces += !piece.empty();
        if (v.byte_of(so_far.back()) < 0) {
          CHECK(printed == v.decode(so_far));  // nothing held back once the last token is not a byte
        } else {
          waits += printed != v.decode(so_far);
          CHECK(v.decode(so_far).compare(0, printed.size(), printed) == 0);
        }
      }
      printed += stream.next(ids, true);
      CHECK(printed == v.decode(ids));
      CHECK(stream.next(ids, true).empty());  // nothing twice
    }
    CHECK(pieces > 1000);
    CHECK(waits > 20);  // characters cut short came up, and were held back
  }
}

TEST_CASE("data: a text stream of a character vocabulary returns each character as its token comes", "[data]") {
  const Vocabulary v({"a", "b", "é", "☃", "\n"});
  TextStream stream(v);
  CHECK(stream.next({0, 1}) == "ab");
  CHECK(stream.next({0, 1, 3}) == "☃");
  CHECK(stream.next({0, 1, 3, 2}) == "é");
  CHECK(stream.next({0, 1, 3, 2}, true).empty());
}
