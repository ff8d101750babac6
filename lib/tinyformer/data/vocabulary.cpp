#include "tinyformer/data/vocabulary.hpp"

#include <algorithm>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

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

const char* layout_name(Vocabulary::Layout layout) {
  return layout == Vocabulary::Layout::joined ? "joined" : "spaced";
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
  if (layout_ == Layout::spaced)
    return fmt::format("the vocabulary is the {} words {} .. {}", tokens_.size(),
                       tokens_.empty() ? "" : tokens_.front(), tokens_.empty() ? "" : tokens_.back());
  std::string out = fmt::format("the vocabulary's {} characters: ", tokens_.size());
  for (std::size_t i = 0; i < tokens_.size() && i < max_listed; ++i) out += (i ? " " : "") + display_token(tokens_[i]);
  if (tokens_.size() > max_listed) out += " ...";
  return out;
}

std::string Vocabulary::decode(const std::vector<Index>& ids) const {
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
  std::string magic, layout_word, extra;
  long version = 0;
  long long count = -1;
  header >> magic >> version >> layout_word >> count;
  if (header.fail() || (header >> extra) || magic != "tinyformer-vocabulary" || version != 1 ||
      (layout_word != "joined" && layout_word != "spaced") || count < 0)
    throw std::invalid_argument(fmt::format(
        "Vocabulary::deserialize: line 1 is '{}', expected 'tinyformer-vocabulary 1 <joined|spaced> <count>'",
        display_token(lines[0])));
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

}  // namespace tf::data
