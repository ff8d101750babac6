// The synthetic tasks. Every sequence is laid out as  source, separator, answer  and only the answer is
// scored. With L = full length, T = L - 1 and A = answer length, the answer tokens sit at seq[L-A .. L-1]
// and are predicted by the queries q = L-A-1 .. L-2 of x (query q predicts seq[q+1]); answer token k is
// predicted by query q = L-A-1+k. All positions below (queries and keys) are positions of x.
//
//   copy       s1..sn | s1..sn      L = 2n+1   answer k = s[k]        expected key k
//   reverse    s1..sn | sn..s1      L = 2n+1   answer k = s[n-1-k]    expected key n-1-k
//   sort       s1..sn | sorted(s)   L = 2n+1   answer k = k-th smallest, expected key: its first occurrence
//   add        a + b = c            L = 3d+3   a, b: d digits, zero padded, most significant first; c = a+b
//                                              as d+1 digits, LEAST significant first (so each answer digit
//                                              needs only the digits of its place and the carry coming from
//                                              the digit just written); answer k = digit of place 10^k,
//                                              expected key: a's digit of place 10^k at d-1-k (k = d, the
//                                              final carry, has none: -1)
//   induction  s1..sn s1..sn        L = 2n     A = n (the whole second copy); expected key k = q-n+1: the
//                                              query at x position i >= n holds seq[i] = seq[i-n], and the
//                                              token after that earlier occurrence, at i-n+1, is the target
//                                              (an induction head). The first answer query is q = n-1, the
//                                              end of the first copy, which attends to key 0 by the same
//                                              formula.
//
// Symbols are the tokens "0".."9", "a".."z", then "A".."Z" (ids 0..alphabet-1), followed by the separators.
// The held-out set is drawn from Rng(seed ^ kEvalStream), the probe from Rng(seed ^ kProbeStream); training
// draws come from the caller's generator. When the task has at least 2 * eval_size distinct sources, the
// held-out sources are distinct and training redraws any source that is in the held-out set, so the two never
// share an example; describe() says when the space is too small for that.
#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "tinyformer/data/sources.hpp"

namespace tf::data {

namespace {

using config::Task;  // copy, reverse, sort, add, induction here

// base^exp, saturated at 2^62.
std::uint64_t saturating_pow(std::uint64_t base, std::size_t exp) {
  constexpr std::uint64_t cap = std::uint64_t{1} << 62;
  std::uint64_t r = 1;
  for (std::size_t i = 0; i < exp; ++i) {
    if (r > cap / base) return cap;
    r *= base;
  }
  return r;
}

class TaskSource final : public DataSource {
 public:
  explicit TaskSource(const config::RunConfig& cfg) : kind_(cfg.data.task), eval_size_(cfg.data.eval_size) {
    const config::DataConfig& spec = cfg.data;
    const Task kind = kind_;
    const std::string name = config::to_string(kind);
    std::vector<std::string> tokens;
    if (kind == Task::add) {
      d_ = spec.digits;
      for (std::size_t i = 0; i < 10; ++i) tokens.push_back(task_symbol(i));
      plus_ = 10;
      equals_ = 11;
      tokens.push_back("+");
      tokens.push_back("=");
      L_ = 3 * d_ + 3;
      answer_len_ = d_ + 1;
      key_len_ = 2 * d_ + 1;
      space_ = saturating_pow(10, 2 * d_);
    } else {
      n_ = spec.length;
      alphabet_ = spec.alphabet;
      for (std::size_t i = 0; i < alphabet_; ++i) tokens.push_back(task_symbol(i));
      if (kind != Task::induction) {
        sep_ = static_cast<Index>(alphabet_);
        tokens.push_back("|");
      }
      L_ = kind == Task::induction ? 2 * n_ : 2 * n_ + 1;
      answer_len_ = n_;
      key_len_ = n_;
      space_ = saturating_pow(alphabet_, n_);
    }
    vocab_ = Vocabulary(std::move(tokens));
    resolve_context(cfg, L_ - 1,
                    fmt::format("task '{}' with {}", name,
                                kind == Task::add ? fmt::format("{} {}", config::keys::data::digits, d_)
                                                  : fmt::format("{} {}", config::keys::data::length, n_)));
    disjoint_ = space_ >= 2 * static_cast<std::uint64_t>(eval_size_);

    // The held-out set: eval_size examples from their own stream (distinct when the space allows).
    Rng eval_rng(cfg.training.seed ^ kEvalStream);
    eval_rows_.resize(eval_size_ * L_);
    for (std::size_t i = 0; i < eval_size_; ++i) {
      Index* row = eval_rows_.data() + i * L_;
      do generate(eval_rng, row);
      while (disjoint_ && eval_keys_.count(key(row)) != 0);
      eval_keys_.insert(key(row));
    }
    probe_.resize(L_);
    Rng probe_rng(cfg.training.seed ^ kProbeStream);
    generate(probe_rng, probe_.data());
  }

