#pragma once
// What a run tells: one JSON object per logged step in metrics.jsonl, and the progress lines on stdout: on a terminal
// one line refreshed in place at every row and, between rows, about once a second; otherwise one line per row. Under
// MPI rank 0 alone writes them.
#include <chrono>
#include <optional>
#include <vector>

#include "tinyformer/train/step.hpp"
#include "tinyformer/train/trainer.hpp"

namespace tf::train {

// "0m07s", "12m30s", "2h05m".
std::string format_duration(double seconds);

// What a progress line shows.
struct Progress {
  long done = 0, total = 0, start = 0;  // steps done, training.steps, the step this run started from
  double loss = 0, lr = 0, tokens_per_s = 0, elapsed_s = 0;
  std::optional<double> val_loss, val_bpb, accuracy, train_accuracy;
};
// "step    120/400 | loss 0.4321 | lr 9.51e-04 | 51234 tok/s | 0m03s elapsed | ETA 0m07s" (| val ..., | bpb ...
// for text, | train acc ... for a fixed training set, | acc ...);
// the ETA from this run's mean time per step.
std::string progress_line(const Progress& p);
// The run's last line, printed with and without --quiet: "tinyformer: done: step 400 of 400 (400 this run) | train
// loss 0.0123 | val loss 0.0234 | accuracy 0.998 | 12.3 s (| val bpb 2.1234 after the val loss, for text) | out
// runs/reverse" ("stopped" when interrupted; "(40 this run, 3 skipped)" with training.nonfinite skip; the losses are
// the last finite ones).
std::string summary_line(const TrainResult& r);

class RunLog {
 public:
  RunLog(Run& run, bool progress);

  // Counts step `done`'s tokens (all ranks') towards the next row's tokens/s, and its all-reduce time. On a
  // terminal, refreshes the progress line when a second has passed since it was last drawn.
  void count(long done, const StepResult& s);
  // The row of step `done`: step, train_loss, lr, grad_norm, weight_norm (of the parameters' values), tokens_per_s
  // since the last row; attention_entropy [L][H] when `attention` (per layer [B,H,T,T]) is given; val_loss, val_bpb
  // (text), accuracy, train_accuracy (a fixed training set: modular), attention_score or induction_score and
  // previous_token_score [L][H] when `eval` is; under MPI allreduce_ms, the mean time per step in the gradient
  // all-reduce since the last row. Written to metrics.jsonl at once, then the progress line. Returns the row (JSON;
  // "" on a rank other than 0).
  std::string row(long done, const StepResult& s, const std::vector<Array<float>>& attention,
                  const std::optional<infer::EvalResult>& eval);
  // Ends a line left open by an in-place refresh, so that the next print starts on a line of its own.
  void end_line();

 private:
  using Clock = std::chrono::steady_clock;
  Run& run_;
  bool progress_, tty_;
  Clock::time_point t0_, t_row_, t_drawn_;
  bool line_open_ = false;  // a refreshed line without its newline is on the terminal
  double tokens_since_row_ = 0, allreduce_ms_since_row_ = 0, tokens_since_drawn_ = 0;
  void draw(const Progress& p, bool keep);
  long steps_since_row_ = 0;
};

}  // namespace tf::train
