// Head-pattern scores: the formulas and the rules for which queries count are in head_patterns.hpp.
//   fraction_P(q) = sum_{j in P(q)} A[q, j] / sum_j A[q, j]       score_P = mean of fraction_P over counted queries
//   entropy(q)    = -sum_j a_j ln a_j,  a_j = A[q, j] / sum_j A[q, j]   (queries q >= 1)
#include "tinyformer/analysis/head_patterns.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::analysis {

namespace {

constexpr std::size_t kPatterns = 6;

void check_ids(const IndexArray& ids, const char* where) {
  if (ids.dimension() != 1)
    throw std::invalid_argument(
        fmt::format("{}: token ids must be one sequence [T], got {}", where, shape_str(to_shape(ids.shape()))));
}

void check_expected(const std::vector<long>& expected, std::size_t T, const char* where) {
  if (!expected.empty() && expected.size() != T)
    throw std::invalid_argument(fmt::format("{}: {} expected keys for a sequence of {} tokens: give one per query "
                                            "(-1 for none) or none",
                                            where, expected.size(), T));
  for (std::size_t q = 0; q < expected.size(); ++q)
    if (expected[q] < -1 || expected[q] > static_cast<long>(q))
      throw std::invalid_argument(fmt::format("{}: expected key {} of query {} is not in [-1, {}] (-1: none; a "
                                              "query attends to keys 0..q)",
                                              where, expected[q], q, q));
}

// Shape [L,H,T,T] of attention for ids [T].
Shape checked_attention_shape(const Array<float>& attention, const IndexArray& ids, const char* where) {
  Shape shape = to_shape(attention.shape());  // not const: returned by move
  if (shape.size() != 4 || shape[2] != shape[3] || shape_numel(shape) == 0)
    throw std::invalid_argument(fmt::format("{}: attention must be [L,H,T,T] (layers, heads, queries, keys) with L, "
                                            "H, T > 0, got {}",
                                            where, shape_str(shape)));
  check_ids(ids, where);
  if (ids.size() != shape[2])
    throw std::invalid_argument(
        fmt::format("{}: {} token ids for attention {}: give {}", where, ids.size(), shape_str(shape), shape[2]));
  return shape;
}

// The keys of query q for pattern p (ids and expected already checked).
std::vector<std::size_t> cells_of_query(Pattern p, const IndexArray& ids, const std::vector<long>& expected,
                                        std::size_t q) {
  std::vector<std::size_t> keys;
  switch (p) {
    case Pattern::previous_token:
      if (q >= 1) keys.push_back(q - 1);
      break;
    case Pattern::self:
      if (q >= 1) keys.push_back(q);
      break;
    case Pattern::first_token:
      if (q >= 1) keys.push_back(0);
      break;
    case Pattern::duplicate_token:
      for (std::size_t j = 0; j < q; ++j)
        if (ids(j) == ids(q)) keys.push_back(j);
      break;
    case Pattern::induction:
      for (std::size_t j = 0; j < q; ++j)
        if (ids(j) == ids(q)) keys.push_back(j + 1);
      break;
    case Pattern::expected:
      if (!expected.empty() && expected[q] >= 0) keys.push_back(static_cast<std::size_t>(expected[q]));
      break;
  }
  return keys;
}

// Sum of one attention row [T], refusing weights that cannot be attention.
double checked_row_sum(const float* row, std::size_t T, std::size_t l, std::size_t h, std::size_t q) {
  double sum = 0.0;
  for (std::size_t j = 0; j < T; ++j) {
    if (!std::isfinite(row[j]) || row[j] < 0.f)
      throw std::invalid_argument(fmt::format("HeadPatternAccumulator::add: attention of layer {}, head {}, query {} "
                                              "has weight {} on key {}: weights must be finite and >= 0",
                                              l, h, q, row[j], j));
    sum += row[j];
  }
  if (!(sum > 0.0))
    throw std::invalid_argument(fmt::format("HeadPatternAccumulator::add: attention of layer {}, head {}, query {} "
                                            "sums to 0: a row of attention weights must have some weight",
                                            l, h, q));
  return sum;
}

double row_entropy(const float* row, std::size_t T, double sum) {
  double e = 0.0;
  for (std::size_t j = 0; j < T; ++j)
    if (row[j] > 0.f) {
      const double a = row[j] / sum;
      e -= a * std::log(a);
    }
  return e;
}

}  // namespace

const std::vector<Pattern>& all_patterns() {
  static const std::vector<Pattern> patterns{Pattern::previous_token,  Pattern::self,      Pattern::first_token,
                                             Pattern::duplicate_token, Pattern::induction, Pattern::expected};
  return patterns;
}

