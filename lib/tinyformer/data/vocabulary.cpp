#include "tinyformer/data/vocabulary.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include "tinyformer/tensor/hash.hpp"

namespace tf::data {

std::string display_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\\')
      out += "\\\\";
    else if (u < 0x20 || u == 0x7F)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

namespace {

bool has_whitespace(const std::string& s) {
  for (char c : s)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return true;
  return false;
}

constexpr const char* kSpaceMark = "\xe2\x96\x81";  // U+2581, SentencePiece's mark for a space

// SentencePiece's byte piece "<0x0A>" -> 0x0A; -1 for any other piece.
int byte_of_piece(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  int value = 0;
  for (std::size_t i = 3; i < 5; ++i) {
    const char c = piece[i];
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// `piece` with every U+2581 replaced by `space`.
std::string replace_space_mark(const std::string& piece, const std::string& space) {
  std::string out;
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, 3, kSpaceMark) == 0) {
      out += space;
      i += 3;
    } else {
      out += piece[i++];
    }
  }
  return out;
}

// "'x' at position 3, 'y' at position 7" for at most 20 entries, then "and N more".
std::string list_unknown(const std::vector<std::pair<std::string, std::size_t>>& unknown) {
  constexpr std::size_t max_listed = 20;
  std::string out;
  for (std::size_t i = 0; i < unknown.size() && i < max_listed; ++i) {
    if (i) out += ", ";
    out += fmt::format("'{}' at position {}", display_token(unknown[i].first), unknown[i].second);
  }
  if (unknown.size() > max_listed) out += fmt::format(", and {} more", unknown.size() - max_listed);
  return out;
}

}  // namespace

const char* layout_name(Vocabulary::Layout layout) {
  switch (layout) {
    case Vocabulary::Layout::joined:
      return "joined";
    case Vocabulary::Layout::spaced:
      return "spaced";
    default:
      return "sentencepiece";
  }
}

Vocabulary::Vocabulary(std::vector<std::string> tokens, Layout layout) : tokens_(std::move(tokens)), layout_(layout) {
  if (tokens_.size() > static_cast<std::size_t>(std::numeric_limits<Index>::max()))
    throw std::invalid_argument(fmt::format("Vocabulary: {} tokens do not fit the 32-bit token id", tokens_.size()));
  std::vector<std::string> chars;
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const std::string& t = tokens_[i];
    if (t.empty()) throw std::invalid_argument(fmt::format("Vocabulary: token {} is empty", i));
    if (layout_ == Layout::joined) {
      if (utf8_split(t, chars) != std::string::npos || chars.size() != 1)
        throw std::invalid_argument(
            fmt::format("Vocabulary: token {} ('{}') must be exactly one UTF-8 character in a joined vocabulary", i,
                        display_token(t)));
    } else if (has_whitespace(t)) {
      throw std::invalid_argument(fmt::format(
          "Vocabulary: token {} ('{}') contains whitespace, not allowed in a spaced vocabulary", i, display_token(t)));
    }
    if (numbered_id(t) == static_cast<Index>(i)) continue;
    const Index other = find(t);  // a token numbered elsewhere, or an earlier one in ids_
    if (other >= 0 || !ids_.emplace(t, static_cast<Index>(i)).second)
      throw std::invalid_argument(fmt::format("Vocabulary: token '{}' appears twice (ids {} and {})", display_token(t),
                                              std::min<std::size_t>(std::size_t(other), i),
                                              std::max<std::size_t>(std::size_t(other), i)));
  }
}

Vocabulary Vocabulary::numbered(std::size_t V) {
  if (V > static_cast<std::size_t>(std::numeric_limits<Index>::max()))
    throw std::invalid_argument(fmt::format("Vocabulary: {} tokens do not fit the 32-bit token id", V));
  Vocabulary vocab;
  vocab.layout_ = Layout::spaced;
  vocab.tokens_.resize(V);
  for (std::size_t v = 0; v < V; ++v) vocab.tokens_[v] = std::to_string(v);
  return vocab;
}

