#include "tinyformer/infer/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::infer {

namespace {

// What an evaluation adds up: per held-out batch the loss sum and its weight, the accuracy counts, and each head's
// pattern scores times their counted queries.
struct EvalSums {
  std::vector<double> loss, weight;  // [batches]
  data::Accuracy acc;
  analysis::HeadPatternAccumulator heads;
};

// The pattern an evaluation scores: the expected key where the data has one, else induction (text, tokens); a
// synthetic task without an expected key (modular: "a b =") has no in-context pattern to score: nullopt.
std::optional<analysis::Pattern> scored_pattern(const data::DataSource& source) {
  if (!source.expected_pattern().empty()) return analysis::Pattern::expected;
  if (source.is_task()) return std::nullopt;
  return analysis::Pattern::induction;
}

// Under MPI: every rank's sums added up in rank order (dist::allreduce_sum); the scores of each of `patterns` of the
// ranks are merged weighted by their counted queries into `scores[i]` [L][H] (left empty when no query counted).
void add_up_ranks(EvalSums& e, const nn::GPT<float>& model, const std::vector<analysis::Pattern>& patterns,
                  std::vector<std::vector<std::vector<double>>>& scores) {
  const std::size_t L = model.config().n_layer, H = model.config().n_head, n = e.loss.size();
  std::vector<double> sums(e.loss);
  sums.insert(sums.end(), e.weight.begin(), e.weight.end());
  for (std::size_t c : {e.acc.correct_sequences, e.acc.sequences, e.acc.correct_tokens, e.acc.tokens})
    sums.push_back(static_cast<double>(c));
  const std::size_t block = 1 + L * H;  // a pattern's counted queries, then its L x H weighted scores
  sums.resize(2 * n + 4 + patterns.size() * block, 0.0);
  const std::optional<analysis::HeadScores> s =
      e.heads.sequences() > 0 ? std::optional<analysis::HeadScores>(e.heads.scores()) : std::nullopt;
  for (std::size_t i = 0; i < patterns.size() && s; ++i)
    if (const auto p = s->index_of(patterns[i])) {
      double* counted = &sums[2 * n + 4 + i * block];
      *counted = static_cast<double>(s->counted[*p]);
      for (std::size_t lh = 0; lh < L * H; ++lh) counted[1 + lh] = s->at(*p, lh / H, lh % H) * *counted;
    }
  dist::allreduce_sum(sums.data(), sums.size());
  std::copy_n(sums.begin(), n, e.loss.begin());
  std::copy_n(sums.begin() + static_cast<long>(n), n, e.weight.begin());
  const double* a = &sums[2 * n];
  e.acc = {std::size_t(a[0]), std::size_t(a[1]), std::size_t(a[2]), std::size_t(a[3])};
  scores.assign(patterns.size(), {});
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const double* counted = &sums[2 * n + 4 + i * block];
    if (*counted == 0) continue;
    scores[i].assign(L, std::vector<double>(H));
    for (std::size_t lh = 0; lh < L * H; ++lh) scores[i][lh / H][lh % H] = counted[1 + lh] / *counted;
  }
}

// This rank's rows of held-out batch `i`, in pieces of `batch_size`, added to the sums.
void evaluate_share(nn::GPT<float>& model, data::DataSource& source, const data::Batch& batch, std::size_t i,
                    std::size_t batch_size, std::size_t share, std::size_t global, EvalSums& e) {
  const std::size_t rows = batch.x.shape(0), mine = share * static_cast<std::size_t>(dist::rank());
  for (std::size_t first = mine; first < std::min(rows, mine + share); first += batch_size) {
    const data::Batch chunk =
        global == batch_size ? batch : data::rows_of(batch, first, std::min(batch_size, rows - first));
    const Var<float> logits = model.forward(chunk.x);
    const data::Accuracy acc = data::accuracy_from_logits(logits.value(), chunk.y);
    // one piece per batch: its mean as it is; several: means weighted by their scored targets
    const double weight = global == batch_size ? 1.0 : static_cast<double>(acc.tokens);
    if (weight > 0) e.loss[i] += cross_entropy(logits, chunk.y).item() * weight;
    e.weight[i] += weight;
    e.acc += acc;
    add_batch(e.heads, model.attention_weights(), chunk.x, source);
  }
}

}  // namespace

EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t max_batches,
                    std::size_t grad_accum) {
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  model.record_attention(true);
  const std::size_t share = grad_accum * batch_size, global = share * static_cast<std::size_t>(dist::size());
  const auto& batches = source.eval_batches(global);
  const std::size_t n = std::min(batches.size(), max_batches);
  EvalSums e{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), {}, {}};
  for (std::size_t i = 0; i < n; ++i) evaluate_share(model, source, batches[i], i, batch_size, share, global, e);
  model.record_attention(false);
  model.train(was_training);
  EvalResult r;
  // the previous-token scores first, then the data's in-context pattern when it has one
  const std::optional<analysis::Pattern> in_context = scored_pattern(source);
  std::vector<analysis::Pattern> patterns = {analysis::Pattern::previous_token};
  if (in_context) patterns.push_back(*in_context);
  std::vector<std::vector<std::vector<double>>> scores(patterns.size());
  if (dist::size() > 1) {
    add_up_ranks(e, model, patterns, scores);
  } else if (e.heads.sequences() > 0) {
    const analysis::HeadScores s = e.heads.scores();
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      const auto p = s.index_of(patterns[i]);
      if (patterns[i] == analysis::Pattern::expected || (p && s.counted[*p] > 0)) scores[i] = s.table(patterns[i]);
    }
  }
  r.previous_token_score = std::move(scores[0]);
  if (in_context)
    (*in_context == analysis::Pattern::expected ? r.attention_score : r.induction_score) = std::move(scores[1]);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) total += e.weight[i] > 0 ? e.loss[i] / e.weight[i] : NAN;
  r.loss = n ? total / static_cast<double>(n) : 0.0;
  double nats = 0, bytes = 0;
  bool text = n > 0;
  for (std::size_t i = 0; i < n && text; ++i) {
    const std::optional<double> b = source.eval_batch_bytes(global, i);
    text = b.has_value();
    const auto& y = batches[i].y;
    const double scored =
        static_cast<double>(std::count_if(y.begin(), y.end(), [](Index t) { return t != data::kIgnore; }));
    if (text) nats += (e.weight[i] > 0 ? e.loss[i] / e.weight[i] : NAN) * scored, bytes += *b;
  }
  if (text && bytes > 0) r.bpb = nats / bytes / std::log(2.0);
  if (source.is_task()) r.accuracy = e.acc.exact();
  return r;
}

std::optional<double> training_accuracy(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size) {
  const std::vector<data::Batch>* batches = source.training_set(batch_size);
  if (!batches) return std::nullopt;
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  data::Accuracy acc;
  for (const data::Batch& b : *batches) acc += data::accuracy_from_logits(model.forward(b.x).value(), b.y);
  model.train(was_training);
  return acc.exact();
}

}  // namespace tf::infer
