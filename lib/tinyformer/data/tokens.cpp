// Pre-tokenized data, in one of two files (told apart by their first bytes):
//   a .npy integer array [N, T+1] of token ids ('<i4', '<i8' or '|u1'), one training sequence per row;
//   an llm.c token file (io/llmc_tokens.hpp: a header of 256 int32, then uint16 ids), a stream of ids cut as llm.c's
//   dataloader cuts it: with T = model.context (a number), row k is ids[k*T .. k*T+T] (T+1 ids, each row sharing its
//   last id with the next row's first), N = (count - 1) / T rows, so B rows in file order are llm.c's batch of B.
// The vocabulary is the ids themselves, named "0".."V-1" (spaced layout), with
// V = model.vocab_size or, when that is auto, the largest id + 1. The last val_fraction of the rows (at least
// one, at most N-1) is held out; the held-out batches are its first eval_size rows in file order. Training
// rows: with shuffle, B rows drawn uniformly (with replacement) from the caller's generator; without, batch i
// is rows i*B .. i*B+B-1 of the training part in file order, wrapping around to row 0. Every position is scored.
#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/data/sources.hpp"
#include "tinyformer/io/llmc_tokens.hpp"
#include "tinyformer/io/npy.hpp"

namespace tf::data {

namespace {

class TokensSource final : public DataSource {
 public:
  // data.path and the split were checked by make_data_source's config::validate.
  explicit TokensSource(const config::RunConfig& cfg) : path_(cfg.data.path), shuffle_(cfg.data.shuffle) {
    const config::DataConfig& spec = cfg.data;
    const std::optional<std::size_t>& vocab_size = cfg.model.vocab_size;

    std::vector<Index> rows;  // [N, T+1]
    if (io::is_llmc_tokens(path_)) {
      stream_ = io::read_llmc_tokens(path_);  // runtime_error naming the file on a bad header or size
      if (!cfg.model.context)
        throw config::error_at(cfg, config::keys::model::context,
                               fmt::format("tokens data '{}' is an llm.c token file, a stream of ids: set {} to the "
                                           "window length T (a number, as llm.c's -t)",
                                           path_, config::keys::model::context));
      T_ = *cfg.model.context;
      N_ = (stream_.size() - 1) / T_;
      if (N_ < 2)
        throw std::runtime_error(fmt::format("tokens data '{}': {} ids make {} window(s) of {} = {} (+1) ids; needs "
                                             "at least 2 (training and held out), {} ids",
                                             path_, stream_.size(), N_, config::keys::model::context, T_, 2 * T_ + 1));
      rows.reserve(N_ * (T_ + 1));
      for (std::size_t k = 0; k < N_; ++k)
        rows.insert(rows.end(), stream_.begin() + static_cast<long>(k * T_),
                    stream_.begin() + static_cast<long>(k * T_ + T_ + 1));
    } else {
      const IndexArray array = io::read_npy_index(path_);  // runtime_error naming the file on a bad file/dtype
      if (array.dimension() != 2)
        throw std::runtime_error(fmt::format("tokens data '{}': expected a rank-2 array [N, T+1] of token ids, got "
                                             "shape {}",
                                             path_, shape_str(to_shape(array.shape()))));
      N_ = array.shape(0);
      const std::size_t C = array.shape(1);
      if (C < 2)
        throw std::runtime_error(fmt::format("tokens data '{}': rows of {} token(s); each row needs at least 2 "
                                             "(input and target)",
                                             path_, C));
      T_ = C - 1;
      resolve_context(cfg, T_, fmt::format("tokens data '{}' with rows of {} tokens", path_, C));
      if (N_ < 2)
        throw std::runtime_error(
            fmt::format("tokens data '{}': {} row(s); needs at least 2 (training and held out)", path_, N_));
      rows.assign(array.begin(), array.end());
    }
    const std::size_t C = T_ + 1;
    Index max_id = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Index id = rows.data()[i];
      if (id < 0)
        throw std::runtime_error(
            fmt::format("tokens data '{}': token id {} at row {}, column {} is negative", path_, id, i / C, i % C));
      max_id = std::max(max_id, id);
    }
    const std::size_t V = vocab_size ? *vocab_size : static_cast<std::size_t>(max_id) + 1;
    vocab_auto_ = !vocab_size;
    // Every id gets a vocabulary entry: a bound far above real tokenizers (GPT-2 50257, the largest about 256k)
    // keeps one stray id from asking for gigabytes (fuzz_tokens found a file whose id 150 million did).
    constexpr std::size_t kMaxVocabulary = std::size_t{1} << 22;
    if (V > kMaxVocabulary)
      throw std::runtime_error(fmt::format(
          "tokens data '{}': a vocabulary of {} ids ({}) is more than tinyformer takes, {}; token ids must be below {}",
          path_, V,
          vocab_size ? config::keys::model::vocab_size : fmt::format("the largest id in the file is {}", max_id),
          kMaxVocabulary, kMaxVocabulary));
    if (static_cast<std::size_t>(max_id) >= V) {
      const auto first_bad = std::find_if(rows.begin(), rows.end(), [&](Index id) { return std::size_t(id) >= V; });
      const std::size_t at = static_cast<std::size_t>(first_bad - rows.begin());
      throw std::runtime_error(fmt::format("tokens data '{0}': token id {1} at row {2}, column {3} is not below {4} "
                                           "{5} (the largest id is {6}: set {4} to at least {7}, or auto)",
                                           path_, *first_bad, at / C, at % C, config::keys::model::vocab_size, V,
                                           max_id, max_id + 1));
    }
    vocab_ = Vocabulary::numbered(V);

