// The vocabulary: encoding with errors that name each character, the spaced layout, and its serialization.
#include <catch2/catch.hpp>

#include "tinyformer/data/vocabulary.hpp"

using namespace tf;
using namespace tf::data;
using Catch::Contains;

TEST_CASE("data: encode names every character not in the vocabulary with its position", "[data]") {
  const Vocabulary vocab({"a", "b", "c", "é"});
  CHECK(vocab.encode("abcé") == std::vector<Index>{0, 1, 2, 3});
  CHECK(vocab.id("c") == 2);
  CHECK(vocab.token(3) == "é");
  CHECK_THROWS_WITH(vocab.encode("abxcy€é\n"),
                    Contains("'x' at position 2") && Contains("'y' at position 4") &&
                        Contains("'€' at position 5") && Contains("'\\n' at position 7"));
  CHECK_THROWS_WITH(vocab.encode("a\xC3"), Contains("invalid UTF-8 at byte offset 1"));
  CHECK_THROWS_WITH(vocab.id("z"), Contains("'z'"));
  CHECK_THROWS_AS(vocab.token(4), std::invalid_argument);
  CHECK_THROWS_AS(vocab.decode(std::vector<Index>{0, -1}), std::invalid_argument);
  CHECK_THROWS_AS(Vocabulary({"a", "a"}), std::invalid_argument);
  CHECK_THROWS_AS(Vocabulary({"ab"}), std::invalid_argument);  // joined tokens are single characters
  CHECK_THROWS_AS(Vocabulary({""}), std::invalid_argument);
}

TEST_CASE("data: a spaced vocabulary encodes and decodes whitespace-separated words", "[data]") {
  const Vocabulary vocab({"0", "1", "2", "10"}, Vocabulary::Layout::spaced);
  CHECK(vocab.encode(" 10 2\t0\n1 ") == std::vector<Index>{3, 2, 0, 1});
  CHECK(vocab.decode(std::vector<Index>{3, 2, 0}) == "10 2 0");
  CHECK_THROWS_WITH(vocab.encode("1 11 2 x"), Contains("'11' at position 1") && Contains("'x' at position 3"));
  CHECK_THROWS_AS(Vocabulary({"a b"}, Vocabulary::Layout::spaced), std::invalid_argument);
}

TEST_CASE("data: a vocabulary survives serialize and deserialize, escapes included", "[data]") {
  const Vocabulary joined({"\n", "\\", "\r", " ", "a", "é", "|", "n", "𝄞"});
  const std::string text = joined.serialize();
  CHECK(text.rfind("tinyformer-vocabulary 1 joined 9\n\\n\n\\\\\n\\r\n \na\n", 0) == 0);
  CHECK(Vocabulary::deserialize(text) == joined);
  const Vocabulary spaced({"0", "1", "17", "a\\n"}, Vocabulary::Layout::spaced);
  const Vocabulary back = Vocabulary::deserialize(spaced.serialize());
  CHECK(back == spaced);
  CHECK(back.layout() == Vocabulary::Layout::spaced);
  CHECK(back.token(3) == "a\\n");
  CHECK(Vocabulary::deserialize(Vocabulary().serialize()).size() == 0);
}

TEST_CASE("data: a malformed serialized vocabulary is refused naming the line", "[data]") {
  CHECK_THROWS_WITH(Vocabulary::deserialize(""), Contains("header"));
  CHECK_THROWS_WITH(Vocabulary::deserialize("tinyformer-vocabulary 2 joined 1\na\n"), Contains("line 1"));
  CHECK_THROWS_WITH(Vocabulary::deserialize("tinyformer-vocabulary 1 joined 2\na\n"),
                    Contains("2 tokens") && Contains("1 lines"));
  CHECK_THROWS_WITH(Vocabulary::deserialize("tinyformer-vocabulary 1 joined 2\na\n\\t\n"),
                    Contains("line 3") && Contains("escape"));
  CHECK_THROWS_WITH(Vocabulary::deserialize("tinyformer-vocabulary 1 joined 2\na\na\n"), Contains("twice"));
  CHECK_THROWS_WITH(Vocabulary::deserialize("tinyformer-vocabulary 1 joined 1\na"), Contains("newline"));
}
