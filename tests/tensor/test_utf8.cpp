// UTF-8: strict splitting into characters, and the position of a bad byte for messages.
#include <catch2/catch.hpp>

#include "tinyformer/tensor/utf8.hpp"

using namespace tf;

TEST_CASE("tensor: utf8_split accepts every valid length and stops at the first invalid byte", "[data]") {
  std::vector<std::string> chars;
  CHECK(utf8_split("a\xC3\xA9\xE2\x82\xAC\xF0\x9D\x84\x9E", chars) == std::string::npos);
  CHECK(chars == std::vector<std::string>{"a", "é", "€", "𝄞"});
  CHECK(utf8_split("\xEF\xBF\xBF\xF4\x8F\xBF\xBF", chars) == std::string::npos);  // U+FFFF, U+10FFFF
  CHECK(utf8_split("ab\xE0\x9F\xBF", chars) == 2);                                // overlong 3-byte
  CHECK(chars == std::vector<std::string>{"a", "b"});
  CHECK(utf8_split("\xF0\x8F\xBF\xBF", chars) == 0);  // overlong 4-byte
  CHECK(utf8_split("\xC3\xA9\xC3\xC3", chars) == 2);
}

TEST_CASE("tensor: byte_position_str counts lines and columns from 1 and names the byte", "[tensor]") {
  const std::string text = "ab\ncd\xff"
                           "e";
  CHECK(byte_position_str(text, 5) == "line 2, column 3 (byte offset 5, byte 0xff)");
  CHECK(byte_position_str(text, 0) == "line 1, column 1 (byte offset 0, byte 0x61)");
}