    n_val_ = std::clamp<std::size_t>(static_cast<std::size_t>(static_cast<double>(N_) * spec.val_fraction), 1, N_ - 1);
    n_train_ = N_ - n_val_;
    n_eval_ = std::min(n_val_, spec.eval_size);
    rows_ = std::move(rows);
  }

  const Vocabulary& vocab() const override { return vocab_; }
  std::size_t seq_len() const override { return T_; }
  bool is_task() const override { return false; }

  Batch train_batch(std::size_t B, Rng& rng) override {
    check_batch_size(B, "train_batch");
    std::vector<Index> picked;
    picked.reserve(B * (T_ + 1));
    for (std::size_t b = 0; b < B; ++b) {
      std::size_t r;
      if (shuffle_) {
        r = rng.below(n_train_);
      } else {
        r = cursor_;
        cursor_ = (cursor_ + 1) % n_train_;
      }
      const auto first = rows_.begin() + static_cast<long>(r * (T_ + 1));
      picked.insert(picked.end(), first, first + static_cast<long>(T_ + 1));
    }
    return rows_to_batches(picked, B, T_, B, [](std::size_t, std::size_t) { return true; }).front();
  }

  const std::vector<Batch>& eval_batches(std::size_t B) override {
    check_batch_size(B, "eval_batches");
    auto it = eval_cache_.find(B);
    if (it == eval_cache_.end()) {
      const auto first = rows_.begin() + static_cast<long>(n_train_ * (T_ + 1));
      const std::vector<Index> held(first, first + static_cast<long>(n_eval_ * (T_ + 1)));
      it = eval_cache_.emplace(B, rows_to_batches(held, n_eval_, T_, B, [](std::size_t, std::size_t) { return true; }))
               .first;
    }
    return it->second;
  }

  std::string describe() const override {
    return fmt::format("tokens '{}': {} rows of T+1 = {} ids{}, V = {} ({}); {} training rows ({}), {} of the last {} "
                       "held out; T = {}",
                       path_, N_, T_ + 1, stream_.empty() ? "" : " (an llm.c token file's windows, T apart)",
                       vocab_.size(), vocab_auto_ ? "largest id + 1" : config::keys::model::vocab_size, n_train_,
                       shuffle_ ? "random rows" : "in file order, wrapping", n_eval_, n_val_, T_);
  }

  std::optional<TokenStreams> token_streams() const override {
    if (stream_.empty()) return std::nullopt;  // .npy rows are sequences, not a stream
    // the training rows cover ids [0, n_train T], the held-out rows the rest (sharing the id at n_train T)
    const auto split = stream_.begin() + static_cast<long>(n_train_ * T_);
    return TokenStreams{std::vector<Index>(stream_.begin(), split + 1),
                        std::vector<Index>(split, stream_.begin() + static_cast<long>(N_ * T_ + 1))};
  }

  IndexArray probe_sequence() const override {
    IndexArray x = IndexArray::from_shape({T_});
    const auto first = rows_.begin() + static_cast<long>(n_train_ * (T_ + 1));
    std::copy(first, first + static_cast<long>(T_), x.begin());
    return x;
  }

 private:
  std::string path_;
  bool shuffle_;
  bool vocab_auto_ = true;
  std::size_t N_ = 0, T_ = 0, n_train_ = 0, n_val_ = 0, n_eval_ = 0;
  std::vector<Index> rows_;    // [N, T+1]
  std::vector<Index> stream_;  // an llm.c token file's ids; empty for a .npy
  std::size_t cursor_ = 0;     // next training row when not shuffling
  Vocabulary vocab_;
  std::map<std::size_t, std::vector<Batch>> eval_cache_;
};

}  // namespace

std::unique_ptr<DataSource> make_tokens_source(const config::RunConfig& cfg) {
  return std::make_unique<TokensSource>(cfg);
}

}  // namespace tf::data
