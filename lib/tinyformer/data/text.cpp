// Text: the file is decoded as UTF-8 (strictly) and cut into documents at the lines equal to data.documents (none:
// the whole file is one document). The last val_fraction of the characters is held out: with several documents,
// the last whole documents holding about that many; with one, the characters after the cut. Tokens:
//   char           one per character; the vocabulary is the file's distinct characters sorted by code point
//   bpe, unigram   a SentencePiece model of data.vocab_size pieces (data/subword.cpp) trained on the training part
//                  only; every document is <s> (BOS, id 1) followed by its pieces, as llama2.c's pretokenizer does
//                  (a held-out part cut inside the one document continues it without <s>)
// T = model.context. Training draws random windows of T+1 tokens from the training part; the held-out set is the
// consecutive windows val[k*T .. k*T+T] (k = 0, 1, ...; each shares its last token with the next one's first, so
// every held-out token after the first is a target exactly once), at most eval_size of them. Every position is
// scored. File problems throw std::runtime_error naming the file and the sizes.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "tinyformer/data/sources.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::data {

namespace {

std::string read_file_bytes(const std::string& path) {
  try {
    return read_regular_file(path);
  } catch (const FileError& e) {
    throw FileError(fmt::format("text data '{}'", path), e.why());  // kept a file error: its kind is the file's
  }
}

// The documents of `text`: the runs of lines between lines equal to `separator` (each line with its '\n'), empty
// ones dropped; the whole text when `separator` is empty.
std::vector<std::string> split_documents(const std::string& text, const std::string& separator) {
  if (separator.empty()) return {text};
  std::vector<std::string> docs(1);
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    std::string_view line(text.data() + start, end - start);
    std::string_view bare = line;
    if (!bare.empty() && bare.back() == '\n') bare.remove_suffix(1);
    if (!bare.empty() && bare.back() == '\r') bare.remove_suffix(1);
    if (bare == separator)
      docs.emplace_back();
    else
      docs.back() += line;
    start = end;
  }
  docs.erase(std::remove_if(docs.begin(), docs.end(), [](const std::string& d) { return d.empty(); }), docs.end());
  return docs;
}

std::size_t count_chars(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // valid UTF-8: count the lead bytes
  return n;
}

// Every line of the documents, without its '\n', empty ones dropped: SentencePiece's training sentences.
std::vector<std::string> lines_of(const std::vector<std::string>& docs) {
  std::vector<std::string> lines;
  for (const auto& doc : docs)
    for (std::size_t start = 0; start < doc.size();) {
      std::size_t end = doc.find('\n', start);
      if (end == std::string::npos) end = doc.size();
      if (end > start) lines.emplace_back(doc, start, end - start);
      start = end + 1;
    }
  return lines;
}

