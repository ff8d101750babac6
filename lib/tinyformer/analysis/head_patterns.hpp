#pragma once
// What each attention head does, in numbers: how much of its attention lands on the cells of named patterns
// (previous token, self, first token, duplicate token, induction, and a task's expected key), and how spread out
// it is (entropy). Depends on tensor/ only; the trainer and the app feed it attention weights and token ids.
//
// Patterns. Over one sequence of token ids x[0..T), a pattern gives each query q a set of key positions, its
// "pattern cells" (q, j), always with j <= q (causal attention cannot look ahead):
//   previous_token   {q-1}                                   for q >= 1
//   self             {q}                                     for q >= 1
//   first_token      {0}                                     for q >= 1   (the "attention sink")
//   duplicate_token  {j : j < q, x[j] == x[q]}               earlier occurrences of the current token
//   induction        {j+1 : j < q, x[j] == x[q]}             the token right after an earlier occurrence of the
//                                                            current token (j+1 <= q always holds)
//   expected         {e[q]} when e[q] >= 0                   e: the key each query should attend to, as
//                                                            data::DataSource::expected_attention returns (-1: none)
// A query counts for a pattern only when its set is not empty. Query 0 never counts for self and first_token:
// under the causal mask it can only attend to key 0, so every head would score 1 on it and learn nothing from it.
// (duplicate_token and induction have no cells at q = 0 anyway; expected counts every query given a key.)
//
// Score of a head for a pattern P:
//   score_P = (1 / N_P) * sum over counted queries (s, q) of  sum_{j in P(s, q)} A_s[q, j] / sum_j A_s[q, j]
// the fraction of each query's attention on its pattern cells, averaged over the N_P queries that count, over all
// sequences s added (numerators are summed over sequences and divided by the total count, so a sequence weighs
// as much as it has counted queries). It is in [0, 1]; 1 means every counted query looks only at its cells.
// The uniform baseline of P is the same average for a head that spreads evenly over the q+1 visible keys:
// (1 / N_P) * sum |P(s, q)| / (q + 1); a score near the baseline means the head does not prefer the pattern.
//
// Entropy of a head: the mean over queries q >= 1 of all sequences of  -sum_j a_j ln a_j,  a_j = A[q, j] / sum_j A[q,
// j] (nats; query 0 is left out for the same reason as above). A head spread evenly over the q+1 visible keys has
// entropy ln(q+1); HeadScores::uniform_entropy is the mean of that over the same queries.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::analysis {

enum class Pattern { previous_token, self, first_token, duplicate_token, induction, expected };

// Every pattern, in the order used everywhere (ties between patterns go to the earlier one).
const std::vector<Pattern>& all_patterns();
// "previous_token", "self", "first_token", "duplicate_token", "induction", "expected".
std::string pattern_name(Pattern p);
// One sentence for a person: what the pattern's cells are.
std::string pattern_description(Pattern p);

// The pattern cells of one sequence: for each query q of ids [T], the keys j (ascending) that the pattern marks,
// following the rules above. `expected` is [T] (a key or -1 per query) or empty (then the expected pattern has no
// cells). Throws std::invalid_argument when ids is not 1-D, `expected` is neither empty nor [T], or an expected key
// is below -1 or after its query (causal attention cannot reach it).
std::vector<std::vector<std::size_t>> pattern_cells(Pattern p, const IndexArray& ids,
                                                    const std::vector<long>& expected = {});

// The result of HeadPatternAccumulator: scores of the patterns that had at least one counted query.
struct HeadScores {
  std::size_t layers = 0;            // L
  std::size_t heads = 0;             // H
  std::size_t sequences = 0;         // sequences added
  std::vector<Pattern> patterns;     // [P] the patterns with counted queries, in all_patterns() order
  std::vector<std::size_t> counted;  // [P] counted queries of each pattern over all sequences (> 0)
  std::vector<double> baseline;      // [P] score of a uniform causal head
  std::vector<double> score;         // [P][L][H] row-major
  std::vector<double> entropy;       // [L][H] mean row entropy in nats (queries q >= 1)
  double uniform_entropy = 0.0;      // mean of ln(q+1) over the same queries