Vocabulary Vocabulary::from_sentencepiece(std::string model_proto) {
  auto processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(model_proto);
  if (!status.ok())
    throw std::invalid_argument(
        fmt::format("the SentencePiece model ({} bytes) cannot be loaded: {}", model_proto.size(), status.ToString()));
  const int V = processor->GetPieceSize();
  // llama2.c's layout (vocabulary.hpp): <unk>, <s>, </s>, then the 256 byte pieces
  if (V < 259 || !processor->IsUnknown(0) || processor->IdToPiece(1) != "<s>" || processor->IdToPiece(2) != "</s>" ||
      byte_of_piece(processor->IdToPiece(3)) != 0 || byte_of_piece(processor->IdToPiece(258)) != 255)
    throw std::invalid_argument(
        fmt::format("the SentencePiece model ({} pieces) does not have <unk>, <s>, </s> at ids 0, "
                    "1, 2 and the byte pieces <0x00>..<0xFF> at ids 3..258",
                    V));
  Vocabulary vocab;
  vocab.layout_ = Layout::sentencepiece;
  vocab.tokens_.reserve(static_cast<std::size_t>(V));
  for (int i = 0; i < V; ++i) {
    vocab.tokens_.push_back(processor->IdToPiece(i));
    if (!vocab.ids_.emplace(vocab.tokens_.back(), i).second)
      throw std::invalid_argument(
          fmt::format("the SentencePiece model has the piece '{}' twice", display_token(vocab.tokens_.back())));
  }
  vocab.model_proto_ = std::move(model_proto);
  vocab.pieces_ = std::move(processor);
  return vocab;
}

std::size_t Vocabulary::text_bytes(Index id) const {
  const std::string& t = token(id);
  if (layout_ != Layout::sentencepiece) return t.size();
  if (byte_of_piece(t) >= 0 || id < 3) return id < 3 ? 0 : 1;
  return replace_space_mark(t, " ").size();
}

std::string Vocabulary::label(Index id) const {
  const std::string& t = token(id);
  if (layout_ != Layout::sentencepiece) return display_token(t);
  const int byte = byte_of_piece(t);
  if (byte >= 0 && byte < 0x80) return display_token(std::string(1, static_cast<char>(byte)));
  if (byte >= 0) return t;  // a byte of a longer UTF-8 character: not text on its own
  return display_token(replace_space_mark(t, "\xe2\x90\xa3"));  // U+2423 OPEN BOX
}

float Vocabulary::score(Index id) const {
  token(id);  // throws when id is not in [0, V)
  return layout_ == Layout::sentencepiece ? pieces_->GetScore(static_cast<int>(id)) : 0.0f;
}

int Vocabulary::byte_of(Index id) const {
  const std::string& t = token(id);
  return layout_ == Layout::sentencepiece ? byte_of_piece(t) : -1;
}

Index Vocabulary::numbered_id(const std::string& token) const {
  constexpr std::size_t max_digits = 10;  // Index is 32-bit
  if (token.empty() || token.size() > max_digits || (token[0] == '0' && token.size() > 1)) return -1;
  std::size_t n = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  return n < tokens_.size() && tokens_[n] == token ? static_cast<Index>(n) : -1;
}

Index Vocabulary::find(const std::string& token) const {
  const Index n = numbered_id(token);
  if (n >= 0) return n;
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

Index Vocabulary::id(const std::string& token) const {
  const Index i = find(token);
  if (i < 0)
    throw std::invalid_argument(
        fmt::format("Vocabulary: token '{}' is not in the vocabulary ({} tokens)", display_token(token), size()));
  return i;
}

const std::string& Vocabulary::token(Index id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size())
    throw std::invalid_argument(fmt::format("Vocabulary: id {} is not in [0, {})", id, tokens_.size()));
  return tokens_[static_cast<std::size_t>(id)];
}

