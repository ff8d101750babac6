#include "tinyformer/train/run_log.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/analysis/heads.hpp"
#include "tinyformer/dist/dist.hpp"

namespace tf::train {

namespace {

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60) : fmt::format("{}m{:02}s", s / 60, s % 60);
}

}  // namespace

RunLog::RunLog(Run& run, bool progress)
    : run_(run), progress_(progress), tty_(progress && isatty(STDOUT_FILENO) && dist::size() == 1), t0_(Clock::now()),
      t_row_(t0_) {}  // under mpirun stdout is a pseudo-terminal whatever mpirun's own is: one line per row

void RunLog::row(long done, const StepResult& s, const std::vector<Array<float>>& attention,
                 const std::optional<infer::EvalResult>& eval) {
  if (!dist::is_root()) return;
  nlohmann::json row = {{"step", done}, {"train_loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm}};
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
    if (eval->accuracy) row["accuracy"] = *eval->accuracy;
    if (!eval->attention_score.empty()) row["attention_score"] = eval->attention_score;
  }
  run_.metrics << row.dump() << '\n' << std::flush;
  if (!progress_) return;

  const long total = run_.total_steps();
  const double elapsed = std::chrono::duration<double>(now - t0_).count();
  const double per_step = elapsed / static_cast<double>(done - run_.start_step);
  std::string line = fmt::format("step {:>6}/{} | loss {:.4f} | lr {:.2e} | {:.0f} tok/s | ETA {}", done, total, s.loss,
                                 s.lr, tokens_per_s, format_duration(per_step * static_cast<double>(total - done)));
  if (eval) line += fmt::format(" | val {:.4f}", eval->loss);
  if (eval && eval->accuracy) line += fmt::format(" | acc {:.3f}", *eval->accuracy);
  if (tty_)
    fmt::print("\r{:<110}{}", line, eval ? "\n" : "");
  else
    fmt::print("{}\n", line);
  std::fflush(stdout);
}

}  // namespace tf::train
