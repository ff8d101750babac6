#include "tinyformer/train/step.hpp"

#include <cmath>

#include <fmt/format.h>

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

StepResult train_step(Run& run, long step, bool record_attention) {
  RunSetup& p = run.parts;
  StepResult r;
  r.lr = p.schedule.at(step);
  p.optimizer->set_lr(r.lr);
  const data::Batch batch = p.data->train_batch(run.cfg.training.batch_size, p.data_rng);
  r.tokens = batch.x.size();
  p.model->record_attention(record_attention);
  p.optimizer->zero_grad();
  const Var<float> loss = p.model->loss(batch.x, batch.y);
  r.loss = loss.item();
  r.grad_norm = NAN;
  if (std::isfinite(r.loss)) {
    loss.backward();
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

EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t max_batches) {
  NoGradGuard no_grad;
  model.eval();
  const bool score_heads = !source.expected_pattern().empty();
  model.record_attention(score_heads);
  analysis::HeadPatternAccumulator heads;
  data::Accuracy acc;
  double total = 0;
  std::size_t n = 0;
  for (const auto& batch : source.eval_batches(batch_size)) {
    if (n == max_batches) break;
    const Var<float> logits = model.forward(batch.x);
    total += cross_entropy(logits, batch.y).item();
    acc += data::accuracy_from_logits(logits.value(), batch.y);
    if (score_heads) infer::add_batch(heads, model.attention_weights(), batch.x, source);
    ++n;
  }
  model.record_attention(false);
  model.train();
  EvalResult r;
  r.loss = n ? total / static_cast<double>(n) : 0.0;
  if (source.is_task()) r.accuracy = acc.exact();
  if (heads.sequences() > 0) r.attention_score = heads.scores().table(analysis::Pattern::expected);
  return r;
}

}  // namespace tf::train
