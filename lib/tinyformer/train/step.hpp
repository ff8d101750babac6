#pragma once
// One training step, the thing the loop repeats (the evaluation is infer::evaluate).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/infer/evaluate.hpp"
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

}  // namespace tf::train
