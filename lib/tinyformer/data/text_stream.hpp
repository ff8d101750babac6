#pragma once
// The text of a growing token sequence, a piece at a time, so that `sample` prints its tokens as they are made.
// A SentencePiece vocabulary decodes a token by what precedes it: the space before the first piece is dropped, and a
// character outside the pieces comes as 2 to 4 byte pieces (<0xE2> <0x98> <0x83>), each invalid on its own. So the new
// text is the decoding of a short window of tokens ending at the new token, less the decoding of the same window
// without it; trailing byte pieces that begin a UTF-8 character not yet complete wait for the rest. Every piece
// returned is whole UTF-8 characters, and the pieces put together are the decoding of the whole sequence.
#include <cstddef>
#include <string>
#include <vector>

#include "tinyformer/data/vocabulary.hpp"

namespace tf::data {

class TextStream {
 public:
  explicit TextStream(const Vocabulary& vocab) : vocab_(vocab) {}

  // ids: the whole sequence so far, each call's a continuation of the last's. Returns the text to print now: ""
  // while a character is incomplete; with last, everything not yet returned (an incomplete character as
  // Vocabulary::decode shows it). Throws std::invalid_argument on an id not in [0, V).
  std::string next(const std::vector<Index>& ids, bool last = false);

 private:
  // The number of tokens at the end of ids that are byte pieces of a UTF-8 character still missing its last bytes.
  std::size_t incomplete_tail(const std::vector<Index>& ids) const;

  static constexpr std::size_t kOverlap = 8;  // tokens decoded before the new ones (a character is at most 4 bytes)
  const Vocabulary& vocab_;
  std::size_t returned_ = 0;  // ids[0, returned_) have been returned as text
};

}  // namespace tf::data