  const Vocabulary& vocab() const override { return vocab_; }
  std::size_t seq_len() const override { return L_ - 1; }
  bool is_task() const override { return true; }
  std::size_t answer_length() const override { return answer_len_; }

  Batch train_batch(std::size_t B, Rng& rng) override {
    check_batch_size(B, "train_batch");
    std::vector<Index> rows(B * L_);
    for (std::size_t b = 0; b < B; ++b) {
      Index* row = rows.data() + b * L_;
      do generate(rng, row);
      while (disjoint_ && eval_keys_.count(key(row)) != 0);
    }
    return rows_to_batches(rows, B, L_ - 1, B, [this](std::size_t, std::size_t q) { return scored(q); }).front();
  }

  const std::vector<Batch>& eval_batches(std::size_t B) override {
    check_batch_size(B, "eval_batches");
    auto it = eval_cache_.find(B);
    if (it == eval_cache_.end())
      it = eval_cache_
               .emplace(B, rows_to_batches(eval_rows_, eval_size_, L_ - 1, B,
                                           [this](std::size_t, std::size_t q) { return scored(q); }))
               .first;
    return it->second;
  }

  // The sequences in words: "8 symbols | the same 8 symbols reversed".
  std::string layout() const {
    switch (kind_) {
      case Task::copy:
        return fmt::format("{} symbols | the same {} symbols", n_, n_);
      case Task::reverse:
        return fmt::format("{} symbols | the same {} symbols reversed", n_, n_);
      case Task::sort:
        return fmt::format("{} symbols | the same {} symbols sorted", n_, n_);
      case Task::induction:
        return fmt::format("{} symbols then the same {} symbols again", n_, n_);
      case Task::add:
        return fmt::format("a + b = c with {}-digit a, b and c = a+b written as {} digits, least significant first", d_,
                           d_ + 1);
      default:
        return "";
    }
  }

  std::string describe() const override {
    const std::string symbols =
        kind_ == Task::add ? std::string("digits 0-9") : fmt::format("alphabet of {} symbols", alphabet_);
    const std::string held_out =
        disjoint_ ? fmt::format("{} held-out sequences, never drawn for training", eval_size_)
                  : fmt::format("{} held-out sequences, which overlap training (only {} distinct sources)", eval_size_,
                                space_);
    return fmt::format("task '{}': {} ({}); T = {}, V = {}, {} answer tokens scored; {}", config::to_string(kind_),
                       layout(), symbols, L_ - 1, vocab_.size(), answer_len_, held_out);
  }

  IndexArray probe_sequence() const override {
    IndexArray x = IndexArray::from_shape({L_ - 1});
    std::copy(probe_.begin(), probe_.end() - 1, x.begin());
    return x;
  }

  std::string expected_key() const override {
    switch (kind_) {
      case Task::copy:
        return "the source token it copies";
      case Task::reverse:
        return "the mirrored source token";
      case Task::sort:
        return "the first source position holding the value";
      case Task::add:
        return "a's digit of the same place value";
      case Task::induction:
        return "the token after the earlier occurrence of the current token";
      default:
        return "";
    }
  }

