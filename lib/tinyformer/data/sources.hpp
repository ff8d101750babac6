#pragma once
// Internal to data/: the concrete sources behind make_data_source, and helpers they share.
#include <algorithm>
#include <memory>

#include "tinyformer/data/data.hpp"

namespace tf::data {

// The generator streams of the synthetic tasks, each seeded with training.seed ^ stream: the held-out set, the probe,
// and (modular) the split of the pairs.
inline constexpr std::uint64_t kEvalStream = 0x5eedE7A1C0FFEE01ULL;
inline constexpr std::uint64_t kProbeStream = 0x9B0BE5EED0000002ULL;
inline constexpr std::uint64_t kSplitStream = 0x6D0D0A5717C0FFEEULL;

// The sources behind make_data_source; `cfg` has been validated.
std::unique_ptr<DataSource> make_task_source(const config::RunConfig& cfg);     // copy, reverse, sort, add, induction
std::unique_ptr<DataSource> make_repeats_source(const config::RunConfig& cfg);  // repeats
std::unique_ptr<DataSource> make_modular_source(const config::RunConfig& cfg);  // modular
std::unique_ptr<DataSource> make_text_source(const config::RunConfig& cfg);     // text
std::unique_ptr<DataSource> make_tokens_source(const config::RunConfig& cfg);   // tokens

// A SentencePiece model (ModelProto bytes) of cfg.data.tokenizer (bpe or unigram) with cfg.data.vocab_size pieces,
// trained on the text's `lines` (data/subword.cpp; a line of over 4096 bytes is given in parts). Throws
// config::ConfigError at data.vocab_size when the text cannot make that many pieces, naming the largest (or smallest)
// that works.
std::string train_sentencepiece(const std::vector<std::string>& lines, const config::RunConfig& cfg);

// rows: N sequences of length T+1, row-major [N, T+1]; scored(n, q) tells whether y[n][q] is scored.
// Returns batches of `B` rows (the last one may be smaller), x = row[:-1], y = row[1:] or -1.
template <class Scored>
std::vector<Batch> rows_to_batches(const std::vector<Index>& rows, std::size_t N, std::size_t T, std::size_t B,
                                   Scored scored) {
  std::vector<Batch> batches;
  for (std::size_t first = 0; first < N; first += B) {
    const std::size_t b_count = std::min(B, N - first);
    Batch batch{IndexArray::from_shape({b_count, T}), IndexArray::from_shape({b_count, T})};
    for (std::size_t b = 0; b < b_count; ++b) {
      const Index* row = rows.data() + (first + b) * (T + 1);
      for (std::size_t q = 0; q < T; ++q) {
        batch.x(b, q) = row[q];
        batch.y(b, q) = scored(first + b, q) ? row[q + 1] : kIgnore;
      }
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

// The sequence length T of a source whose data fixes it (a task, a tokens file): model.context must be T or
// auto. Throws config::ConfigError at model.context otherwise; `what` describes the data ("task 'reverse' with
// data.length 8").
std::size_t resolve_context(const config::RunConfig& cfg, std::size_t T, const std::string& what);

// The synthetic tasks' symbol i: "0".."9", then "a".."z", then "A".."Z" (data.alphabet is at most 62).
std::string task_symbol(std::size_t i);

// Throws std::invalid_argument when B is 0 (`who` names the caller).
void check_batch_size(std::size_t B, const char* who);

}  // namespace tf::data
