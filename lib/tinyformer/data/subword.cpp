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

}  // namespace

// The longest line SentencePiece's trainer reads; longer ones are skipped.
constexpr std::size_t kMaxSentenceBytes = 65536;

std::string train_sentencepiece(const std::vector<std::string>& sentences, const config::RunConfig& cfg) {
  const config::DataConfig& d = cfg.data;
  const std::unordered_map<std::string, std::string> args{
      {"model_type", config::to_string(d.tokenizer)},
      {"vocab_size", std::to_string(d.vocab_size)},
      {"byte_fallback", "true"},
      {"character_coverage", "1.0"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"split_digits", "true"},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)},
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
                           fmt::format("{} is more pieces than {} finds in the training text; the largest that works "
                                       "is {}",
                                       d.vocab_size, tokenizer, m[1].str()));
  if (std::regex_search(why, m, std::regex("smaller than required_chars\\. [0-9]+ vs ([0-9]+)")))
    throw config::error_at(cfg, config::keys::data::vocab_size,
                           fmt::format("{} is too few: the 3 special pieces, 256 bytes and the training text's "
                                       "characters need at least {}",
                                       d.vocab_size, m[1].str()));
  if (why.find("sentences_.empty()") != std::string::npos)  // every line skipped
    throw config::error_at(cfg, config::keys::data::path,
                           fmt::format("{} finds no line to learn its pieces from: each line of the training text is "
                                       "empty or longer than {} bytes (lines end at a newline)",
                                       tokenizer, kMaxSentenceBytes));
  // SentencePiece's status reads "Internal: <source>.cc(428) [<condition>] <text>": its source location and the
  // condition it checked are not for a user
  const std::string reason =
      std::regex_replace(why, std::regex(R"(^[A-Za-z ]+: ([^ ]*\.cc\([0-9]+\) )?(\[[^\]]*\] ?)?)"), "");
  throw config::error_at(cfg, config::keys::data::path,
                         fmt::format("SentencePiece ({} {}, {} {}) cannot learn pieces from the training text{}",
                                     config::keys::data::tokenizer, tokenizer, config::keys::data::vocab_size,
                                     d.vocab_size, reason.empty() ? "" : ": " + reason));
}

}  // namespace tf::data