std::string pattern_name(Pattern p) {
  switch (p) {
    case Pattern::previous_token:
      return "previous_token";
    case Pattern::self:
      return "self";
    case Pattern::first_token:
      return "first_token";
    case Pattern::duplicate_token:
      return "duplicate_token";
    case Pattern::induction:
      return "induction";
    case Pattern::expected:
      return "expected";
  }
  return "?";
}

std::string pattern_description(Pattern p) {
  switch (p) {
    case Pattern::previous_token:
      return "each query attends to the token just before it (key q-1)";
    case Pattern::self:
      return "each query attends to itself (key q)";
    case Pattern::first_token:
      return "each query attends to the first token (key 0), the attention sink";
    case Pattern::duplicate_token:
      return "each query attends to earlier occurrences of its own token";
    case Pattern::induction:
      return "each query attends to the token right after an earlier occurrence of its own token (induction)";
    case Pattern::expected:
      return "each answer query attends to the key the task says it needs";
  }
  return "?";
}

std::vector<std::vector<std::size_t>> pattern_cells(Pattern p, const IndexArray& ids,
                                                    const std::vector<long>& expected) {
  check_ids(ids, "pattern_cells");
  const std::size_t T = ids.size();
  check_expected(expected, T, "pattern_cells");
  std::vector<std::vector<std::size_t>> cells(T);
  for (std::size_t q = 0; q < T; ++q) cells[q] = cells_of_query(p, ids, expected, q);
  return cells;
}

void HeadPatternAccumulator::add(const Array<float>& attention, const IndexArray& ids,
                                 const std::vector<long>& expected) {
  const char* where = "HeadPatternAccumulator::add";
  const Shape shape = checked_attention_shape(attention, ids, where);
  const std::size_t L = shape[0], H = shape[1], T = shape[2];
  if (sequences_ > 0 && (L != layers_ || H != heads_))
    throw std::invalid_argument(fmt::format("{}: attention {} has {} layers and {} heads, earlier sequences had {} "
                                            "and {}",
                                            where, shape_str(shape), L, H, layers_, heads_));
  check_expected(expected, T, where);

  std::vector<std::vector<std::vector<std::size_t>>> cells;  // [P][T] keys
  for (const Pattern p : all_patterns()) cells.push_back(pattern_cells(p, ids, expected));
  // Sums of this sequence, committed only when every row passed its check.
  std::vector<double> numerator(kPatterns * L * H, 0.0), entropy(L * H, 0.0);
  for (std::size_t lh = 0; lh < L * H; ++lh)
    for (std::size_t q = 0; q < T; ++q) {
      const float* row = attention.data() + (lh * T + q) * T;  // [L,H,T,T] row-major: (l*H + h)*T + q
      const double sum = checked_row_sum(row, T, lh / H, lh % H, q);
      for (std::size_t p = 0; p < kPatterns; ++p) {
        double on_cells = 0.0;
        for (const std::size_t j : cells[p][q]) on_cells += row[j];
        numerator[p * L * H + lh] += on_cells / sum;  // a query without cells adds 0 and is not counted below
      }
      if (q >= 1) entropy[lh] += row_entropy(row, T, sum);
    }

  if (sequences_ == 0) {
    layers_ = L, heads_ = H;
    numerator_.assign(kPatterns * L * H, 0.0);
    counted_.assign(kPatterns, 0);
    baseline_sum_.assign(kPatterns, 0.0);
    entropy_sum_.assign(L * H, 0.0);
  }
  for (std::size_t i = 0; i < numerator.size(); ++i) numerator_[i] += numerator[i];
  for (std::size_t i = 0; i < entropy.size(); ++i) entropy_sum_[i] += entropy[i];
  for (std::size_t p = 0; p < kPatterns; ++p)
    for (std::size_t q = 0; q < T; ++q)
      if (!cells[p][q].empty()) {
        ++counted_[p];
        baseline_sum_[p] += static_cast<double>(cells[p][q].size()) / static_cast<double>(q + 1);
      }
  for (std::size_t q = 1; q < T; ++q) uniform_entropy_sum_ += std::log(static_cast<double>(q + 1));
  entropy_rows_ += T - 1;
  ++sequences_;
}

HeadScores HeadPatternAccumulator::scores() const {
  if (sequences_ == 0) throw std::logic_error("HeadPatternAccumulator::scores: no sequence was added");
  HeadScores s;
  s.layers = layers_;
  s.heads = heads_;
  s.sequences = sequences_;
  const std::size_t LH = layers_ * heads_;
  for (std::size_t p = 0; p < kPatterns; ++p) {
    if (counted_[p] == 0) continue;
    const double n = static_cast<double>(counted_[p]);
    s.patterns.push_back(all_patterns()[p]);
    s.counted.push_back(counted_[p]);
    s.baseline.push_back(baseline_sum_[p] / n);
    for (std::size_t lh = 0; lh < LH; ++lh) s.score.push_back(numerator_[p * LH + lh] / n);
  }
  const double rows = static_cast<double>(entropy_rows_);
  for (std::size_t lh = 0; lh < LH; ++lh) s.entropy.push_back(entropy_rows_ ? entropy_sum_[lh] / rows : 0.0);
  s.uniform_entropy = entropy_rows_ ? uniform_entropy_sum_ / rows : 0.0;
  return s;
}

