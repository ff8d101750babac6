#include "tinyformer/train/step.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/infer/heads.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/optim/clip.hpp"

namespace tf::train {

bool StepResult::finite() const { return std::isfinite(loss) && bad_param.empty(); }

std::string StepResult::what_is_not_finite(const Run& run) const {
  std::string what = bad_param.empty() ? fmt::format("the loss is {}", loss)
                                       : fmt::format("the gradient of {} is not finite", bad_param);
  if (const std::string bad_value = optim::first_nonfinite_value(run.parts.model->named_parameters());
      !bad_value.empty())
    what += fmt::format(" (the weights diverged: {} holds a non-finite value; lower optimizer.lr or set "
                        "training.grad_clip)",
                        bad_value);
  return what;
}

namespace {

// Rows [first, first + count) of a batch.
data::Batch rows_of(const data::Batch& batch, std::size_t first, std::size_t count) {
  return {xt::view(batch.x, xt::range(first, first + count), xt::all()),
          xt::view(batch.y, xt::range(first, first + count), xt::all())};
}

// Forward and backward of each micro-batch; the gradients add up in the parameters' .grad. A micro-batch whose loss
// is not finite gets no backward (the step will not be applied). Returns the sum of the micro-batch losses.
double run_micro_batches(Run& run, const std::vector<data::Batch>& micro, bool record_attention, StepResult& r) {
  nn::GPT<float>& model = *run.parts.model;
  double loss_sum = 0;
  for (std::size_t k = 0; k < micro.size(); ++k) {
    model.record_attention(record_attention && k + 1 == micro.size());
    const Var<float> loss = model.loss(micro[k].x, micro[k].y);
    const double value = loss.item();
    loss_sum += value;
    r.tokens += micro[k].x.size();
    if (std::isfinite(value)) loss.backward();
  }
  return loss_sum;
}

}  // namespace

std::vector<data::Batch> draw_micro_batches(Run& run) {
  const std::size_t B = run.cfg.training.batch_size, K = run.cfg.training.grad_accum;
  const auto N = static_cast<std::size_t>(dist::size()), rank = static_cast<std::size_t>(dist::rank());
  data::Batch global = run.parts.data->train_batch(N * K * B, run.parts.data_rng);
  if (N * K == 1) return {std::move(global)};
  std::vector<data::Batch> micro;
  for (std::size_t k = 0; k < K; ++k) micro.push_back(rows_of(global, (rank * K + k) * B, B));
  return micro;
}

StepResult train_step(Run& run, long step, bool record_attention) {
  RunSetup& p = run.parts;
  StepResult r;
  r.lr = p.schedule.at(step);
  p.optimizer->set_lr(r.lr);
  const std::vector<data::Batch> micro = draw_micro_batches(run);
  p.optimizer->zero_grad();
  double loss_sum = run_micro_batches(run, micro, record_attention, r);
  const auto micro_batches = static_cast<double>(micro.size()) * dist::size();  // N x K
  dist::allreduce_sum(&loss_sum, 1);  // every rank decides on the same loss
  r.loss = loss_sum / micro_batches;
  r.tokens *= static_cast<std::size_t>(dist::size());
  r.grad_norm = NAN;
  if (std::isfinite(r.loss)) {
    r.allreduce_ms = run.reduce_gradients(p.model->parameters(), static_cast<float>(1.0 / micro_batches));
    const auto params = p.model->named_parameters();
    const double clip = run.cfg.training.grad_clip;
    r.grad_norm = clip > 0 ? optim::clip_grad_norm(params, clip) : optim::grad_norm(params);
    if (!std::isfinite(r.grad_norm)) r.bad_param = optim::first_nonfinite_grad(params);
  }
  if (r.finite())
    p.optimizer->step();
  else
    p.optimizer->zero_grad();
  return r;
}

namespace {

// What an evaluation adds up: per held-out batch the loss sum and its weight, the accuracy counts, and for data
// with an expected pattern each head's expected-pattern score times its counted queries.
struct EvalSums {
  std::vector<double> loss, weight;  // [batches]
  data::Accuracy acc;
  analysis::HeadPatternAccumulator heads;
};

// Under MPI: every rank's sums added up in rank order (dist::allreduce_sum); the expected-pattern scores of the
// ranks are merged weighted by their counted queries into `scores` [L][H] (left empty when no query counted).
void add_up_ranks(EvalSums& e, const nn::GPT<float>& model, std::vector<std::vector<double>>& scores) {
  const std::size_t L = model.config().n_layer, H = model.config().n_head, n = e.loss.size();
  std::vector<double> sums(e.loss);
  sums.insert(sums.end(), e.weight.begin(), e.weight.end());
  for (std::size_t c : {e.acc.correct_sequences, e.acc.sequences, e.acc.correct_tokens, e.acc.tokens, std::size_t{0}})
    sums.push_back(static_cast<double>(c));
  sums.resize(2 * n + 5 + L * H, 0.0);
  double* counted = &sums[2 * n + 4];
  if (e.heads.sequences() > 0) {
    const analysis::HeadScores s = e.heads.scores();
    if (const auto p = s.index_of(analysis::Pattern::expected)) {
      *counted = static_cast<double>(s.counted[*p]);
      for (std::size_t lh = 0; lh < L * H; ++lh) counted[1 + lh] = s.at(*p, lh / H, lh % H) * *counted;
    }
  }
  dist::allreduce_sum(sums.data(), sums.size());
  std::copy_n(sums.begin(), n, e.loss.begin());
  std::copy_n(sums.begin() + static_cast<long>(n), n, e.weight.begin());
  const double* a = &sums[2 * n];
  e.acc = {std::size_t(a[0]), std::size_t(a[1]), std::size_t(a[2]), std::size_t(a[3])};
  counted = &sums[2 * n + 4];
  scores.clear();
  if (*counted == 0) return;
  scores.assign(L, std::vector<double>(H));
  for (std::size_t lh = 0; lh < L * H; ++lh) scores[lh / H][lh % H] = counted[1 + lh] / *counted;
}

}  // namespace

EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t grad_accum,
                    std::size_t max_batches) {
  NoGradGuard no_grad;
  model.eval();
  const bool score_heads = !source.expected_pattern().empty();
  model.record_attention(score_heads);
  const std::size_t share = grad_accum * batch_size, global = share * static_cast<std::size_t>(dist::size());
  const auto& batches = source.eval_batches(global);
  const std::size_t n = std::min(batches.size(), max_batches);
  EvalSums e{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), {}, {}};
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t rows = batches[i].x.shape(0), mine = share * static_cast<std::size_t>(dist::rank());
    for (std::size_t first = mine; first < std::min(rows, mine + share); first += batch_size) {
      const data::Batch chunk = global == batch_size ? batches[i] : rows_of(batches[i], first, std::min(batch_size, rows - first));
      const Var<float> logits = model.forward(chunk.x);
      const data::Accuracy acc = data::accuracy_from_logits(logits.value(), chunk.y);
      // one chunk per batch: its mean as it is; several: means weighted by their scored targets
      const double weight = global == batch_size ? 1.0 : static_cast<double>(acc.tokens);
      if (weight > 0) e.loss[i] += cross_entropy(logits, chunk.y).item() * weight;
      e.weight[i] += weight;
      e.acc += acc;
      if (score_heads) infer::add_batch(e.heads, model.attention_weights(), chunk.x, source);
    }
  }
  model.record_attention(false);
  model.train();
  EvalResult r;
  if (dist::size() > 1)
    add_up_ranks(e, model, r.attention_score);
  else if (e.heads.sequences() > 0)
    r.attention_score = e.heads.scores().table(analysis::Pattern::expected);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) total += e.weight[i] > 0 ? e.loss[i] / e.weight[i] : NAN;
  r.loss = n ? total / static_cast<double>(n) : 0.0;
  if (source.is_task()) r.accuracy = e.acc.exact();
  return r;
}

}  // namespace tf::train
