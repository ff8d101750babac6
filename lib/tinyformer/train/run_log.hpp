#pragma once
// What a run tells: one JSON object per logged step in metrics.jsonl, and the progress lines on stdout (one line
// refreshed in place on a terminal, one line per row otherwise). Under MPI rank 0 alone writes them.
#include <chrono>
#include <optional>
#include <vector>

#include "tinyformer/train/step.hpp"

namespace tf::train {

class RunLog {
 public:
  RunLog(Run& run, bool progress);

  // Counts a step's tokens (all ranks') towards the next row's tokens/s, and its all-reduce time.
  void count(const StepResult& s) {
    tokens_since_row_ += static_cast<double>(s.tokens);
    allreduce_ms_since_row_ += s.allreduce_ms;
    ++steps_since_row_;
  }
  // The row of step `done`: step, train_loss, lr, grad_norm, tokens_per_s since the last row; attention_entropy
  // [L][H] when `attention` (per layer [B,H,T,T]) is given; val_loss, accuracy and attention_score [L][H] when
  // `eval` is; under MPI allreduce_ms, the mean time per step in the gradient all-reduce since the last row. Written to
  // metrics.jsonl at once, then the progress line.
  void row(long done, const StepResult& s, const std::vector<Array<float>>& attention,
           const std::optional<infer::EvalResult>& eval);

 private:
  using Clock = std::chrono::steady_clock;
  Run& run_;
  bool progress_, tty_;
  Clock::time_point t0_, t_row_;
  double tokens_since_row_ = 0, allreduce_ms_since_row_ = 0;
  long steps_since_row_ = 0;
};

}  // namespace tf::train
