// Subword text data (data.tokenizer bpe and unigram, SentencePiece): llama2.c's reserved ids, deterministic
// training on the training part only, documents starting with <s>, byte fallback, the serialized form and its
// refusals, the text bytes behind bits per byte, and a vocab_size the text cannot support refused at the key.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <cstdint>
#include <random>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "tinyformer/data/data.hpp"

using namespace tf;
using namespace tf::data;
using Catch::Matchers::Contains;

namespace {

// `docs` documents of random lines of words from a small lexicon, separated by lines "%".
std::string fortunes_like(std::size_t docs, std::uint32_t seed) {
  static const char* words[] = {"the", "cat",   "sat",  "on",    "a",     "mat",   "and",  "dog",   "ran",
                                "far", "away",  "from", "home",  "while", "birds", "sang", "in",    "trees",
                                "of",  "green", "old",  "quiet", "town",  "Tom",   "said", "hello", "42"};
  std::mt19937 rng(seed);
  std::string s;
  for (std::size_t d = 0; d < docs; ++d) {
    const std::size_t lines = 1 + rng() % 3;
    for (std::size_t l = 0; l < lines; ++l) {
      const std::size_t n = 3 + rng() % 8;
      for (std::size_t w = 0; w < n; ++w) s += std::string(w ? " " : "") + words[rng() % std::size(words)];
      s += ".\n";
    }
    s += "%\n";
  }
  return s;
}

config::RunConfig subword_spec(const std::string& path, config::Tokenizer tokenizer, std::size_t vocab_size) {
  config::RunConfig spec;
  spec.data.task = config::Task::text;
  spec.data.path = path;
  spec.data.tokenizer = tokenizer;
  spec.data.vocab_size = vocab_size;
  spec.data.documents = "%";
  spec.model.context = 16;
  return spec;
}

}  // namespace

TEST_CASE("data: bpe and unigram text has llama2.c's reserved ids, data.vocab_size pieces and is deterministic",
          "[data][subword]") {
  test::TempDir dir;
  const std::string path = dir.write("f.txt", fortunes_like(600, 7));
  for (auto tokenizer : {config::Tokenizer::bpe, config::Tokenizer::unigram}) {
    CAPTURE(config::to_string(tokenizer));
    const auto a = make_data_source(subword_spec(path, tokenizer, 320));
    const auto b = make_data_source(subword_spec(path, tokenizer, 320));
    const Vocabulary& v = a->vocab();
    CHECK(v.layout() == Vocabulary::Layout::sentencepiece);
    CHECK(v.size() == 320);
    CHECK(v.token(0) == "<unk>");
    CHECK(v.token(1) == "<s>");
    CHECK(v.token(2) == "</s>");
    CHECK(v.bos() == 1);
    for (int byte = 0; byte < 256; ++byte) CHECK(v.token(3 + byte) == fmt::format("<0x{:02X}>", byte));
    CHECK(v.serialize() == b->vocab().serialize());  // same text, same seed: the same model
    CHECK(v.contains("\xe2\x96\x81the"));            // a learned piece: a space and a word
    // the first held-out window starts a document or continues one; every document starts with <s>
    const IndexArray probe = a->probe_sequence();
    CHECK(probe(0) == 1);  // the held-out part is whole documents
    Rng rng(3);
    Rng rng2(3);
    const Batch x = a->train_batch(4, rng), y = b->train_batch(4, rng2);
    CHECK(x.x == y.x);
  }
}

TEST_CASE("data: a SentencePiece vocabulary decodes what it encodes, and characters outside it fall back to bytes",
          "[data][subword]") {
  test::TempDir dir;
  const auto source =
      make_data_source(subword_spec(dir.write("f.txt", fortunes_like(400, 11)), config::Tokenizer::bpe, 300));
  const Vocabulary& v = source->vocab();
  std::mt19937 rng(5);
  const std::vector<std::string> pieces = {"the", " ", "cat", "é", "☃", "\n", "  ", "Tom", "9", "\t", "𝄞", "x"};
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    const std::size_t n = 1 + rng() % 12;
    for (std::size_t i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    CAPTURE(text);
    const std::vector<Index> ids = v.encode(text);
    CHECK(v.decode(ids) == text);
    std::size_t bytes = 0;
    for (Index id : ids) {
      CHECK(id != 0);  // never <unk>: byte fallback
      bytes += v.text_bytes(id);
    }
    CHECK(bytes == text.size() + 1);  // and the space SentencePiece puts before the text
  }
  // the snowman is not in the training text: its three UTF-8 bytes
  CHECK(v.encode("\xe2\x98\x83").back() == 3 + 0x83);
  Index word = 259;  // the first learned piece that starts with ▁ and goes on
  while (v.token(word).rfind("\xe2\x96\x81", 0) != 0 || v.token(word).size() == 3) ++word;
  CHECK(v.label(word) == "\xe2\x90\xa3" + v.token(word).substr(3));  // ▁ shown as ␣
  CHECK(v.label(3 + '\n') == "\\n");
  const Vocabulary back = Vocabulary::deserialize(v.serialize());
  CHECK(back == v);
  CHECK(back.encode("the old cat") == v.encode("the old cat"));
}

