#pragma once
// The token vocabulary of a data source: id <-> token string, text <-> ids, and a plain-text form for
// checkpoints. Two ways to write a sequence as text:
//   joined: every token is one character (one Unicode code point, stored as its UTF-8 bytes) and text is
//           the tokens written one after another ("3142|2413"). Used by the synthetic tasks and by text.
//   spaced: tokens are words without whitespace and text is the tokens separated by whitespace
//           ("17 4 250"). Used by pre-tokenized data, whose tokens are named "0".."V-1".
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"
#include "tinyformer/tensor/utf8.hpp"

namespace tf::data {

// A token for an error message: control characters and backslash escaped ("\n", "\t", "\x01", "\\").
std::string display_token(const std::string& token);

class Vocabulary {
 public:
  enum class Layout { joined, spaced };

  Vocabulary() = default;
  // Throws std::invalid_argument on an empty or duplicate token, on a joined token that is not exactly
  // one UTF-8 character, or on a spaced token containing whitespace.
  explicit Vocabulary(std::vector<std::string> tokens, Layout layout = Layout::joined);
  // The spaced vocabulary "0", "1", .., "V-1" of pre-tokenized data. Equal to Vocabulary({"0", .., "V-1"},
  // Layout::spaced), without the per-token checks that such tokens cannot fail (they took seconds under the
  // sanitizers for millions of ids).
  static Vocabulary numbered(std::size_t V);

  const std::vector<std::string>& tokens() const { return tokens_; }
  std::size_t size() const { return tokens_.size(); }  // V
  Layout layout() const { return layout_; }
  bool contains(const std::string& token) const { return find(token) >= 0; }
  // Throws std::invalid_argument naming the token when it is not in the vocabulary.
  Index id(const std::string& token) const;
  // Throws std::invalid_argument when id is not in [0, V).
  const std::string& token(Index id) const;

  // joined: one id per character; spaced: one id per whitespace-separated word. Throws
  // std::invalid_argument listing every unknown character/word with its position (characters counted
  // from 0 for joined, words counted from 0 for spaced), or the byte offset of invalid UTF-8.
  std::vector<Index> encode(const std::string& text) const;
  // For an error message: "the vocabulary's 11 characters: 0 1 2 3 4 5 6 7 8 9 |" (at most 100 listed).
  std::string describe_tokens() const;
  // Inverse of encode (spaced: words joined by one space). Throws std::invalid_argument on an id not in [0, V).
  std::string decode(const std::vector<Index>& ids) const;
  std::string decode(const IndexArray& ids) const;  // any shape, read in row-major order

  // Serialized form, one token per line:
  //   line 1:   "tinyformer-vocabulary 1 <joined|spaced> <V>"
  //   lines 2..: token 0, token 1, ... each followed by '\n', with '\' written as "\\", newline as "\n"
  //              and carriage return as "\r" (two characters each); nothing else is escaped.
  std::string serialize() const;
  // Throws std::invalid_argument naming the line on any malformed input.
  static Vocabulary deserialize(const std::string& text);

  friend bool operator==(const Vocabulary& a, const Vocabulary& b) {
    return a.layout_ == b.layout_ && a.tokens_ == b.tokens_;
  }
  friend bool operator!=(const Vocabulary& a, const Vocabulary& b) { return !(a == b); }

 private:
  // The id of token, or -1. A token that is its own id written in decimal ("17" at id 17, as in every
  // pre-tokenized vocabulary) is found by parsing it and is not in ids_: a hash map of millions of such
  // strings took seconds to build (fuzz_tokens timed out on a vocabulary of 4 million ids under ASan).
  Index find(const std::string& token) const;
  // The id whose decimal form token is, when tokens_ holds it there; -1 otherwise.
  Index numbered_id(const std::string& token) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, Index> ids_;  // the tokens that are not their own id in decimal
  Layout layout_ = Layout::joined;
};

}  // namespace tf::data
