#pragma once
// One training step and one evaluation, the two things the loop repeats.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/train/run.hpp"

namespace tf::train {

struct StepResult {
  double loss = 0;
  double grad_norm = 0;   // the global norm before clipping (NaN when the loss was not finite)
  double lr = 0;
  std::string bad_param;  // the first parameter whose gradient is not finite ("" when all are)
  std::size_t tokens = 0; // tokens in the batch
  bool finite() const;
  // "the loss is nan" or "the gradient of lm_head.weight is not finite", plus the first parameter whose value
  // diverged, if one has.
  std::string what_is_not_finite(const Run& run) const;
};

// Step `step` (0-based): sets the scheduled lr, draws a batch, runs forward and backward, clips (training.grad_clip)
// and, when loss and gradients are finite, applies the optimizer. With `record_attention` the model keeps this
// step's attention weights (for the logged entropy).
StepResult train_step(Run& run, long step, bool record_attention);

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;  // exact-match, for the synthetic tasks
  // [L][H] for data with an expected pattern: the fraction of each head's attention that the answer queries of the
  // held-out batches put on their expected key (analysis::Pattern::expected); empty otherwise.
  std::vector<std::vector<double>> attention_score;
};

// Mean loss over the first `max_batches` held-out batches of size `batch_size` (no grad, eval mode), and the
// heads' attention_score in the same pass.
EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t max_batches);

}  // namespace tf::train
