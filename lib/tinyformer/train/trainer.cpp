// The training loop behind `tinyformer train`, as nanoGPT's: open (or resume) the run, then per step: train,
// stop or skip on a non-finite step, log and evaluate, snapshot the attention, checkpoint; finally the report.
// Each of these is a named function (run.cpp, step.cpp, run_log.cpp, run_report.cpp).
#include "tinyformer/train/trainer.hpp"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/train/run.hpp"
#include "tinyformer/train/run_log.hpp"
#include "tinyformer/train/run_report.hpp"
#include "tinyformer/train/step.hpp"

namespace fs = std::filesystem;

namespace tf::train {

namespace {

bool every(long done, std::size_t interval) { return interval > 0 && done % static_cast<long>(interval) == 0; }

// training.nonfinite: `stop` throws naming the step and the last good checkpoint; `skip` warns and goes on.
void handle_nonfinite(Run& run, const StepResult& s, long done) {
  const std::string what = s.what_is_not_finite(run);
  if (run.cfg.training.nonfinite == config::NonFinitePolicy::stop) {
    run.parts.model->record_attention(false);
    throw std::runtime_error(fmt::format(
        "step {}: {}; training stopped (training.nonfinite: stop). The last good checkpoint is {}{}", done, what,
        run.checkpoint_path, fs::exists(run.checkpoint_path) ? "" : " (none written yet)"));
  }
  fmt::print(stderr, "tinyformer: step {}: {}; step skipped (training.nonfinite: skip)\n", done, what);
}

void record(TrainResult& result, const StepResult& s, long done) {
  result.train_losses.push_back(s.loss);
  result.last_train_loss = s.loss;
  result.steps_done = done;
}

}  // namespace

TrainResult train(const TrainOptions& options) {
  std::vector<std::string> notes;
  Run run = open_run(options, notes);
  const config::RunConfig& cfg = run.cfg;
  nn::GPT<float>& model = *run.parts.model;
  if (options.progress) {
    for (const auto& note : notes) fmt::print("tinyformer: {}\n", note);
    fmt::print("tinyformer: {} | {} parameters | {} steps from step {} | out {}\n", run.parts.data->describe(),
               model.num_parameters(), cfg.training.steps, run.start_step, run.out_dir);
  }
  RunLog log(run, options.progress);
  TrainResult result;
  result.out_dir = run.out_dir;
  const long total = run.total_steps();
  for (long step = run.start_step; step < total; ++step) {
    const long done = step + 1;
    const bool last = done == total;
    const bool log_now = every(done, cfg.logging.log_interval) || last;
    const StepResult s = train_step(run, step, log_now);
    if (!s.finite()) {
      handle_nonfinite(run, s, done);
      continue;
    }
    record(result, s, done);
    log.count(s);
    const bool eval_now = every(done, cfg.training.eval_interval) || last;
    if (log_now || eval_now) {
      std::optional<EvalResult> eval;
      if (eval_now) eval = evaluate(model, *run.parts.data, cfg.training.batch_size, cfg.training.eval_batches);
      if (eval) result.last_val_loss = eval->loss;
      if (eval && eval->accuracy) result.last_accuracy = eval->accuracy;
      log.row(done, s, log_now ? model.attention_weights() : std::vector<Array<float>>{}, eval);
    }
    model.record_attention(false);
    if (every(done, cfg.logging.attention_interval) || (last && cfg.logging.attention_interval > 0))
      write_attention_snapshot(run.out_dir, done, model, *run.parts.data, run.parts.probe);
    const bool stop_now = options.stop && options.stop->load();
    if (every(done, cfg.logging.checkpoint_interval) || last || stop_now) run.save(done);
    if (stop_now) {
      result.interrupted = true;
      if (options.progress)
        fmt::print("\ntinyformer: interrupted after step {}; checkpoint written to {} (continue with --resume)\n", done,
                   run.checkpoint_path);
      break;
    }
  }
  if (total <= run.start_step) run.save(run.start_step);
  write_run_report(run.out_dir);
  if (options.progress) fmt::print("tinyformer: report written to {}\n", (fs::path(run.out_dir) / "report.html").string());
  return result;
}

}  // namespace tf::train
