#include "tinyformer/train/step.hpp"

#include <cmath>

#include <fmt/format.h>

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

}  // namespace tf::train
