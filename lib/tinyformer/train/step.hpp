#pragma once
// One training step, the thing the loop repeats (the evaluation is infer::evaluate). It is collective under MPI
// (every rank calls it at the same steps): a step draws the global batch, runs this rank's share of it and
// all-reduces the loss and the gradients.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/infer/evaluate.hpp"
#include "tinyformer/train/run.hpp"

namespace tf::train {

struct StepResult {
  double loss = 0;       // the mean over the step's N x K micro-batches (all ranks)
  double grad_norm = 0;  // the global norm before clipping (NaN when the loss was not finite)
  double lr = 0;
  std::string bad_param;    // the first parameter whose gradient is not finite ("" when all are)
  std::size_t tokens = 0;   // tokens of the step, all ranks
  double allreduce_ms = 0;  // time in the gradient all-reduce (0 with one process)
  bool finite() const;
  // "the loss is nan" or "the gradient of lm_head.weight is not finite", plus the first parameter whose value
  // diverged, if one has.
  std::string what_is_not_finite(const Run& run) const;
};

// This rank's K = training.grad_accum micro-batches of B = training.batch_size. Every rank draws the whole global
// batch of N x K x B sequences from the same generator (so the generator, and a checkpoint's copy of it, is the
// same on every rank), keeps rows [rank x K x B, (rank + 1) x K x B) and cuts them into K batches of B. One process
// with batch_size N x K x B draws exactly these rows.
std::vector<data::Batch> draw_micro_batches(Run& run);

// Step `step` (0-based): sets the scheduled lr, draws the micro-batches, runs forward and backward on each (the
// gradients add up), all-reduces the loss and the gradients over the ranks and takes their mean over all N x K
// micro-batches, clips (training.grad_clip) and, when loss and gradients are finite, applies the optimizer. Every
// rank ends with the same loss, gradients and weights. With `record_attention` the model keeps the attention
// weights of this rank's last micro-batch (for the logged entropy).
StepResult train_step(Run& run, long step, bool record_attention);

}  // namespace tf::train