HeadScores score_heads(const Array<float>& attention, const IndexArray& ids, const std::vector<long>& expected) {
  HeadPatternAccumulator acc;
  acc.add(attention, ids, expected);
  return acc.scores();
}

std::optional<std::size_t> HeadScores::index_of(Pattern p) const {
  for (std::size_t i = 0; i < patterns.size(); ++i)
    if (patterns[i] == p) return i;
  return std::nullopt;
}

double HeadScores::at(std::size_t p, std::size_t layer, std::size_t head) const {
  if (p >= patterns.size() || layer >= layers || head >= heads)
    throw std::out_of_range(fmt::format("HeadScores::at: pattern {}, layer {}, head {} is outside {} patterns x {} "
                                        "layers x {} heads",
                                        p, layer, head, patterns.size(), layers, heads));
  return score.at((p * layers + layer) * heads + head);
}

std::vector<std::vector<double>> HeadScores::table(Pattern p) const {
  const auto i = index_of(p);
  if (!i) return {};
  std::vector<std::vector<double>> t(layers, std::vector<double>(heads));
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t h = 0; h < heads; ++h) t[l][h] = at(*i, l, h);
  return t;
}

std::vector<std::vector<double>> HeadScores::entropy_table() const {
  std::vector<std::vector<double>> t(layers, std::vector<double>(heads));
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t h = 0; h < heads; ++h) t[l][h] = entropy.at(l * heads + h);
  return t;
}

std::string HeadVerdict::label() const {
  if (diffuse) return fmt::format("diffuse (entropy {:.2f} nats; best: {} {:.2f})", entropy, pattern_name(best), score);
  return fmt::format("{} {:.2f}", pattern_name(best), score);
}

std::vector<double> mean_entropy(const Array<float>& weights) {
  if (weights.dimension() != 4)
    throw std::invalid_argument(
        fmt::format("mean_entropy: weights must be [B,H,T,T], got {}", shape_str(to_shape(weights.shape()))));
  const std::size_t B = weights.shape()[0], H = weights.shape()[1], T = weights.shape()[2];
  std::vector<double> out(H, 0.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t q = 1; q < T; ++q) {
        const float* row = weights.data() + ((b * H + h) * T + q) * T;
        double sum = 0.0;
        for (std::size_t j = 0; j < T; ++j) sum += row[j];
        out[h] += row_entropy(row, T, sum);
      }
  for (auto& v : out) v = T > 1 ? v / static_cast<double>(B * (T - 1)) : 0.0;
  return out;
}

std::vector<HeadVerdict> verdicts(const HeadScores& scores, double threshold) {
  if (scores.patterns.empty())
    throw std::invalid_argument("verdicts: the scores have no pattern (no sequence had a counted query)");
  std::vector<HeadVerdict> out;
  for (std::size_t l = 0; l < scores.layers; ++l)
    for (std::size_t h = 0; h < scores.heads; ++h) {
      std::size_t best = 0;
      for (std::size_t p = 1; p < scores.patterns.size(); ++p)
        if (scores.at(p, l, h) > scores.at(best, l, h)) best = p;
      HeadVerdict v;
      v.layer = l;
      v.head = h;
      v.best = scores.patterns[best];
      v.score = scores.at(best, l, h);
      v.baseline = scores.baseline[best];
      v.entropy = scores.entropy.at(l * scores.heads + h);
      v.diffuse = !(v.score >= threshold);
      out.push_back(v);
    }
  return out;
}

BestHead best_head(const std::vector<std::vector<double>>& table) {
  if (table.empty() || table[0].empty()) throw std::invalid_argument("best_head: the score table [L][H] is empty");
  BestHead best{0, 0, table[0][0]};
  for (std::size_t l = 0; l < table.size(); ++l) {
    if (table[l].size() != table[0].size())
      throw std::invalid_argument(
          fmt::format("best_head: layer {} has {} heads, layer 0 has {}", l, table[l].size(), table[0].size()));
    for (std::size_t h = 0; h < table[l].size(); ++h)
      if (table[l][h] > best.score || (std::isnan(best.score) && !std::isnan(table[l][h]))) best = {l, h, table[l][h]};
  }
  return best;
}

}  // namespace tf::analysis
