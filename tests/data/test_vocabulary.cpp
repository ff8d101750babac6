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
  CHECK_THROWS_WITH(vocab.encode("abxcy€é\n"), Contains("'x' at position 2") && Contains("'y' at position 4") &&
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

TEST_CASE("data: tokens that are their own id in decimal are found like any other, and duplicates among them are "
          "refused",
          "[data]") {
  // "0".."3" are their own ids (found by parsing, kept out of the hash map); "7" at id 4, "x" and "01" are not.
  const Vocabulary vocab({"0", "1", "2", "3", "7", "x", "01"}, Vocabulary::Layout::spaced);
  CHECK(vocab.encode("3 7 01 0 x") == std::vector<Index>{3, 4, 6, 0, 5});
  CHECK(vocab.contains("2"));
  CHECK_FALSE(vocab.contains("4"));            // a number in range whose id holds another token
  CHECK_FALSE(vocab.contains("00"));           // not the decimal form of 0
  CHECK_FALSE(vocab.contains("99999999999"));  // more digits than a 32-bit id has
  CHECK_THROWS_WITH(vocab.id("5"), Contains("'5' is not in the vocabulary"));
  CHECK_THROWS_WITH(vocab.encode("1 4 -1"), Contains("'4' at position 1") && Contains("'-1' at position 2"));
  // A token twice, whichever of the two copies is at its own id.
  CHECK_THROWS_WITH(Vocabulary({"1", "1"}, Vocabulary::Layout::spaced), Contains("'1' appears twice (ids 0 and 1)"));
  CHECK_THROWS_WITH(Vocabulary({"x", "1", "1"}, Vocabulary::Layout::spaced),
                    Contains("'1' appears twice (ids 1 and 2)"));
  CHECK_THROWS_WITH(Vocabulary({"x", "y", "x"}, Vocabulary::Layout::spaced),
                    Contains("'x' appears twice (ids 0 and 2)"));
  CHECK_THROWS_WITH(Vocabulary({"2", "z", "2"}, Vocabulary::Layout::spaced),
                    Contains("'2' appears twice (ids 0 and 2)"));
  // The joined digits of the synthetic tasks are their own ids too.
  const Vocabulary digits({"0", "1", "2", "|"});
  CHECK(digits.encode("2|10") == std::vector<Index>{2, 3, 1, 0});
}

TEST_CASE("data: the numbered vocabulary of pre-tokenized data equals the one built token by token", "[data]") {
  std::vector<std::string> names;
  names.reserve(1234);
  for (int v = 0; v < 1234; ++v) names.push_back(std::to_string(v));
  const Vocabulary built(names, Vocabulary::Layout::spaced);
  const Vocabulary numbered = Vocabulary::numbered(1234);
  CHECK(numbered == built);
  CHECK(numbered.layout() == Vocabulary::Layout::spaced);
  CHECK(numbered.encode("1233 0 17") == std::vector<Index>{1233, 0, 17});
  CHECK(numbered.decode(std::vector<Index>{5, 1000}) == "5 1000");
  CHECK_FALSE(numbered.contains("1234"));
  CHECK(Vocabulary::deserialize(numbered.serialize()) == numbered);
  CHECK(Vocabulary::numbered(0).size() == 0);
}
