// Subword tokenizers: SentencePiece (Debian's libsentencepiece) trains a BPE or unigram model on the training
// sentences, in the layout llama2.c's run.c expects: <unk> 0, <s> 1, </s> 2, the byte pieces <0x00>..<0xFF> at
// 3..258 (byte fallback: a character outside the pieces becomes its UTF-8 bytes), then the learned pieces. The text
// is kept as it is (identity normalisation, no whitespace folding), with the dummy-prefix space SentencePiece and
// run.c add before each text. Deterministic: one thread and SentencePiece's generator seeded from training.seed.
#include <regex>
#include <unordered_map>

#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "tinyformer/data/sources.hpp"

namespace tf::data {

namespace {

// Feeds the sentences to SentencePiece's trainer without a file.
class Sentences final : public sentencepiece::SentenceIterator {
 public:
  explicit Sentences(const std::vector<std::string>& sentences) : sentences_(sentences) {}
  bool done() const override { return i_ >= sentences_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return sentences_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  std::size_t i_ = 0;
};

// The longest sentence SentencePiece's trainer is given. Its BPE trainer (Debian's 0.1.97) crashed with SIGSEGV in
// ComputeFreq on one line of 37000 repeats of a character, or of 20000 of "abc" (36000 of one character and
// 30000 of "ab" passed), and it skips lines over its max_sentence_length: a longer line is fed in parts
// (lines_in_parts). 4096 is near SentencePiece's own default (4192).
constexpr std::size_t kSentenceBytes = 4096;

// `lines` with every line over kSentenceBytes cut into parts of at most that many bytes: before the last space in
// the part's second half (the space is dropped: the dummy-prefix space SentencePiece adds before each sentence takes
// its place, so the words are the same), else before a character's first byte (the text is valid UTF-8).
std::vector<std::string> lines_in_parts(const std::vector<std::string>& lines) {
  std::vector<std::string> parts;
  for (const std::string& line : lines) {
    std::size_t start = 0;
    while (line.size() - start > kSentenceBytes) {
      std::size_t cut = start + kSentenceBytes;
      while (cut > start + 1 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
      const std::size_t space = line.rfind(' ', cut);
      const bool at_space = space != std::string::npos && space > start + kSentenceBytes / 2;
      if (at_space) cut = space;
      parts.emplace_back(line, start, cut - start);
      start = at_space ? cut + 1 : cut;
    }
    if (start < line.size()) parts.emplace_back(line, start);
  }
  return parts;
}

}  // namespace

std::string train_sentencepiece(const std::vector<std::string>& lines, const config::RunConfig& cfg) {
  const config::DataConfig& d = cfg.data;
  const std::vector<std::string> sentences = lines_in_parts(lines);
  const std::unordered_map<std::string, std::string> args{
      {"model_type", config::to_string(d.tokenizer)},
      {"vocab_size", std::to_string(d.vocab_size)},
      {"byte_fallback", "true"},
      {"character_coverage", "1.0"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"split_digits", "true"},
      {"max_sentence_length", std::to_string(kSentenceBytes)},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"num_threads", "1"},
      {"minloglevel", "2"},
  };
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(cfg.training.seed));
  Sentences input(sentences);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &input, &model);
  if (status.ok()) return model;
  const std::string why = status.ToString();
  std::smatch m;
  const std::string tokenizer = config::to_string(d.tokenizer);
  if (std::regex_search(why, m, std::regex("value <= ([0-9]+)")))
    throw config::error_at(cfg, config::keys::data::vocab_size,
                           fmt::format("{} is more pieces than {} finds in the training text of '{}'; the largest "
                                       "that works is {}",
                                       d.vocab_size, tokenizer, d.path, m[1].str()));
  if (std::regex_search(why, m, std::regex("smaller than required_chars\\. [0-9]+ vs ([0-9]+)")))
    throw config::error_at(cfg, config::keys::data::vocab_size,
                           fmt::format("{} is too few: the 3 special pieces, 256 bytes and the characters of '{}' "
                                       "need at least {}",
                                       d.vocab_size, d.path, m[1].str()));
  if (why.find("sentences_.empty()") != std::string::npos)  // no line with a character
    throw config::error_at(
        cfg, config::keys::data::path,
        fmt::format("'{}': {} finds no line to learn its pieces from in the training part", d.path, tokenizer));
  // SentencePiece's status reads "Internal: <source>.cc(428) [<condition>] <text>": its source location and the
  // condition it checked are not for a user
  const std::string reason =
      std::regex_replace(why, std::regex(R"(^[A-Za-z ]+: ([^ ]*\.cc\([0-9]+\) )?(\[[^\]]*\] ?)?)"), "");
  throw config::error_at(cfg, config::keys::data::path,
                         fmt::format("SentencePiece ({} {}, {} {}) cannot learn pieces from the training text of "
                                     "'{}'{}",
                                     config::keys::data::tokenizer, tokenizer, config::keys::data::vocab_size,
                                     d.vocab_size, d.path, reason.empty() ? "" : ": " + reason));
}

}  // namespace tf::data