  std::string expected_pattern() const override {
    switch (kind_) {
      case Task::copy:
        return fmt::format("The query predicting answer token k (x position {}+k) attends to source position k, "
                           "the token it copies.",
                           first_answer_query());
      case Task::reverse:
        return fmt::format("The query predicting answer token k (x position {}+k) attends to source position {}-k, "
                           "the mirrored source token.",
                           first_answer_query(), n_ - 1);
      case Task::sort:
        return fmt::format("The query predicting the k-th smallest symbol (x position {}+k) attends to the source "
                           "position holding that value (its first occurrence when the value repeats).",
                           first_answer_query());
      case Task::add:
        return fmt::format("The query predicting the answer digit of place value 10^k (x position {}+k; the sum "
                           "is written least significant digit first) attends to a's digit of the same place, at "
                           "position {}-k (b's is {} further on; the final carry digit has no single key).",
                           first_answer_query(), d_ - 1, d_ + 1);
      case Task::induction:
        return fmt::format("The query at position i of the second copy attends to the position right after the "
                           "earlier occurrence of its current token, i-{} (an induction head); the last query of "
                           "the first copy attends to position 0.",
                           n_ - 1);
      case Task::repeats:
      case Task::modular:
      case Task::text:
      case Task::tokens:
        break;  // sources of their own (repeats.cpp, modular.cpp, text, tokens): no such object is made for them
    }
    return "";
  }

  std::string prompt_mismatch(const std::vector<Index>& ids) const override {
    const std::size_t T = L_ - 1;
    std::size_t bad = ids.size();  // the first position whose token is not the kind the format has there
    for (std::size_t i = 0; i < ids.size() && bad == ids.size(); ++i) {
      const Index sep = separator_at(i);
      if (sep >= 0 ? ids[i] != sep : is_separator(ids[i])) bad = i;
    }
    if (ids.size() <= T && bad == ids.size()) return "";
    const std::string trained = fmt::format("the model was trained on {} (T = {})", layout(), T);
    if (ids.size() > T) return fmt::format("{}; the prompt has {} tokens", trained, ids.size());
    return fmt::format("{}; the prompt has '{}' at position {}", trained, vocab_.token(ids[bad]), bad);
  }

  std::vector<long> expected_attention(const IndexArray& seq) const override {
    const std::size_t T = L_ - 1;
    if (seq.dimension() != 1 || seq.size() > T || seq.size() == 0)
      throw std::invalid_argument(fmt::format("task '{}': expected_attention needs one input sequence of at most {} "
                                              "tokens, got {}",
                                              config::to_string(kind_), T, shape_str(to_shape(seq.shape()))));
    for (std::size_t i = 0; i < seq.size(); ++i)
      if (seq(i) < 0 || static_cast<std::size_t>(seq(i)) >= vocab_.size())
        throw std::invalid_argument(fmt::format("task '{}': expected_attention: token id {} at position {} is not "
                                                "in [0, {})",
                                                config::to_string(kind_), seq(i), i, vocab_.size()));
    std::vector<long> expected(seq.size(), -1);
    const std::size_t q0 = first_answer_query();
    if (seq.size() <= q0) return expected;  // a prompt that stops before the answer has no answer queries
    std::vector<Index> sorted;
    if (kind_ == Task::sort) {
      sorted.assign(seq.begin(), seq.begin() + static_cast<long>(n_));
      std::sort(sorted.begin(), sorted.end());
    }
    for (std::size_t k = 0; k < answer_len_; ++k) {
      long key = -1;
      switch (kind_) {
        case Task::copy:
          key = static_cast<long>(k);
          break;
        case Task::reverse:
          key = static_cast<long>(n_ - 1 - k);
          break;
        case Task::sort:
          for (std::size_t i = 0; i < n_; ++i)
            if (seq(i) == sorted[k]) {
              key = static_cast<long>(i);
              break;
            }
          break;
        case Task::add:
          key = k < d_ ? static_cast<long>(d_ - 1 - k) : -1;
          break;
        case Task::induction:
          key = static_cast<long>(q0 + k) - static_cast<long>(n_) + 1;
          break;
        case Task::repeats:
        case Task::modular:
        case Task::text:
        case Task::tokens:
          break;
      }
      if (q0 + k < seq.size()) expected[q0 + k] = key;
    }
    return expected;
  }