std::vector<Index> Vocabulary::encode(const std::string& text) const {
  if (layout_ == Layout::sentencepiece) {
    std::vector<std::string> chars;
    const std::size_t bad = utf8_split(text, chars);
    if (bad != std::string::npos) throw std::invalid_argument(fmt::format("invalid UTF-8 at byte offset {}", bad));
    std::vector<int> ids;
    const auto status = pieces_->Encode(text, &ids);
    if (!status.ok()) throw std::invalid_argument(fmt::format("SentencePiece cannot encode: {}", status.ToString()));
    return std::vector<Index>(ids.begin(), ids.end());
  }
  std::vector<std::string> pieces;
  if (layout_ == Layout::joined) {
    const std::size_t bad = utf8_split(text, pieces);
    if (bad != std::string::npos) throw std::invalid_argument(fmt::format("invalid UTF-8 at byte offset {}", bad));
  } else {
    std::istringstream words(text);
    for (std::string w; words >> w;) pieces.push_back(w);
  }
  std::vector<Index> ids;
  ids.reserve(pieces.size());
  std::vector<std::pair<std::string, std::size_t>> unknown;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Index id = find(pieces[i]);
    if (id < 0)
      unknown.emplace_back(pieces[i], i);
    else
      ids.push_back(id);
  }
  if (!unknown.empty())
    throw std::invalid_argument(fmt::format("not in the vocabulary: {} ({} counted from 0); {}", list_unknown(unknown),
                                            layout_ == Layout::joined ? "characters" : "words", describe_tokens()));
  return ids;
}

std::string Vocabulary::describe_tokens() const {
  constexpr std::size_t max_listed = 100;
  if (layout_ == Layout::sentencepiece) return fmt::format("the vocabulary is {} SentencePiece pieces", tokens_.size());
  if (layout_ == Layout::spaced)
    return fmt::format("the vocabulary is the {} words {} .. {}", tokens_.size(),
                       tokens_.empty() ? "" : tokens_.front(), tokens_.empty() ? "" : tokens_.back());
  std::string out = fmt::format("the vocabulary's {} characters: ", tokens_.size());
  for (std::size_t i = 0; i < tokens_.size() && i < max_listed; ++i) out += (i ? " " : "") + display_token(tokens_[i]);
  if (tokens_.size() > max_listed) out += " ...";
  return out;
}

std::string Vocabulary::decode(const std::vector<Index>& ids) const {
  if (layout_ == Layout::sentencepiece) {
    std::vector<int> pieces;
    pieces.reserve(ids.size());
    for (Index id : ids) {
      token(id);  // throws when id is not in [0, V)
      pieces.push_back(static_cast<int>(id));
    }
    std::string out;
    const auto status = pieces_->Decode(pieces, &out);
    if (!status.ok()) throw std::invalid_argument(fmt::format("SentencePiece cannot decode: {}", status.ToString()));
    return out;
  }
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (layout_ == Layout::spaced && i) out += ' ';
    out += token(ids[i]);
  }
  return out;
}

std::string Vocabulary::decode(const IndexArray& ids) const {
  return decode(std::vector<Index>(ids.begin(), ids.end()));
}

std::string Vocabulary::serialize() const {
  std::string out = fmt::format("tinyformer-vocabulary 1 {} {}\n", layout_name(layout_), tokens_.size());
  if (layout_ == Layout::sentencepiece)
    return fmt::format("tinyformer-vocabulary 1 sentencepiece {} {}\n{}\n", tokens_.size(),
                       hex64(fnv1a(model_proto_.data(), model_proto_.size())), to_base64(model_proto_));
  for (const auto& t : tokens_) {
    for (char c : t) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '\n')
        out += "\\n";
      else if (c == '\r')
        out += "\\r";
      else
        out += c;
    }
    out += '\n';
  }
  return out;
}