class TextSource final : public DataSource {
 public:
  // data.path, model.context (a number: config::validate requires it for text) and the split were checked by
  // make_data_source's config::validate.
  explicit TextSource(const config::RunConfig& cfg)
      : path_(cfg.data.path), T_(*cfg.model.context), eval_size_(cfg.data.eval_size) {
    const config::DataConfig& spec = cfg.data;
    const bool chars_only = spec.tokenizer == config::Tokenizer::char_;

    const std::string bytes = read_file_bytes(path_);
    if (bytes.empty())
      throw std::runtime_error(fmt::format("text data '{}' is empty (0 bytes); {} {} needs at least {} characters",
                                           path_, config::keys::model::context, T_, T_ + 1));
    std::vector<std::string> chars;
    const std::size_t bad = utf8_split(bytes, chars);
    if (bad != std::string::npos)
      throw std::runtime_error(fmt::format("text data '{}': invalid UTF-8 at {}; save the file as UTF-8", path_,
                                           byte_position_str(bytes, bad)));
    if (const std::size_t nul = bytes.find('\0'); nul != std::string::npos)  // UTF-16 is valid UTF-8 with NULs
      throw std::runtime_error(
          fmt::format("text data '{}' holds a NUL byte at {}; is it UTF-16? save the file as UTF-8", path_,
                      byte_position_str(bytes, nul)));
    std::vector<std::string> docs = split_documents(bytes, spec.documents);
    std::size_t N = 0;
    for (const auto& d : docs) N += count_chars(d);
    if (N < T_ + 1)
      throw std::runtime_error(fmt::format("text data '{}' has {} characters ({} bytes); {} {} needs at least {}",
                                           path_, N, bytes.size(), config::keys::model::context, T_, T_ + 1));
    const std::size_t n_val_chars = static_cast<std::size_t>(static_cast<double>(N) * spec.val_fraction);
    const std::size_t n_train_chars = N - n_val_chars;
    if (n_train_chars < T_ + 1 || n_val_chars < T_ + 1)
      throw std::runtime_error(
          fmt::format("text data '{}': {} characters split by {} {} into {} for training and {} for validation; each "
                      "part needs at least {} + 1 = {} characters",
                      path_, N, config::keys::data::val_fraction, spec.val_fraction, n_train_chars, n_val_chars,
                      config::keys::model::context, T_ + 1));

    // the split: whole documents, or the one document cut at a character
    std::vector<std::string> train_docs, val_docs;
    bool val_continues = false;  // the held-out part continues the last training document (no <s>)
    if (docs.size() == 1) {
      std::size_t cut = 0;
      for (std::size_t c = 0; c < n_train_chars; ++c) cut += chars[c].size();
      train_docs = {docs[0].substr(0, cut)};
      val_docs = {docs[0].substr(cut)};
      val_continues = true;
    } else {
      std::size_t seen = 0, k = 0;
      for (; k + 1 < docs.size() && seen + count_chars(docs[k]) <= n_train_chars; ++k) seen += count_chars(docs[k]);
      k = std::max<std::size_t>(k, 1);
      train_docs.assign(docs.begin(), docs.begin() + static_cast<long>(k));
      val_docs.assign(docs.begin() + static_cast<long>(k), docs.end());
    }

    if (chars_only) {
      // sorted by code point (byte order of UTF-8 is code point order), over the whole file as before documents
      std::set<std::string> distinct;
      for (const auto& d : docs) {
        std::vector<std::string> cs;
        utf8_split(d, cs);
        distinct.insert(cs.begin(), cs.end());
      }
      vocab_ = Vocabulary(std::vector<std::string>(distinct.begin(), distinct.end()));
    } else {
      vocab_ = Vocabulary::from_sentencepiece(train_sentencepiece(lines_of(train_docs), cfg));
    }
    for (const auto& d : train_docs) append_document(d, true);
    n_train_ = ids_.size();
    for (std::size_t i = 0; i < val_docs.size(); ++i) append_document(val_docs[i], !(i == 0 && val_continues));
    n_val_ = ids_.size() - n_train_;
    if (!chars_only && (n_train_ < T_ + 1 || n_val_ < T_ + 1))
      throw std::runtime_error(fmt::format(
          "text data '{}': {} tokens for training and {} held out ({} {}); each part needs at least {} + 1 = {} tokens",
          path_, n_train_, n_val_, config::keys::data::tokenizer, config::to_string(spec.tokenizer),
          config::keys::model::context, T_ + 1));

    for (std::size_t start = n_train_; start + T_ + 1 <= ids_.size() && eval_windows_.size() < eval_size_; start += T_)
      eval_windows_.push_back(start);
  }

  const Vocabulary& vocab() const override { return vocab_; }
  std::size_t seq_len() const override { return T_; }
  bool is_task() const override { return false; }

