// The in-context task of an induction head (Olsson et al. 2022): a sequence of L = T+1 random symbols in which a
// segment of n symbols occurs twice, at places drawn for every sequence:
//   seq = r r r s1 s2 .. sn r r r r s1 s2 .. sn r r        (r: random filler, s: the segment)
//             a                   b
// n is drawn from 2 .. data.length, the offset b - a uniform in [n, L - n], then a uniform in [0, L - n - (b - a)].
// Scored are the tokens of the second copy after its first: query q = b+k (k = 0 .. n-2) predicts seq[b+k+1] =
// seq[a+k+1], which only the token after the earlier occurrence of the current token tells (x[b+k] = x[a+k]): an
// induction head's key, q - (b - a) + 1. The offset b - a changes from sequence to sequence, so no head finds that key
// by position alone, as one can in `induction` (a fixed period): it takes a layer that copies each token's predecessor
// into it (a previous-token head) and a later head that matches on it, two layers. The segment's length changes too:
// with one fixed n, a first layer that copies the token n back (instead of the one before) serves a later head just as
// well (every offset is at least n), and training found that circuit instead; with copies as close as 2 apart, only the
// previous token is always there. The first copied token (at b) and the filler cannot be predicted and are not scored.
// The keys of the generated sequences (the held-out set, the probe) are the generator's; for another sequence (a
// prompt) they are found by content: the longest segment (at least 2 symbols) that occurs again later, without
// overlap, the earliest second occurrence on ties. The held-out set is drawn from Rng(seed ^ kEvalStream), the probe
// from Rng(seed ^ kProbeStream), training batches from the caller's generator.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "tinyformer/data/sources.hpp"

namespace tf::data {

namespace {

// Where a sequence's copies are: the second copy starts `offset` positions after the first, at `b`, and is `n` long.
struct Copies {
  std::size_t b = 0, offset = 0, n = 0;
};

// A sequence of symbol ids (each below 62) as a string, to look its copies up.
template <class It>
std::string row_key(It first, It last) {
  std::string key;
  for (It it = first; it != last; ++it) key += static_cast<char>(*it);
  return key;
}

// The induction key of each query of an input of T tokens (-1 for none).
std::vector<long> keys_of(const Copies& c, std::size_t T) {
  std::vector<long> keys(T, -1);
  for (std::size_t k = 0; k + 1 < c.n && c.b + k < T; ++k) keys[c.b + k] = static_cast<long>(c.b + k - c.offset + 1);
  return keys;
}

class RepeatsSource final : public DataSource {
 public:
  explicit RepeatsSource(const config::RunConfig& cfg)
      : n_max_(cfg.data.length),
        alphabet_(cfg.data.alphabet),
        L_(*cfg.model.context + 1),
        eval_size_(cfg.data.eval_size) {
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < alphabet_; ++i) tokens.push_back(task_symbol(i));
    vocab_ = Vocabulary(std::move(tokens));
    Rng eval_rng(cfg.training.seed ^ kEvalStream);
    eval_rows_.resize(eval_size_ * L_);
    for (std::size_t i = 0; i < eval_size_; ++i) eval_copies_.push_back(remember(eval_rng, eval_rows_.data() + i * L_));
    probe_.resize(L_);
    Rng probe_rng(cfg.training.seed ^ kProbeStream);
    remember(probe_rng, probe_.data());
  }

  const Vocabulary& vocab() const override { return vocab_; }
  std::size_t seq_len() const override { return L_ - 1; }
  bool is_task() const override { return true; }
  std::size_t answer_length() const override { return n_max_ - 1; }

  Batch train_batch(std::size_t B, Rng& rng) override {
    check_batch_size(B, "train_batch");
    std::vector<Index> rows(B * L_);
    std::vector<Copies> copies;
    for (std::size_t b = 0; b < B; ++b) copies.push_back(generate(rng, rows.data() + b * L_));
    return to_batches(rows, copies, B).front();
  }

  const std::vector<Batch>& eval_batches(std::size_t B) override {
    check_batch_size(B, "eval_batches");
    auto it = eval_cache_.find(B);
    if (it == eval_cache_.end()) it = eval_cache_.emplace(B, to_batches(eval_rows_, eval_copies_, B)).first;
    return it->second;
  }