Vocabulary Vocabulary::deserialize(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos)
      throw std::invalid_argument(
          fmt::format("Vocabulary::deserialize: line {} does not end with a newline", lines.size() + 1));
    lines.emplace_back(text, start, end - start);
    start = end + 1;
  }
  if (lines.empty()) throw std::invalid_argument("Vocabulary::deserialize: empty text, expected a header line");
  std::istringstream header(lines[0]);
  std::string magic, layout_word, extra, checksum;
  long version = 0;
  long long count = -1;
  header >> magic >> version >> layout_word >> count;
  if (layout_word == "sentencepiece") header >> checksum;
  if (header.fail() || (header >> extra) || magic != "tinyformer-vocabulary" || version != 1 ||
      (layout_word != "joined" && layout_word != "spaced" && layout_word != "sentencepiece") || count < 0)
    throw std::invalid_argument(
        fmt::format("Vocabulary::deserialize: line 1 is '{}', expected 'tinyformer-vocabulary 1 "
                    "<joined|spaced|sentencepiece> <count>'",
                    display_token(lines[0])));
  if (layout_word == "sentencepiece") {
    if (lines.size() != 2)
      throw std::invalid_argument(fmt::format(
          "Vocabulary::deserialize: a sentencepiece vocabulary is 2 lines (header, model in base64), found {}",
          lines.size()));
    Vocabulary vocab;
    try {
      std::string model = from_base64(lines[1]);
      const std::string actual = hex64(fnv1a(model.data(), model.size()));
      if (actual != checksum)
        throw std::invalid_argument(fmt::format("the model's checksum is {}, line 1 says '{}': the model is corrupt",
                                                actual, display_token(checksum)));
      vocab = from_sentencepiece(std::move(model));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("Vocabulary::deserialize: line 2: ") + e.what());
    }
    if (vocab.size() != static_cast<std::size_t>(count))
      throw std::invalid_argument(fmt::format(
          "Vocabulary::deserialize: header announces {} tokens, the SentencePiece model has {}", count, vocab.size()));
    return vocab;
  }
  if (lines.size() - 1 != static_cast<std::size_t>(count))
    throw std::invalid_argument(
        fmt::format("Vocabulary::deserialize: header announces {} tokens, found {} lines", count, lines.size() - 1));
  std::vector<std::string> tokens;
  tokens.reserve(lines.size() - 1);
  for (std::size_t l = 1; l < lines.size(); ++l) {
    std::string t;
    const std::string& line = lines[l];
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] != '\\') {
        t += line[i];
        continue;
      }
      const char next = i + 1 < line.size() ? line[i + 1] : '\0';
      if (next == '\\')
        t += '\\';
      else if (next == 'n')
        t += '\n';
      else if (next == 'r')
        t += '\r';
      else
        throw std::invalid_argument(
            fmt::format("Vocabulary::deserialize: line {} has an invalid escape at column {} (valid: \\\\, \\n, \\r)",
                        l + 1, i + 1));
      ++i;
    }
    tokens.push_back(std::move(t));
  }
  try {
    return Vocabulary(std::move(tokens), layout_word == "joined" ? Layout::joined : Layout::spaced);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("Vocabulary::deserialize: ") + e.what());
  }
}

namespace {
constexpr const char* kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string to_base64(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string from_base64(const std::string& text) {
  if (text.size() % 4 != 0)
    throw std::invalid_argument(fmt::format("base64 text of {} characters, not a multiple of 4", text.size()));
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    std::size_t pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const char* at = c ? std::strchr(kBase64, c) : nullptr;
      const bool padding = c == '=' && i + 4 == text.size() && k >= 2 && (k == 3 || text[i + 3] == '=');
      if (!at && !padding)
        throw std::invalid_argument(
            fmt::format("'{}' at column {} is not base64", display_token(std::string(1, c)), i + k + 1));
      if (padding) ++pad;
      v = (v << 6) | (at ? static_cast<std::uint32_t>(at - kBase64) : 0u);
    }
    for (std::size_t k = 0; k < 3 - pad; ++k) out += static_cast<char>((v >> (16 - 8 * k)) & 0xFF);
  }
  return out;
}

}  // namespace tf::data
