#pragma once
// The data layer: next-token batches for training a GPT, from a synthetic task (copy, reverse, sort, add,
// induction), a character-level UTF-8 text file, or a pre-tokenized .npy array. Depends on tensor/ only
// (and io/npy.hpp to read .npy files).
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

#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/tensor/random.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf::data {

inline constexpr Index kIgnore = -1;  // y value of a position that is not scored

struct Batch {
  IndexArray x;  // [B,T] input token ids
  IndexArray y;  // [B,T] target ids, kIgnore (-1) where not scored
};

// What make_data_source needs; the trainer fills it from the run config (data.*, model.context,
// model.vocab_size, training.seed).
struct DataSpec {
  std::string task = "reverse";  // copy | reverse | sort | add | induction | text | tokens
  std::string path;              // text / tokens: the file
  std::size_t length = 8;        // copy, reverse, sort, induction: symbols in the source part, >= 1
  std::size_t digits = 3;        // add: digits per operand, in [1, 9]
  std::size_t alphabet = 10;     // copy, reverse, sort, induction: distinct symbols, in [2, 36]
  std::size_t eval_size = 512;   // held-out sequences (text/tokens: at most this many windows/rows), >= 1
  double val_fraction = 0.1;     // text / tokens: the last part held out for evaluation, in (0, 1)
  bool shuffle = true;           // tokens: random training rows (true) or rows in file order (false)
  // model.context: T of every sequence. nullopt ("auto"): the task's sequence length or the file's rows minus
  // one; text needs a value. A set value must equal a task's or a tokens file's T (no untrained positions).
  std::optional<std::size_t> context;
  std::uint64_t seed = 1337;     // fixes the held-out set and the probe (training draws use the caller's Rng)
  std::optional<std::size_t> vocab_size;  // tokens: V; nullopt = max id in the file + 1
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
  // DataSpec::seed (synthetic tasks) or the validation part of the file; the same on every call.
  virtual const std::vector<Batch>& eval_batches(std::size_t B) = 0;
  // True for the synthetic tasks, whose answers have one right value (report exact-match accuracy).
  virtual bool is_task() const = 0;
  // One line for the log: task, sizes, split.
  virtual std::string describe() const = 0;
  // [T] a default input for attention maps.
  virtual IndexArray probe_sequence() const = 0;
  // One sentence: which key each answer query should attend to ("" when the data has no known pattern).
  virtual std::string expected_pattern() const = 0;
  // seq: an input x of shape [T]. For each query position q of x, the key position of x that the task says
  // q should attend to, or -1 (not an answer query, or no single key). Text and tokens: all -1.
  virtual std::vector<long> expected_attention(const IndexArray& seq) const = 0;
};

// A spec that does not fit the data, e.g. model.context against a task's sequence length: key() is the config
// key to change, what() says what would be valid.
class SpecError : public std::invalid_argument {
 public:
  SpecError(std::string key, const std::string& message) : std::invalid_argument(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// Builds the source named by spec.task. Throws std::invalid_argument on a bad spec (unknown task, a value out
// of range; SpecError for a model.context other than the data's T) and std::runtime_error on an unreadable or unusable
// file (missing, empty, invalid UTF-8, too short, bad .npy), naming the file and the sizes involved.
std::unique_ptr<DataSource> make_data_source(const DataSpec& spec);

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
