#include "tinyformer/train/step.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/optim/clip.hpp"

namespace tf::train {

bool StepResult::finite() const { return std::isfinite(loss) && bad_param.empty(); }

std::string StepResult::what_is_not_finite(const Run& run) const {
  std::string what = bad_param.empty() ? fmt::format("the loss is {}", loss)
                                       : fmt::format("the gradient of {} is not finite", bad_param);
  if (const std::string bad_value = optim::first_nonfinite_value(run.parts.model->named_parameters());
      !bad_value.empty())
    what += fmt::format(" (the weights diverged: {} holds a non-finite value; lower {} or set {})", bad_value,
                        config::keys::optimizer::lr, config::keys::training::grad_clip);
  return what;
}

namespace {

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
  for (std::size_t k = 0; k < K; ++k) micro.push_back(data::rows_of(global, (rank * K + k) * B, B));
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
  dist::allreduce_sum(&loss_sum, 1);                                            // every rank decides on the same loss
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

}  // namespace tf::train
