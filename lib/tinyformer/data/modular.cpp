// The modular arithmetic task of the grokking papers (Power et al. 2022; Nanda et al. 2023):
//   x = a  b  =        y = -1  -1  c        c = (a op b) mod p,   op in {+, -, *}
// over the tokens "0" .. "p-1" (ids 0 .. p-1) and "=" (id p), written spaced ("12 34 ="). Only the answer, predicted by
// the query at "=", is scored. Unlike the other synthetic tasks the data is finite: the p² pairs (a, b) are shuffled
// once by Rng(seed ^ kSplitStream) and the first config::fixed_train_set_size of them are the training set, the rest
// the held-out set (its first data.eval_size pairs are evaluated). A training batch of B < N examples takes B distinct
// training pairs drawn from the caller's generator; B = N (training.batch_size: all) takes the whole set in its fixed
// order and draws nothing, so a full-batch step sees exactly the same batch every time.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/data/sources.hpp"

namespace tf::data {

namespace {

constexpr std::size_t kL = 4;  // a, b, =, c

const char* operation_symbol(config::Operation op) {
  switch (op) {
    case config::Operation::add:
      return "+";
    case config::Operation::subtract:
      return "-";
    case config::Operation::multiply:
      return "*";
  }
  return "?";
}

class ModularSource final : public DataSource {
 public:
  explicit ModularSource(const config::RunConfig& cfg)
      : p_(cfg.data.modulus), op_(cfg.data.operation), n_train_(*config::fixed_train_set_size(cfg.data)) {
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < p_; ++i) tokens.push_back(std::to_string(i));
    tokens.emplace_back("=");
    vocab_ = Vocabulary(std::move(tokens), Vocabulary::Layout::spaced);
    resolve_context(cfg, kL - 1, fmt::format("task '{}' (a b = c)", config::to_string(config::Task::modular)));
    // The split: every pair (a, b) as the number a p + b, shuffled once (Fisher-Yates from the split stream).
    std::vector<std::uint64_t> pairs(p_ * p_);
    std::iota(pairs.begin(), pairs.end(), std::uint64_t{0});
    Rng split(cfg.training.seed ^ kSplitStream);
    for (std::size_t i = pairs.size() - 1; i > 0; --i) std::swap(pairs[i], pairs[split.below(i + 1)]);
    train_rows_ = rows(pairs.begin(), pairs.begin() + static_cast<long>(n_train_));
    const std::size_t held_out = std::min(cfg.data.eval_size, pairs.size() - n_train_);
    eval_rows_ =
        rows(pairs.begin() + static_cast<long>(n_train_), pairs.begin() + static_cast<long>(n_train_ + held_out));
    n_eval_ = held_out;
    Rng probe(cfg.training.seed ^ kProbeStream);  // a held-out pair
    const std::uint64_t pick = pairs[n_train_ + probe.below(pairs.size() - n_train_)];
    probe_ = rows(&pick, &pick + 1);
  }

  const Vocabulary& vocab() const override { return vocab_; }
  std::size_t seq_len() const override { return kL - 1; }
  bool is_task() const override { return true; }
  std::size_t answer_length() const override { return 1; }

  Batch train_batch(std::size_t B, Rng& rng) override {
    check_batch_size(B, "train_batch");
    if (B > n_train_)
      throw std::invalid_argument(fmt::format("DataSource::train_batch: {} sequences, the training set of task "
                                              "'modular' has {}",
                                              B, n_train_));
    if (B == n_train_) return training_set(B)->front();
    // B distinct training pairs: the first B of a partial Fisher-Yates shuffle of the indices
    std::vector<std::size_t> order(n_train_);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::vector<Index> picked(B * kL);
    for (std::size_t i = 0; i < B; ++i) {
      std::swap(order[i], order[i + rng.below(n_train_ - i)]);
      std::copy_n(train_rows_.begin() + static_cast<long>(order[i] * kL), kL,
                  picked.begin() + static_cast<long>(i * kL));
    }
    return rows_to_batches(picked, B, kL - 1, B, scored).front();
  }

  const std::vector<Batch>& eval_batches(std::size_t B) override {
    check_batch_size(B, "eval_batches");
    auto it = eval_cache_.find(B);
    if (it == eval_cache_.end())
      it = eval_cache_.emplace(B, rows_to_batches(eval_rows_, n_eval_, kL - 1, B, scored)).first;
    return it->second;
  }

  const std::vector<Batch>* training_set(std::size_t B) override {
    check_batch_size(B, "training_set");
    auto it = train_cache_.find(B);
    if (it == train_cache_.end())
      it = train_cache_.emplace(B, rows_to_batches(train_rows_, n_train_, kL - 1, B, scored)).first;
    return &it->second;
  }

  std::string describe() const override {
    return fmt::format("task 'modular': a {} b = c, c = (a {} b) mod {} (tokens 0..{} and =); T = 3, V = {}, 1 answer "
                       "token scored; {} of the {} pairs for training ({} {}), {} held-out pairs evaluated",
                       operation_symbol(op_), operation_symbol(op_), p_, p_ - 1, vocab_.size(), n_train_, p_ * p_,
                       config::keys::data::train_fraction, static_cast<double>(n_train_) / static_cast<double>(p_ * p_),
                       n_eval_);
  }

  IndexArray probe_sequence() const override {
    IndexArray x = IndexArray::from_shape({kL - 1});
    std::copy_n(probe_.begin(), kL - 1, x.begin());
    return x;
  }

  std::string prompt_mismatch(const std::vector<Index>& ids) const override {
    const Index equals = static_cast<Index>(p_);
    std::size_t bad = ids.size();
    for (std::size_t i = 0; i < ids.size() && bad == ids.size(); ++i)
      if ((i == 2) != (ids[i] == equals)) bad = i;
    if (ids.size() <= kL - 1 && bad == ids.size()) return "";
    const std::string trained = fmt::format("the model was trained on 'a b =' with a, b in 0..{} (T = 3)", p_ - 1);
    if (ids.size() > kL - 1) return fmt::format("{}; the prompt has {} tokens", trained, ids.size());
    return fmt::format("{}; the prompt has '{}' at position {}", trained, vocab_.token(ids[bad]), bad);
  }

 private:
  static bool scored(std::size_t, std::size_t q) { return q == kL - 2; }

  // The answer of a op b.
  std::uint64_t answer(std::uint64_t a, std::uint64_t b) const {
    switch (op_) {
      case config::Operation::add:
        return (a + b) % p_;
      case config::Operation::subtract:
        return (a + p_ - b) % p_;
      case config::Operation::multiply:
        return (a * b) % p_;
    }
    return 0;
  }

  // Rows [a, b, =, c] of the pairs a p + b in [first, last).
  template <class It>
  std::vector<Index> rows(It first, It last) const {
    std::vector<Index> out;
    for (It it = first; it != last; ++it) {
      const std::uint64_t a = *it / p_, b = *it % p_;
      for (const std::uint64_t v : {a, b, std::uint64_t{p_}, answer(a, b)}) out.push_back(static_cast<Index>(v));
    }
    return out;
  }

  std::size_t p_;
  config::Operation op_;
  std::size_t n_train_, n_eval_ = 0;
  Vocabulary vocab_;
  std::vector<Index> train_rows_, eval_rows_, probe_;  // [N, 4], [n_eval, 4], [4]
  std::map<std::size_t, std::vector<Batch>> eval_cache_, train_cache_;
};

}  // namespace

std::unique_ptr<DataSource> make_modular_source(const config::RunConfig& cfg) {
  return std::make_unique<ModularSource>(cfg);
}

}  // namespace tf::data