TEST_CASE("data: a corrupted serialized SentencePiece vocabulary is refused, whatever byte changes",
          "[data][subword]") {
  test::TempDir dir;
  const auto source =
      make_data_source(subword_spec(dir.write("f.txt", fortunes_like(300, 2)), config::Tokenizer::bpe, 290));
  const std::string good = source->vocab().serialize();
  std::mt19937 rng(9);
  int refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = good;
    const std::size_t at = rng() % bad.size();
    const char was = bad[at];
    bad[at] = static_cast<char>(rng() % 256);
    if (bad[at] == was) continue;
    CAPTURE(at, static_cast<int>(was), static_cast<int>(bad[at]));
    CHECK_THROWS_AS(Vocabulary::deserialize(bad), std::invalid_argument);
    ++refused;
  }
  CHECK(refused > 250);
  CHECK_THROWS_WITH(Vocabulary::deserialize(good.substr(0, good.size() / 2) + "\n"), Contains("line 2"));
}

TEST_CASE("data: a data.vocab_size the text cannot support is refused at the key, naming the largest that works",
          "[data][subword]") {
  test::TempDir dir;
  for (std::uint32_t seed : {1u, 2u}) {
    const std::string path = dir.write(fmt::format("f{}.txt", seed), fortunes_like(40 + 40 * seed, seed));
    for (auto tokenizer : {config::Tokenizer::bpe, config::Tokenizer::unigram}) {
      CAPTURE(seed, config::to_string(tokenizer));
      std::string message;
      try {
        make_data_source(subword_spec(path, tokenizer, 5000));
      } catch (const config::ConfigError& e) {
        message = e.what();
      }
      CHECK_THAT(message, Contains("data.vocab_size") && Contains("the largest that works is"));
      std::smatch m;
      REQUIRE(std::regex_search(message, m, std::regex("the largest that works is ([0-9]+)")));
      const std::size_t largest = std::stoul(m[1].str());
      CHECK(make_data_source(subword_spec(path, tokenizer, largest))->vocab().size() == largest);
      CHECK_THROWS_WITH(make_data_source(subword_spec(path, tokenizer, largest + 1)),
                        Contains(fmt::format("the largest that works is {}", largest)));  // and no larger one
    }
  }
  std::string message;
  try {
    make_data_source(
        subword_spec(dir.write("g.txt", fortunes_like(50, 3) + "ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏ\n"), config::Tokenizer::bpe, 260));
  } catch (const config::ConfigError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Contains("data.vocab_size") && Contains("need at least"));
}

TEST_CASE("data: bpe and unigram learn from lines too long for SentencePiece in one piece, given in parts",
          "[data][subword]") {
  // One line of 40000 repeats of a character crashed SentencePiece 0.1.97's BPE trainer (SIGSEGV); a line of words
  // over 65536 bytes was skipped, and with it every piece it held.
  test::TempDir dir;
  const std::string text = fortunes_like(60, 4);
  std::string one_line;
  for (const char c : text) one_line += c == '\n' ? ' ' : c;
  while (one_line.size() < 70000) one_line += one_line;
  const std::string path = dir.write("long.txt", std::string(40000, 'a') + "\n" + one_line + "\n");
  for (auto tokenizer : {config::Tokenizer::bpe, config::Tokenizer::unigram}) {
    CAPTURE(config::to_string(tokenizer));
    config::RunConfig spec = subword_spec(path, tokenizer, 300);
    spec.data.documents = "";
    const auto source = make_data_source(spec);
    CHECK(source->vocab().size() == 300);
    CHECK(source->vocab().encode("the cat sat").size() < 11);  // pieces of words: learned from the line of words
  }
}

TEST_CASE("data: a tokenizer other than char needs text, and model.vocab_size must be data.vocab_size or auto",
          "[data][subword]") {
  config::RunConfig spec;
  spec.data.tokenizer = config::Tokenizer::bpe;
  CHECK_THROWS_WITH(config::validate(spec), Contains("data.tokenizer"));
  test::TempDir dir;
  spec = subword_spec(dir.write("f.txt", fortunes_like(100, 1)), config::Tokenizer::bpe, 300);
  spec.model.vocab_size = 512;
  CHECK_THROWS_WITH(config::validate(spec), Contains("model.vocab_size") && Contains("300"));
}
