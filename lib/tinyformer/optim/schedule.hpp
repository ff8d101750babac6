#pragma once
// Learning-rate schedules as a small value type, nanoGPT's get_lr(it). `step` is the 0-based index of the
// optimizer step about to be taken (nanoGPT's `it`): the trainer calls opt.set_lr(schedule.at(step)) before
// opt.step(). With W = warmup_steps, D = decay_steps:
//   constant   lr
//   warmup     lr * (step + 1) / (W + 1)   for step < W  (linear, on the line through 0 at step -1: the
//              first step already gets lr/(W+1), never 0; step W-1 gets lr*W/(W+1))
//              lr                          for step >= W
//   cosine     the same warmup for step < W, then
//              min_lr + coeff * (lr - min_lr),  coeff = 0.5 * (1 + cos(pi * (step - W) / (D - W)))  for W <= step < D
//              min_lr                                                                                for step >= D
//              so at(W) = lr, at((W + D) / 2) = (lr + min_lr) / 2, at(D) = min_lr. Identical to nanoGPT
//              wherever nanoGPT is defined (it divides by zero when D == W; here that schedule drops to
//              min_lr right after the warmup).
#include <cstdint>
#include <string>

#include "tinyformer/config/config.hpp"

namespace tf::optim {

using config::ScheduleName;  // schedule.name: constant | warmup | cosine, declared in the config

struct LrSchedule {
  ScheduleName kind = ScheduleName::constant;
  double base_lr = 1e-3;          // peak learning rate, >= 0
  std::int64_t warmup_steps = 0;  // >= 0 (warmup, cosine)
  std::int64_t decay_steps = 0;   // >= warmup_steps (cosine): the step at which min_lr is reached
  double min_lr = 0.0;            // in [0, base_lr] (cosine)

  static LrSchedule constant(double lr);
  static LrSchedule warmup(double lr, std::int64_t warmup_steps);
  static LrSchedule cosine(double lr, std::int64_t warmup_steps, std::int64_t decay_steps, double min_lr);

  // Throws std::invalid_argument naming the field (LrSchedule.base_lr, .warmup_steps, .decay_steps, .min_lr),
  // its value and the valid range. Negative or non-finite values are refused for every kind; min_lr <= base_lr
  // and decay_steps >= warmup_steps are required for cosine (the only kind that uses them).
  void validate() const;
  // The learning rate for 0-based step `step` (validates first; step < 0 throws).
  double at(std::int64_t step) const;

  // The schedule a run config asks for (schedule.*, optimizer.lr; decay_steps auto = training.steps).
  static LrSchedule from_config(const config::RunConfig& cfg);
};

}  // namespace tf::optim