  Batch train_batch(std::size_t B, Rng& rng) override {
    check_batch_size(B, "train_batch");
    Batch batch{IndexArray::from_shape({B, T_}), IndexArray::from_shape({B, T_})};
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t start = rng.below(n_train_ - T_);  // window [start, start+T] inside the training part
      for (std::size_t t = 0; t < T_; ++t) {
        batch.x(b, t) = ids_[start + t];
        batch.y(b, t) = ids_[start + t + 1];
      }
    }
    return batch;
  }

  const std::vector<Batch>& eval_batches(std::size_t B) override {
    check_batch_size(B, "eval_batches");
    auto it = eval_cache_.find(B);
    if (it == eval_cache_.end()) {
      std::vector<Index> rows;
      rows.reserve(eval_windows_.size() * (T_ + 1));
      for (std::size_t start : eval_windows_) rows.insert(rows.end(), id_at(start), id_at(start + T_ + 1));
      it = eval_cache_
               .emplace(
                   B, rows_to_batches(rows, eval_windows_.size(), T_, B, [](std::size_t, std::size_t) { return true; }))
               .first;
    }
    return it->second;
  }

  std::optional<double> eval_batch_bytes(std::size_t B, std::size_t i) override {
    check_batch_size(B, "eval_batch_bytes");
    double total = 0;
    for (std::size_t w = i * B; w < std::min(eval_windows_.size(), (i + 1) * B); ++w)
      for (std::size_t t = 1; t <= T_; ++t) total += text_bytes_[eval_windows_[w] + t];  // the targets
    return total;
  }

  std::optional<TokenStreams> token_streams() const override {
    return TokenStreams{std::vector<Index>(ids_.begin(), id_at(n_train_)),
                        std::vector<Index>(id_at(n_train_), ids_.end())};
  }

  std::string describe() const override {
    if (vocab_.layout() == Vocabulary::Layout::sentencepiece)
      return fmt::format("text '{}': {} tokens of a SentencePiece vocabulary of V = {}; {} for training (random "
                         "windows), last {} held out ({} consecutive windows); T = {}",
                         path_, ids_.size(), vocab_.size(), n_train_, n_val_, eval_windows_.size(), T_);
    return fmt::format("text '{}': {} characters, V = {} distinct; {} for training (random windows), last {} held "
                       "out ({} consecutive windows); T = {}",
                       path_, ids_.size(), vocab_.size(), n_train_, n_val_, eval_windows_.size(), T_);
  }

  IndexArray probe_sequence() const override {
    IndexArray x = IndexArray::from_shape({T_});
    std::copy(id_at(n_train_), id_at(n_train_ + T_), x.begin());
    return x;
  }

 private:
  // The position of ids_[i] (i <= N), the offset converted once to the iterator's signed type.
  std::vector<Index>::const_iterator id_at(std::size_t i) const {
    return ids_.cbegin() + static_cast<std::ptrdiff_t>(i);
  }

  // Appends a document's tokens (after <s> when `starts` and the vocabulary has it) and their text bytes.
  void append_document(const std::string& doc, bool starts) {
    const std::size_t first = ids_.size();
    if (starts && vocab_.bos() >= 0) ids_.push_back(vocab_.bos());
    const std::size_t first_piece = ids_.size();
    const std::vector<Index> ids = vocab_.encode(doc);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    for (std::size_t i = first; i < ids_.size(); ++i) text_bytes_.push_back(vocab_.text_bytes(ids_[i]));
    // SentencePiece writes a space before each text it encodes (its dummy prefix), not in the file
    if (vocab_.layout() == Vocabulary::Layout::sentencepiece && ids_.size() > first_piece &&
        text_bytes_[first_piece] > 0 && vocab_.token(ids_[first_piece]).rfind("\xe2\x96\x81", 0) == 0)
      --text_bytes_[first_piece];
  }

  std::string path_;
  std::size_t T_;
  std::size_t eval_size_;
  Vocabulary vocab_;
  std::vector<Index> ids_;                 // the training part's tokens, then the held-out part's, [N]
  std::vector<std::uint32_t> text_bytes_;  // [N] the bytes of text each token stands for
  std::size_t n_train_ = 0, n_val_ = 0;
  std::vector<std::size_t> eval_windows_;  // start of each held-out window
  std::map<std::size_t, std::vector<Batch>> eval_cache_;
};

}  // namespace

std::unique_ptr<DataSource> make_text_source(const config::RunConfig& cfg) { return std::make_unique<TextSource>(cfg); }

}  // namespace tf::data
