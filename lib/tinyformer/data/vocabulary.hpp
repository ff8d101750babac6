#pragma once
// The token vocabulary of a data source: id <-> token string, text <-> ids, and a plain-text form for
// checkpoints. Two ways to write a sequence as text:
//   joined: every token is one character (one Unicode code point, stored as its UTF-8 bytes) and text is
//           the tokens written one after another ("3142|2413"). Used by the synthetic tasks and by text.
//   spaced: tokens are words without whitespace and text is the tokens separated by whitespace
//           ("17 4 250"). Used by pre-tokenized data, whose tokens are named "0".."V-1".
//   sentencepiece: a SentencePiece model (BPE or unigram, data.tokenizer) encodes and decodes; the tokens are its
//           pieces ("▁the", "<0x0A>", "<s>"), ids 0, 1, 2 are <unk>, <s> (BOS), </s> and 3..258 the bytes
//           <0x00>..<0xFF> that characters outside the pieces fall back to (llama2.c's layout). Text data only.
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"
#include "tinyformer/tensor/utf8.hpp"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tf::data {

// A token for an error message: control characters and backslash escaped ("\n", "\t", "\x01", "\\").
std::string display_token(const std::string& token);

class Vocabulary {
 public:
  enum class Layout { joined, spaced, sentencepiece };

  Vocabulary() = default;
  // Throws std::invalid_argument on an empty or duplicate token, on a joined token that is not exactly
  // one UTF-8 character, or on a spaced token containing whitespace.
  explicit Vocabulary(std::vector<std::string> tokens, Layout layout = Layout::joined);
  // The spaced vocabulary "0", "1", .., "V-1" of pre-tokenized data. Equal to Vocabulary({"0", .., "V-1"},
  // Layout::spaced), without the per-token checks that such tokens cannot fail (they took seconds under the
  // sanitizers for millions of ids).
  static Vocabulary numbered(std::size_t V);
  // The vocabulary of a serialized SentencePiece model (ModelProto bytes, as SentencePiece's trainer writes them).
  // Throws std::invalid_argument when SentencePiece cannot load it.
  static Vocabulary from_sentencepiece(std::string model_proto);

  const std::vector<std::string>& tokens() const { return tokens_; }
  std::size_t size() const { return tokens_.size(); }  // V
  Layout layout() const { return layout_; }
  bool contains(const std::string& token) const { return find(token) >= 0; }
  // Throws std::invalid_argument naming the token when it is not in the vocabulary.
  Index id(const std::string& token) const;
  // Throws std::invalid_argument when id is not in [0, V).
  const std::string& token(Index id) const;

  // The serialized SentencePiece model; "" for the other layouts.
  const std::string& sentencepiece_model() const { return model_proto_; }
  // The id of the begin-of-sequence token <s> that starts every document (sentencepiece: 1), or -1 (none).
  Index bos() const { return layout_ == Layout::sentencepiece ? 1 : -1; }
  // The number of bytes of text that token `id` stands for: its UTF-8 bytes (joined); a piece with ▁ counted as
  // the one byte of a space, a byte piece <0xNN> as 1 and <unk>, <s>, </s> as 0 (sentencepiece); the word's bytes
  // (spaced). For bits per byte. Throws std::invalid_argument when id is not in [0, V).
  std::size_t text_bytes(Index id) const;
  // A token as a label for attention maps and the report: display_token of its text, a SentencePiece piece with
  // ▁ shown as ␣ (a visible space) and a byte piece as the byte it stands for ("\n" for <0x0A>).
  std::string label(Index id) const;
  // sentencepiece: the piece's score in the model (BPE: higher merges first); 0 for the other layouts.
  float score(Index id) const;
  // The byte a byte piece <0xNN> stands for (sentencepiece, ids 3..258), or -1 for every other token. Throws
  // std::invalid_argument when id is not in [0, V).
  int byte_of(Index id) const;

  // joined: one id per character; spaced: one id per whitespace-separated word. Throws
  // std::invalid_argument listing every unknown character/word with its position (characters counted
  // from 0 for joined, words counted from 0 for spaced), or the byte offset of invalid UTF-8. sentencepiece: the
  // model's pieces, characters outside them as their bytes (never unknown); no BOS is added.
  std::vector<Index> encode(const std::string& text) const;
  // For an error message: "the vocabulary's 11 characters: 0 1 2 3 4 5 6 7 8 9 |" (at most 100 listed).
  std::string describe_tokens() const;
  // Inverse of encode (spaced: words joined by one space; sentencepiece: SentencePiece's decoding, which drops <s>
  // and the space it adds before the first piece). Throws std::invalid_argument on an id not in [0, V).
  std::string decode(const std::vector<Index>& ids) const;
  std::string decode(const IndexArray& ids) const;  // any shape, read in row-major order

  // Serialized form, one token per line:
  //   line 1:   "tinyformer-vocabulary 1 <joined|spaced> <V>"
  //   lines 2..: token 0, token 1, ... each followed by '\n', with '\' written as "\\", newline as "\n"
  //              and carriage return as "\r" (two characters each); nothing else is escaped.
  // sentencepiece: line 1 "tinyformer-vocabulary 1 sentencepiece <V> <FNV-1a 64 of the model, 16 hex digits>",
  //              line 2 the model (ModelProto bytes) in base64 (RFC 4648, with padding), then '\n'; the pieces are
  //              the model's. The checksum refuses a corrupted model that would still parse.
  std::string serialize() const;
  // Throws std::invalid_argument naming the line on any malformed input.
  static Vocabulary deserialize(const std::string& text);

  friend bool operator==(const Vocabulary& a, const Vocabulary& b) {
    return a.layout_ == b.layout_ && a.tokens_ == b.tokens_ && a.model_proto_ == b.model_proto_;
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
  std::string model_proto_;                                              // sentencepiece: the serialized model
  std::shared_ptr<const sentencepiece::SentencePieceProcessor> pieces_;  // sentencepiece: the loaded model
};

// The layout's word in the serialized header: "joined", "spaced" or "sentencepiece".
const char* layout_name(Vocabulary::Layout layout);

// Bytes to base64 (RFC 4648, padded) and back; from_base64 throws std::invalid_argument on a character outside the
// alphabet or a length that is not a multiple of 4.
std::string to_base64(const std::string& bytes);
std::string from_base64(const std::string& text);

}  // namespace tf::data