 private:
  // The separator the format has at position i of a sequence ('|', '+', '='), or -1 for a symbol there.
  Index separator_at(std::size_t i) const {
    if (kind_ == Task::add) return i == d_ ? plus_ : i == 2 * d_ + 1 ? equals_ : Index(-1);
    return kind_ != Task::induction && i == n_ ? sep_ : Index(-1);
  }
  bool is_separator(Index id) const { return id >= 0 && (id == sep_ || id == plus_ || id == equals_); }

  // Query position of x that predicts answer token 0.
  std::size_t first_answer_query() const { return L_ - answer_len_ - 1; }
  bool scored(std::size_t q) const { return q >= first_answer_query(); }

  std::string key(const Index* row) const {
    std::string k(key_len_, '\0');
    for (std::size_t i = 0; i < key_len_; ++i) k[i] = static_cast<char>(row[i]);
    return k;
  }

  // Writes one full sequence of L_ tokens.
  void generate(Rng& rng, Index* seq) const {
    if (kind_ == Task::add) {
      const std::uint64_t limit = saturating_pow(10, d_);
      const std::uint64_t a = rng.below(limit), b = rng.below(limit);
      std::uint64_t c = a + b;
      for (std::size_t i = 0, av = a, bv = b; i < d_; ++i, av /= 10, bv /= 10) {  // most significant first
        seq[d_ - 1 - i] = static_cast<Index>(av % 10);
        seq[2 * d_ - i] = static_cast<Index>(bv % 10);
      }
      seq[d_] = plus_;
      seq[2 * d_ + 1] = equals_;
      for (std::size_t k = 0; k <= d_; ++k, c /= 10) seq[2 * d_ + 2 + k] = static_cast<Index>(c % 10);  // least first
      return;
    }
    for (std::size_t i = 0; i < n_; ++i) seq[i] = static_cast<Index>(rng.below(alphabet_));
    Index* answer = seq + L_ - n_;
    if (kind_ != Task::induction) seq[n_] = sep_;
    switch (kind_) {
      case Task::copy:
      case Task::induction:
        std::copy(seq, seq + n_, answer);
        break;
      case Task::reverse:
        std::reverse_copy(seq, seq + n_, answer);
        break;
      case Task::sort:
        std::copy(seq, seq + n_, answer);
        std::sort(answer, answer + n_);
        break;
      case Task::add:
      case Task::repeats:
      case Task::modular:
      case Task::text:
      case Task::tokens:
        break;
    }
  }

  Task kind_;
  std::size_t eval_size_;
  std::size_t n_ = 0, alphabet_ = 0, d_ = 0;  // n: source length; d: digits (add)
  std::size_t L_ = 0, answer_len_ = 0, key_len_ = 0;
  std::uint64_t space_ = 0;  // distinct sources (saturated at 2^62)
  Index sep_ = -1, plus_ = -1, equals_ = -1;
  Vocabulary vocab_;
  bool disjoint_ = false;
  std::unordered_set<std::string> eval_keys_;
  std::vector<Index> eval_rows_;  // [eval_size, L]
  std::vector<Index> probe_;      // [L]
  std::map<std::size_t, std::vector<Batch>> eval_cache_;
};

}  // namespace

std::unique_ptr<DataSource> make_task_source(const config::RunConfig& cfg) { return std::make_unique<TaskSource>(cfg); }

}  // namespace tf::data
