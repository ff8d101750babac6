#pragma once
// The data layer: next-token batches for training a GPT, from a synthetic task (copy, reverse, sort, add,
// induction, repeats, modular), a character-level UTF-8 text file, or a pre-tokenized .npy array, as the data section
// of the run config says. Depends on tensor/ and config/ (and io/npy.hpp to read .npy files).
//
// Next-token layout, used everywhere: a sequence seq of length T+1 gives the input x = seq[0..T-1] and the
// targets y = seq[1..T], so the query at position q of x predicts y[q] = seq[q+1]. y is -1 where the position
// is not scored (the cross-entropy and the accuracy skip it).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/tensor/random.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf::data {

inline constexpr Index kIgnore = -1;  // y value of a position that is not scored

struct Batch {
  IndexArray x;  // [B,T] input token ids
  IndexArray y;  // [B,T] target ids, kIgnore (-1) where not scored
};

// Rows [first, first + count) of a batch (a micro-batch, or one process's share of a global batch).
Batch rows_of(const Batch& batch, std::size_t first, std::size_t count);

// The ids of a run's data as two streams, the training part and the held-out part (export --format llmc writes them
// as llm.c's train.bin and val.bin).
struct TokenStreams {
  std::vector<Index> train, val;
};

class DataSource {
 public:
  virtual ~DataSource() = default;

  virtual const Vocabulary& vocab() const = 0;
  // T of every batch (x and y are [B, seq_len()]).
  virtual std::size_t seq_len() const = 0;
  // A fresh training batch [B,T], drawn from `rng` (tokens with shuffle off: the next B rows in file order).
  virtual Batch train_batch(std::size_t B, Rng& rng) = 0;
  // The fixed held-out set in batches of B (the last one may be smaller). Built once per B, from
  // training.seed (synthetic tasks) or the validation part of the file; the same on every call.
  virtual const std::vector<Batch>& eval_batches(std::size_t B) = 0;
  // A task with a fixed training set (modular): the whole set in batches of B (the last one may be smaller), in its
  // fixed order, for measuring the training accuracy; nullptr for data drawn afresh or read from a file.
  virtual const std::vector<Batch>* training_set(std::size_t /*B*/) { return nullptr; }
  // True for the synthetic tasks, whose answers have one right value (report exact-match accuracy).
  virtual bool is_task() const = 0;
  // The synthetic tasks: the number of answer tokens at the end of each sequence (0 for text and tokens).
  virtual std::size_t answer_length() const { return 0; }
  // Text: the bytes of text that the scored targets of eval_batches(B)[i] stand for (Vocabulary::text_bytes; the
  // space SentencePiece puts before each document is not in the file and counts 0), for bits per byte. nullopt for
  // the synthetic tasks and tokens, which are not text.
  virtual std::optional<double> eval_batch_bytes(std::size_t /*B*/, std::size_t /*i*/) { return std::nullopt; }
  // Text, and tokens read from an llm.c token file: the ids of the training part and of the held-out part, each in
  // file order. nullopt for the synthetic tasks and for .npy rows (sequences, not a stream).
  virtual std::optional<TokenStreams> token_streams() const { return std::nullopt; }
  // One line for the log: task, sizes, split.
  virtual std::string describe() const = 0;
  // [T] a default input for attention maps.
  virtual IndexArray probe_sequence() const = 0;
  // One sentence: which key each answer query should attend to ("" when the data has no known pattern: text,
  // tokens).
  virtual std::string expected_pattern() const { return ""; }
  // The expected key in a few words ("the mirrored source token"), or "".
  virtual std::string expected_key() const { return ""; }
  // seq: an input x of shape [T], or a prompt that is a prefix of one. For each query position q of seq, the key
  // position that the task says q should attend to, or -1 (not an answer query, or no single key). Without a known
  // pattern: all -1.
  virtual std::vector<long> expected_attention(const IndexArray& seq) const;
  // "" when a prompt has the shape of the start of a training sequence (synthetic tasks: symbols and separators
  // where the task puts them, at most T tokens); otherwise one sentence saying what was trained and where the
  // prompt differs. Text and tokens: always "".
  virtual std::string prompt_mismatch(const std::vector<Index>& ids) const;
};

// The source the run config asks for: data.* with model.context, model.vocab_size (tokens) and training.seed (the
// held-out set and the probe). Checks `cfg` first (config::validate). A model.context or model.vocab_size that does
// not fit the data throws config::ConfigError pointing at that key (config::error_at); a file that cannot be read
// (missing, a directory, a FIFO) FileError, one that cannot be used (empty, invalid UTF-8, too short, a bad .npy)
// std::invalid_argument, both starting with data.path's location.
std::unique_ptr<DataSource> make_data_source(const config::RunConfig& cfg);

// What make_data_source(cfg) will hold, known without reading the data (the config, the file's size): T and V where
// the task or the config fixes them (0 where the data decides), and the peak bytes of making and keeping the
// source (file contents, token ids, the held-out set and its batches). For the memory check before anything is
// allocated (train/memory_estimate.hpp); tests compare T and V with the made source's.
struct DataFootprint {
  std::size_t T = 0, V = 0;
  double bytes = 0;
};
DataFootprint data_footprint(const config::RunConfig& cfg);

// ---- accuracy ----

// Counts that add up over batches. A sequence counts when it has at least one scored position; it is
// correct when every scored position is predicted right.
struct Accuracy {
  std::size_t correct_sequences = 0, sequences = 0;
  std::size_t correct_tokens = 0, tokens = 0;

  double exact() const { return sequences ? static_cast<double>(correct_sequences) / sequences : 0.0; }
  double token() const { return tokens ? static_cast<double>(correct_tokens) / tokens : 0.0; }
  Accuracy& operator+=(const Accuracy& o);
};

// predictions [B,T] (ids), y [B,T] (ids or -1). Throws std::invalid_argument when the shapes differ.
Accuracy accuracy_from_predictions(const IndexArray& predictions, const IndexArray& y);
// logits [B,T,V]: the prediction is the argmax over V (the first one on ties).
Accuracy accuracy_from_logits(const Array<float>& logits, const IndexArray& y);
// argmax over the last axis: [B,T,V] -> [B,T].
IndexArray argmax_last(const Array<float>& logits);

}  // namespace tf::data
