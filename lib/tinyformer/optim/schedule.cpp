// Learning-rate schedules: constant, linear warmup, warmup + cosine decay (nanoGPT's get_lr).
#include "tinyformer/optim/schedule.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::optim {

LrSchedule LrSchedule::constant(double lr) {
  LrSchedule s;
  s.kind = ScheduleName::constant;
  s.base_lr = lr;
  s.validate();
  return s;
}

LrSchedule LrSchedule::warmup(double lr, std::int64_t warmup_steps) {
  LrSchedule s;
  s.kind = ScheduleName::warmup;
  s.base_lr = lr;
  s.warmup_steps = warmup_steps;
  s.validate();
  return s;
}

LrSchedule LrSchedule::cosine(double lr, std::int64_t warmup_steps, std::int64_t decay_steps, double min_lr) {
  LrSchedule s;
  s.kind = ScheduleName::cosine;
  s.base_lr = lr;
  s.warmup_steps = warmup_steps;
  s.decay_steps = decay_steps;
  s.min_lr = min_lr;
  s.validate();
  return s;
}

void LrSchedule::validate() const {
  const std::string k = config::to_string(kind);
  if (!(std::isfinite(base_lr) && base_lr >= 0))
    throw std::invalid_argument(
        fmt::format("LrSchedule ({}): base_lr must be a finite number >= 0, got {}", k, base_lr));
  if (warmup_steps < 0)
    throw std::invalid_argument(fmt::format("LrSchedule ({}): warmup_steps must be >= 0, got {}", k, warmup_steps));
  if (decay_steps < 0)
    throw std::invalid_argument(fmt::format("LrSchedule ({}): decay_steps must be >= 0, got {}", k, decay_steps));
  if (!(std::isfinite(min_lr) && min_lr >= 0))
    throw std::invalid_argument(fmt::format("LrSchedule ({}): min_lr must be a finite number >= 0, got {}", k, min_lr));
  if (kind == ScheduleName::cosine) {
    if (min_lr > base_lr)
      throw std::invalid_argument(fmt::format(
          "LrSchedule (cosine): min_lr = {} is larger than base_lr = {}; valid: 0 to {}", min_lr, base_lr, base_lr));
    if (decay_steps < warmup_steps)
      throw std::invalid_argument(
          fmt::format("LrSchedule (cosine): decay_steps = {} is less than warmup_steps = {}; valid: {} or more",
                      decay_steps, warmup_steps, warmup_steps));
  }
}

double LrSchedule::at(std::int64_t step) const {
  validate();
  if (step < 0) throw std::invalid_argument(fmt::format("LrSchedule::at: step must be >= 0 (0-based), got {}", step));
  if (kind == ScheduleName::constant) return base_lr;
  // Linear warmup, evaluated in nanoGPT's order: (lr * (it + 1)) / (warmup + 1).
  if (step < warmup_steps) return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
  if (kind == ScheduleName::warmup) return base_lr;
  if (step >= decay_steps) return min_lr;
  const double ratio = static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps - warmup_steps);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));
  return min_lr + coeff * (base_lr - min_lr);
}

LrSchedule LrSchedule::from_config(const config::RunConfig& cfg) {
  const double lr = cfg.optimizer.lr;
  const auto warmup_steps = static_cast<std::int64_t>(cfg.schedule.warmup_steps);
  switch (cfg.schedule.name) {
    case ScheduleName::constant:
      return constant(lr);
    case ScheduleName::warmup:
      return warmup(lr, warmup_steps);
    case ScheduleName::cosine:
      return cosine(lr, warmup_steps, static_cast<std::int64_t>(config::effective_decay_steps(cfg)),
                    cfg.schedule.min_lr);
  }
  throw std::logic_error("LrSchedule::from_config: unhandled schedule");
}

}  // namespace tf::optim
