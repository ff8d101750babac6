#include "tinyformer/train/run_log.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/analysis/head_patterns.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/optim/clip.hpp"

namespace tf::train {

std::string format_duration(double seconds) {
  const long s = std::lround(seconds);
  return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60) : fmt::format("{}m{:02}s", s / 60, s % 60);
}

std::string progress_line(const Progress& p) {
  const long done_here = p.done - p.start;
  const double per_step = done_here > 0 ? p.elapsed_s / static_cast<double>(done_here) : 0.0;
  std::string line = fmt::format("step {:>6}/{} | loss {:.4f} | lr {:.2e} | {:.0f} tok/s | {} elapsed | ETA {}", p.done,
                                 p.total, p.loss, p.lr, p.tokens_per_s, format_duration(p.elapsed_s),
                                 format_duration(per_step * static_cast<double>(p.total - p.done)));
  if (p.val_loss) line += fmt::format(" | val {:.4f}", *p.val_loss);
  if (p.val_bpb) line += fmt::format(" | bpb {:.4f}", *p.val_bpb);
  if (p.train_accuracy) line += fmt::format(" | train acc {:.3f}", *p.train_accuracy);
  if (p.accuracy) line += fmt::format(" | acc {:.3f}", *p.accuracy);
  return line;
}

std::string summary_line(const TrainResult& r) {
  std::string line = fmt::format("tinyformer: {}: step {} of {} ({} this run{})", r.interrupted ? "stopped" : "done",
                                 r.steps_done, r.total_steps, r.steps_done - r.start_step,
                                 r.steps_skipped > 0 ? fmt::format(", {} skipped", r.steps_skipped) : "");
  if (r.steps_done - r.start_step > r.steps_skipped) line += fmt::format(" | train loss {:.4f}", r.last_train_loss);
  if (r.last_val_loss) line += fmt::format(" | val loss {:.4f}", *r.last_val_loss);
  if (r.last_val_bpb) line += fmt::format(" | val bpb {:.4f}", *r.last_val_bpb);
  if (r.last_accuracy) line += fmt::format(" | accuracy {:.3f}", *r.last_accuracy);
  if (r.out_of_time) line += fmt::format(" | time budget {} used", config::keys::training::max_seconds);
  return line + fmt::format(" | {:.1f} s | out {}", r.wall_seconds, r.out_dir);
}

RunLog::RunLog(Run& run, bool progress)
    : run_(run),
      progress_(progress),
      tty_(progress && isatty(STDOUT_FILENO) && dist::size() == 1),
      t0_(Clock::now()),
      t_row_(t0_),
      t_drawn_(t0_) {}  // under mpirun stdout is a pseudo-terminal whatever mpirun's own is: one line
                        // per row

void RunLog::count(long done, const StepResult& s) {
  tokens_since_row_ += static_cast<double>(s.tokens);
  tokens_since_drawn_ += static_cast<double>(s.tokens);
  allreduce_ms_since_row_ += s.allreduce_ms;
  ++steps_since_row_;
  if (!tty_) return;
  const auto now = Clock::now();
  const double secs = std::chrono::duration<double>(now - t_drawn_).count();
  if (secs < 1.0) return;
  Progress p;
  p.done = done, p.total = run_.total_steps(), p.start = run_.start_step, p.loss = s.loss, p.lr = s.lr;
  p.tokens_per_s = tokens_since_drawn_ / secs;
  p.elapsed_s = std::chrono::duration<double>(now - t0_).count();
  draw(p, false);
}

// On a terminal the line is redrawn in place (kept, with its newline, when it holds an evaluation); otherwise each
// line is printed on its own.
// A write that fails (a signal interrupted it while stdout was full, a closed pipe) ends the progress lines, not the
// run.
void RunLog::draw(const Progress& p, bool keep) {
  bool written = true;
  try {
    if (tty_) {
      fmt::print("\r{:<120}{}", progress_line(p), keep ? "\n" : "");
      line_open_ = !keep;
    } else {
      fmt::print("{}\n", progress_line(p));
    }
  } catch (const std::system_error&) {  // fmt::print on a short write
    written = false;
  }
  if (!written || std::fflush(stdout) != 0) {  // no second write after a failed one
    std::clearerr(stdout);
    progress_ = tty_ = line_open_ = false;
  }
  t_drawn_ = Clock::now();
  tokens_since_drawn_ = 0;
}

void RunLog::end_line() {
  if (!line_open_) return;
  fmt::print("\n");
  line_open_ = false;
}

std::string RunLog::row(long done, const StepResult& s, const std::vector<Array<float>>& attention,
                        const std::optional<infer::EvalResult>& eval) {
  if (!dist::is_root()) return "";
  nlohmann::json row = {{"step", done},
                        {"train_loss", s.loss},
                        {"lr", s.lr},
                        {"grad_norm", s.grad_norm},
                        {"weight_norm", optim::weight_norm(run_.parts.model->named_parameters())}};
  const auto now = Clock::now();
  const double secs = std::chrono::duration<double>(now - t_row_).count();
  const double tokens_per_s = secs > 0 ? tokens_since_row_ / secs : 0.0;
  row["tokens_per_s"] = tokens_per_s;
  if (dist::size() > 1 && steps_since_row_ > 0)
    row["allreduce_ms"] = allreduce_ms_since_row_ / static_cast<double>(steps_since_row_);
  t_row_ = now;
  tokens_since_row_ = allreduce_ms_since_row_ = 0;
  steps_since_row_ = 0;
  if (!attention.empty()) {
    nlohmann::json entropy = nlohmann::json::array();
    for (const auto& w : attention) entropy.push_back(analysis::mean_entropy(w));
    row["attention_entropy"] = entropy;
  }
  if (eval) {
    row["val_loss"] = eval->loss;
    if (eval->bpb) row["val_bpb"] = *eval->bpb;
    if (eval->accuracy) row["accuracy"] = *eval->accuracy;
    if (eval->train_accuracy) row["train_accuracy"] = *eval->train_accuracy;
    if (!eval->attention_score.empty()) row["attention_score"] = eval->attention_score;
    if (!eval->induction_score.empty()) row["induction_score"] = eval->induction_score;
    if (!eval->previous_token_score.empty()) row["previous_token_score"] = eval->previous_token_score;
  }
  std::string text = row.dump();
  run_.metrics.write(text + "\n");
  if (!progress_) return text;

  Progress p;
  p.done = done, p.total = run_.total_steps(), p.start = run_.start_step, p.loss = s.loss, p.lr = s.lr;
  p.tokens_per_s = tokens_per_s;
  p.elapsed_s = std::chrono::duration<double>(now - t0_).count();
  if (eval) p.val_loss = eval->loss;
  if (eval) p.val_bpb = eval->bpb;
  if (eval && eval->accuracy) p.accuracy = *eval->accuracy;
  if (eval) p.train_accuracy = eval->train_accuracy;
  draw(p, eval.has_value());
  return text;
}

}  // namespace tf::train
