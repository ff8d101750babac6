// Character-level text: the file is decoded as UTF-8 (strictly), the vocabulary is its distinct characters
// sorted by code point, the first part of the text trains and the last val_fraction of it is held out.
// T = model.context. Training draws random windows of T+1 characters from the training part; the held-out
// set is the consecutive windows val[k*T .. k*T+T] (k = 0, 1, ...; each shares its last character with the
// next one's first, so every held-out character after the first is a target exactly once), at most eval_size
// of them. Every position is scored. File problems throw std::runtime_error naming the file and the sizes.
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/data/sources.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::data {

namespace {

std::string read_file_bytes(const std::string& path) {
  try {
    return read_regular_file(path);
  } catch (const FileError& e) {
    throw std::runtime_error(fmt::format("text data '{}': {}", path, e.why()));
  }
}

class TextSource final : public DataSource {
 public:
  // data.path, model.context (a number: config::validate requires it for text) and the split were checked by
  // make_data_source's config::validate.
  explicit TextSource(const config::RunConfig& cfg)
      : path_(cfg.data.path), T_(*cfg.model.context), eval_size_(cfg.data.eval_size) {
    const config::DataConfig& spec = cfg.data;

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
    const std::size_t N = chars.size();
    if (N < T_ + 1)
      throw std::runtime_error(fmt::format("text data '{}' has {} characters ({} bytes); {} {} needs at least {}",
                                           path_, N, bytes.size(), config::keys::model::context, T_, T_ + 1));
    n_val_ = static_cast<std::size_t>(static_cast<double>(N) * spec.val_fraction);
    n_train_ = N - n_val_;
    if (n_train_ < T_ + 1 || n_val_ < T_ + 1)
      throw std::runtime_error(
          fmt::format("text data '{}': {} characters split by {} {} into {} for training and {} for validation; each "
                      "part needs at least {} + 1 = {} characters",
                      path_, N, config::keys::data::val_fraction, spec.val_fraction, n_train_, n_val_,
                      config::keys::model::context, T_ + 1));

    // sorted by code point (byte order of UTF-8 is code point order)
    const std::set<std::string> distinct(chars.begin(), chars.end());
    vocab_ = Vocabulary(std::vector<std::string>(distinct.begin(), distinct.end()));
    std::map<std::string, Index> id_of;
    for (Index i = 0; i < static_cast<Index>(vocab_.size()); ++i) id_of.emplace(vocab_.token(i), i);
    ids_.reserve(N);
    for (const auto& c : chars) ids_.push_back(id_of.at(c));

    for (std::size_t start = n_train_; start + T_ + 1 <= N && eval_windows_.size() < eval_size_; start += T_)
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

  std::string describe() const override {
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
  std::string path_;
  std::size_t T_;
  std::size_t eval_size_;
  Vocabulary vocab_;
  std::vector<Index> ids_;  // the whole text, [N]
  std::size_t n_train_ = 0, n_val_ = 0;
  std::vector<std::size_t> eval_windows_;  // start of each held-out window
  std::map<std::size_t, std::vector<Batch>> eval_cache_;
};

}  // namespace

std::unique_ptr<DataSource> make_text_source(const config::RunConfig& cfg) { return std::make_unique<TextSource>(cfg); }

}  // namespace tf::data
