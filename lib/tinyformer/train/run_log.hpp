#pragma once
// What a run tells: one JSON object per logged step in metrics.jsonl, and the progress lines on stdout (one line
// refreshed in place on a terminal, one line per row otherwise).
#include <chrono>
#include <optional>
#include <vector>

#include "tinyformer/train/step.hpp"

namespace tf::train {

class RunLog {
 public:
  RunLog(Run& run, bool progress);

  // Counts a step's tokens towards the next row's tokens/s.
  void count(const StepResult& s) { tokens_since_row_ += static_cast<double>(s.tokens); }
  // The row of step `done`: step, train_loss, lr, grad_norm, tokens_per_s since the last row; attention_entropy
  // [L][H] when `attention` (per layer [B,H,T,T]) is given; val_loss, accuracy and attention_score [L][H] when
  // `eval` is. Written to
  // metrics.jsonl at once, then the progress line.
  void row(long done, const StepResult& s, const std::vector<Array<float>>& attention,
           const std::optional<infer::EvalResult>& eval);

 private:
  using Clock = std::chrono::steady_clock;
  Run& run_;
  bool progress_, tty_;
  Clock::time_point t0_, t_row_;
  double tokens_since_row_ = 0;
};

}  // namespace tf::train