  std::string describe() const override {
    return fmt::format(
        "task 'repeats': {} random symbols (alphabet of {}) in which a segment of 2 to {} occurs twice at "
        "random places; T = {}, V = {}, the tokens of the second copy after its first scored; {} "
        "held-out sequences",
        L_, alphabet_, n_max_, L_ - 1, vocab_.size(), eval_size_);
  }

  IndexArray probe_sequence() const override {
    IndexArray x = IndexArray::from_shape({L_ - 1});
    std::copy(probe_.begin(), probe_.end() - 1, x.begin());
    return x;
  }

  std::string expected_key() const override { return "the token after the earlier occurrence of the current token"; }

  std::string expected_pattern() const override {
    return "The query at a token of the second copy of the repeated segment (all but its last) attends to the token "
           "after the same token in the first copy: an induction head. The offset between the copies and their "
           "length differ from sequence to sequence.";
  }

  std::vector<long> expected_attention(const IndexArray& seq) const override {
    if (seq.dimension() != 1 || seq.size() > L_ - 1 || seq.size() == 0)
      throw std::invalid_argument(fmt::format("task 'repeats': expected_attention needs one input sequence of at "
                                              "most {} tokens, got {}",
                                              L_ - 1, shape_str(to_shape(seq.shape()))));
    const auto known = generated_.find(row_key(seq.begin(), seq.end()));
    if (known != generated_.end()) return keys_of(known->second, seq.size());
    return keys_of(find_copies(seq), seq.size());
  }

  std::string prompt_mismatch(const std::vector<Index>& ids) const override {
    if (ids.size() <= L_ - 1) return "";
    return fmt::format("the model was trained on sequences of T = {} symbols; the prompt has {} tokens", L_ - 1,
                       ids.size());
  }

 private:
  // Writes one sequence of L_ symbols with its two copies.
  Copies generate(Rng& rng, Index* seq) const {
    for (std::size_t i = 0; i < L_; ++i) seq[i] = static_cast<Index>(rng.below(alphabet_));
    const std::size_t n = 2 + rng.below(n_max_ - 1);
    const std::size_t offset = n + rng.below(L_ - 2 * n + 1);  // b - a, uniform in [n, L - n]
    const std::size_t a = rng.below(L_ - n - offset + 1);
    const std::size_t b = a + offset;
    std::copy(seq + a, seq + a + n, seq + b);
    return {b, b - a, n};
  }

  // generate, and its copies kept for expected_attention of the input (x: the row without its last token).
  Copies remember(Rng& rng, Index* seq) {
    const Copies c = generate(rng, seq);
    generated_.emplace(row_key(seq, seq + L_ - 1), c);
    return c;
  }

  // A prompt's copies: the longest segment of at least 2 symbols that occurs again, not overlapping, later.
  static Copies find_copies(const IndexArray& seq) {
    Copies best;
    const std::size_t T = seq.size();
    for (std::size_t b = 2; b < T; ++b)
      for (std::size_t a = 0; a < b; ++a) {
        std::size_t n = 0;
        while (a + n < b && b + n < T && seq(a + n) == seq(b + n)) ++n;
        if (n >= 2 && n > best.n) best = {b, b - a, n};
      }
    return best;
  }

  std::vector<Batch> to_batches(const std::vector<Index>& rows, const std::vector<Copies>& copies,
                                std::size_t B) const {
    return rows_to_batches(rows, copies.size(), L_ - 1, B, [&](std::size_t r, std::size_t q) {
      return q >= copies[r].b && q + 2 <= copies[r].b + copies[r].n;
    });
  }

  std::size_t n_max_, alphabet_, L_, eval_size_;
  Vocabulary vocab_;
  std::vector<Index> eval_rows_;  // [eval_size, L]
  std::vector<Copies> eval_copies_;
  std::vector<Index> probe_;                           // [L]
  std::unordered_map<std::string, Copies> generated_;  // input (as bytes of its ids) -> its copies
  std::map<std::size_t, std::vector<Batch>> eval_cache_;
};

}  // namespace

std::unique_ptr<DataSource> make_repeats_source(const config::RunConfig& cfg) {
  return std::make_unique<RepeatsSource>(cfg);
}

}  // namespace tf::data