  // Index of a pattern in `patterns`, or nullopt when it had no counted query.
  std::optional<std::size_t> index_of(Pattern p) const;
  // score[p][l][h] with bounds checks (std::out_of_range).
  double at(std::size_t p, std::size_t layer, std::size_t head) const;
  // One pattern's scores as a table [L][H]; empty when the pattern had no counted query.
  std::vector<std::vector<double>> table(Pattern p) const;
  // The entropies as a table [L][H].
  std::vector<std::vector<double>> entropy_table() const;
};

// Sums over sequences, then HeadScores. Usage:
//   HeadPatternAccumulator acc;
//   for (each sequence) acc.add(attention /*[L,H,T,T]*/, ids /*[T]*/, source.expected_attention(ids));
//   HeadScores s = acc.scores();
class HeadPatternAccumulator {
 public:
  // attention [L,H,T,T] (layers, heads, queries, keys) of one sequence, its token ids [T] and optionally the expected
  // key of each query ([T], -1 for none; empty: no expected pattern for this sequence). T may differ between calls;
  // L and H may not. Throws std::invalid_argument (nothing added) on a bad shape, an L or H that differs from the
  // first call, a bad expected key (see pattern_cells), or an attention row with a negative or non-finite weight
  // or a zero sum, naming layer, head and query.
  void add(const Array<float>& attention, const IndexArray& ids, const std::vector<long>& expected = {});

  std::size_t sequences() const { return sequences_; }
  // The scores so far. Throws std::logic_error when nothing was added.
  HeadScores scores() const;

 private:
  std::size_t layers_ = 0, heads_ = 0, sequences_ = 0;
  std::vector<double> numerator_;     // [P_all][L][H] sums of per-query fractions
  std::vector<std::size_t> counted_;  // [P_all]
  std::vector<double> baseline_sum_;  // [P_all]
  std::vector<double> entropy_sum_;   // [L][H]
  std::size_t entropy_rows_ = 0;
  double uniform_entropy_sum_ = 0.0;
};

// Convenience: the scores of one sequence.
HeadScores score_heads(const Array<float>& attention, const IndexArray& ids, const std::vector<long>& expected = {});

// The mean row entropy (nats, queries q >= 1 as above) of each head of one layer's batch of weights [B,H,T,T]: [H].
// (The trainer logs this for the batch it just trained on.) Throws std::invalid_argument for another rank.
std::vector<double> mean_entropy(const Array<float>& weights);

// A head is named after its best pattern when that pattern scores at least this; otherwise it is "diffuse".
// 0.4 is well above what a head spread evenly over the visible keys gets for one-key patterns on sequences of
// 4 tokens or more (the mean of 1/(q+1) over q = 1..T-1: 0.36 at T = 4, 0.21 at T = 10, 0.17 at T = 16), and
// below the 0.5 that a head splitting its attention between two patterns still gets for each.
inline constexpr double kPatternThreshold = 0.4;

// The verdict on one head.
struct HeadVerdict {
  std::size_t layer = 0;
  std::size_t head = 0;
  bool diffuse = false;                    // no pattern reached the threshold
  Pattern best = Pattern::previous_token;  // the best-scoring pattern (also when diffuse)
  double score = 0.0;                      // its score
  double baseline = 0.0;                   // its uniform baseline
  double entropy = 0.0;                    // the head's mean row entropy (nats)
  // "previous_token 0.93" or "diffuse (entropy 1.85 nats; best: induction 0.21)".
  std::string label() const;
};

// One verdict per head, layer by layer ([L*H], head fastest): the best pattern (highest score; ties go to the
// earlier pattern in all_patterns()), or diffuse when it scores below `threshold`. Throws std::invalid_argument
// when `scores` has no pattern.
std::vector<HeadVerdict> verdicts(const HeadScores& scores, double threshold = kPatternThreshold);

// A head and its score for one pattern.
struct BestHead {
  std::size_t layer = 0;
  std::size_t head = 0;
  double score = 0.0;
};

// The head with the highest score in a table [L][H] (the first one on ties; NaN entries are passed over). Throws
// std::invalid_argument when the table is empty or ragged.
BestHead best_head(const std::vector<std::vector<double>>& table);

}  // namespace tf::analysis
