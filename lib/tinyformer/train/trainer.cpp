// The training loop behind `tinyformer train`, as nanoGPT's: open (or resume) the run, then per step: train,
// stop or skip on a non-finite step, log and evaluate, snapshot the attention, checkpoint; finally the report.
// Each of these is a named function (run.cpp, step.cpp, run_log.cpp; the attention snapshots in
// infer/attention_files.cpp, the report in io/run_report.cpp). Under MPI every rank runs this loop in lock step (the
// same collectives at the same steps: the step's all-reduce, the evaluation, the agreed stop, the checkpoint's weight
// check); rank 0 alone prints and writes files.
#include "tinyformer/train/trainer.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "tinyformer/analysis/circuits.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/infer/attention_files.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/infer/lens.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/run_report.hpp"
#include "tinyformer/ops/kernels/dispatch.hpp"
#include "tinyformer/tensor/blas_core.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/train/memory_estimate.hpp"
#include "tinyformer/train/run.hpp"
#include "tinyformer/train/run_log.hpp"
#include "tinyformer/train/step.hpp"

namespace fs = std::filesystem;

namespace tf::train {

namespace {

bool every(long done, std::size_t interval) { return interval > 0 && done % static_cast<long>(interval) == 0; }

// 1, 2, 5, 10, 20, 50, 100, ...
bool one_two_five(long step) {
  long decade = 1;
  while (decade * 10 <= step) decade *= 10;
  return step == decade || step == 2 * decade || step == 5 * decade;
}

// logging.attention_interval, the last step (`last`: training.steps, or the step that used up training.max_seconds),
// and with the log schedule step 0 and 1, 2, 5, 10, 20, 50, ...
bool snapshot_due(const config::RunConfig& cfg, long done, bool last) {
  const auto& l = cfg.logging;
  if (l.attention_interval == 0) return false;
  if (every(done, l.attention_interval) || last) return true;
  return l.attention_schedule == config::SnapshotSchedule::log && (done == 0 || one_two_five(done));
}

// The probe's attention at step `done`, with the held-out attention_score of this step (`eval`'s, or measured now).
void snapshot(Run& run, long done, const std::optional<infer::EvalResult>& eval) {
  if (!dist::is_root()) return;
  const config::TrainingConfig& t = run.cfg.training;
  nn::GPT<float>& model = *run.parts.model;
  data::DataSource& data = *run.parts.data;
  io::HeadTable scores;
  if (eval)
    scores = eval->attention_score;
  else if (!data.expected_pattern().empty())
    if (const auto heads = infer::score_heads_on_data(model, data, t.batch_size, t.eval_batches))
      scores = heads->table(analysis::Pattern::expected);
  infer::write_attention_snapshot(run.out_dir, done, model, data, run.parts.probe, scores);
}

// heads.json: the head detector on the held-out data; for data with an expected pattern, one line on the best head.
void report_heads(Run& run, bool progress) {
  if (!dist::is_root()) return;
  data::DataSource& data = *run.parts.data;
  const auto scores =
      infer::score_heads_on_data(*run.parts.model, data, run.cfg.training.batch_size, run.cfg.training.eval_batches);
  if (!scores) return;  // a diverged model: no head has finite attention to score
  const std::string json = infer::heads_json(*scores);
  io::write_file_atomic((fs::path(run.out_dir) / "heads.json").string(), json.data(), json.size());
  if (!progress || data.expected_pattern().empty()) return;
  const analysis::BestHead best = analysis::best_head(scores->table(analysis::Pattern::expected));
  fmt::print("tinyformer: layer {} head {} puts {:.2f} of its attention on the expected key ({})\n", best.layer,
             best.head, best.score, data.expected_key());
}

// circuits.json (io::CircuitsReport): the data's task, for a synthetic task the direct logit attribution of the
// answers of the first held-out batch (infer/lens.hpp), for repeats the phase change in the metrics, for modular the
// grokking marks and the Fourier spectrum of the numbers' embedding.
void report_circuits(Run& run) {
  if (!dist::is_root()) return;
  data::DataSource& data = *run.parts.data;
  nn::GPT<float>& model = *run.parts.model;
  io::CircuitsReport c;
  c.task = config::to_string(run.cfg.data.task);
  if (data.is_task()) {
    const infer::LogitAttribution a = infer::mean_direct_logit_attribution(model, data, run.cfg.training.batch_size, 1);
    c.attribution_positions = a.positions, c.attribution_logit = a.logit, c.attribution_embed = a.embed;
    c.attribution_heads = a.heads, c.attribution_attention_bias = a.attention_bias, c.attribution_mlp = a.mlp;
    c.attribution_final_bias = a.final_bias;
  }
  if (run.cfg.data.task == config::Task::repeats)
    c.phase_change = io::phase_change_of(io::read_run_metrics(run.out_dir));
  if (run.cfg.data.task == config::Task::modular) {
    c.grokking = io::grokking_of(io::read_run_metrics(run.out_dir));
    const Array<float>& wte = model.named_parameters().front().second.value();  // [p + 1, C]: the numbers, then '='
    const Array<float> numbers = xt::view(wte, xt::range(0, run.cfg.data.modulus), xt::all());  // [p, C]
    c.embedding_spectrum = analysis::fourier_spectrum(numbers);
  }
  const std::string json = io::circuits_json(c);
  io::write_file_atomic((fs::path(run.out_dir) / "circuits.json").string(), json.data(), json.size());
}

// training.nonfinite: `stop` throws naming the step and the last good checkpoint; `skip` warns (options.on_warning,
// which train() always sets) and goes on. The loss and the gradients were all-reduced, so every rank takes the same
// decision.
void handle_nonfinite(Run& run, const StepResult& s, long done, const TrainOptions& options) {
  const std::string what = s.what_is_not_finite(run);
  if (run.cfg.training.nonfinite == config::NonFinitePolicy::stop) {
    run.parts.model->record_attention(false);
    throw dist::CollectiveError(
        fmt::format("step {}: {}; training stopped ({}: stop). The last good checkpoint is {}{}", done, what,
                    config::keys::training::nonfinite, run.checkpoint_path,
                    fs::exists(run.checkpoint_path) ? "" : " (none written yet)"));
  }
  if (dist::is_root())
    options.on_warning(
        fmt::format("step {}: {}; step skipped ({}: skip)", done, what, config::keys::training::nonfinite));
}

void record(TrainResult& result, const StepResult& s, long done) {
  result.train_losses.push_back(s.loss);
  result.last_train_loss = s.loss;
  result.steps_done = done;
}

// The plan of products (tensor/gemm_plan.hpp) is kept in <out>/gemm_plan.txt: written after the first step of a run
// and at its end, and replayed by a resumed run under TINYFORMER_GEMM=auto or measure, so that the run goes on with
// the same library for each product shape even if it began under measure (a plan given by TINYFORMER_GEMM_PLAN comes
// first).
std::string gemm_plan_path(const Run& run) { return (fs::path(run.out_dir) / "gemm_plan.txt").string(); }

void replay_gemm_plan(const Run& run, std::vector<std::string>& notes) {
  const std::string path = gemm_plan_path(run);
  const gemm_plan::Policy policy = gemm_plan::policy();
  if ((policy != gemm_plan::Policy::automatic && policy != gemm_plan::Policy::measure) || !gemm_plan::plan().empty() ||
      !fs::exists(path))
    return;
  const auto choices = gemm_plan::from_text(read_regular_file(path, 1 << 20, "a plan of products"), path);
  gemm_plan::replay(choices);
  notes.push_back(fmt::format("products: the plan of the resumed run, {} ({})", path, gemm_plan::summary(choices)));
}

void write_gemm_plan(const Run& run) {
  if (!dist::is_root()) return;
  const std::string text = gemm_plan::to_text(gemm_plan::plan());
  io::write_file_atomic(gemm_plan_path(run), text.data(), text.size());
}

void announce(const Run& run, const std::vector<std::string>& notes, bool progress) {
  if (!progress) return;
  for (const auto& note : notes) fmt::print("tinyformer: {}\n", note);
  const config::TrainingConfig& t = run.cfg.training;
  fmt::print("tinyformer: {} | {} parameters | ~ {} | {} thread{} | {} steps from step {}{} | out {}\n",
             run.parts.data->describe(), run.parts.model->num_parameters(), format_bytes(run.parts.memory_estimate),
             run.parts.threads, run.parts.threads == 1 ? "" : "s", t.steps, run.start_step,
             t.max_seconds > 0 ? fmt::format(" or {} s ({})", t.max_seconds, config::keys::training::max_seconds) : "",
             run.out_dir);
  if (dist::size() > 1 || t.grad_accum > 1)
    fmt::print(
        "tinyformer: {} process(es) x grad_accum {} x batch_size {} = {} sequences per step{}\n", dist::size(),
        t.grad_accum, t.batch_size, sequences_per_step(run.cfg),
        dist::size() > 1 ? fmt::format(" ({}, {} threads each)", dist::library_version(), run.parts.threads) : "");
  fmt::print("tinyformer: products: TINYFORMER_GEMM={}{}; the plan goes to {}; kernels: {}\n",
             gemm_plan::name(gemm_plan::policy()),
             gemm_plan::policy() == gemm_plan::Policy::automatic ? " (each shape's library by a fixed rule)"
             : gemm_plan::policy() == gemm_plan::Policy::measure
                 ? " (each shape on the faster of OpenBLAS and libxsmm, measured at its first use)"
                 : "",
             gemm_plan_path(run), kernels::kernel_isa());
}

// The log row of a step (rank 0 writes it) and, when due, the evaluation (every rank takes part). `recorded`: the
// step recorded its attention (otherwise the model holds an earlier step's, left out of the row).
std::optional<infer::EvalResult> log_and_evaluate(Run& run, RunLog& log, TrainResult& result, const StepResult& s,
                                                  long done, bool log_now, bool eval_now, bool recorded,
                                                  std::string& row) {
  std::optional<infer::EvalResult> eval;
  if (!log_now && !eval_now) return eval;
  nn::GPT<float>& model = *run.parts.model;
  const auto attention = log_now && recorded ? model.attention_weights() : std::vector<Array<float>>{};
  const config::TrainingConfig& t = run.cfg.training;
  if (eval_now) eval = infer::evaluate(model, *run.parts.data, t.batch_size, t.eval_batches, t.grad_accum);
  if (eval) eval->train_accuracy = infer::training_accuracy(model, *run.parts.data, t.batch_size);
  if (eval) result.last_val_loss = eval->loss;
  if (eval && eval->bpb) result.last_val_bpb = eval->bpb;
  if (eval && eval->accuracy) result.last_accuracy = eval->accuracy;
  row = log.row(done, s, attention, eval);
  return eval;
}

// The end of a run: the head detector's tables and the report (rank 0), the summary line (with --quiet too), then
// every rank waits for them (a launcher ends the whole job when the first process exits with a non-zero code, such
// as 130 after an interrupt).
void finish(Run& run, TrainResult& result, bool progress, std::chrono::steady_clock::time_point t0) {
  if (dist::is_root()) {
    if (!result.interrupted) report_heads(run, progress);
    if (!result.interrupted) report_circuits(run);
    io::write_run_report(run.out_dir);
    if (progress) fmt::print("tinyformer: report written to {}\n", (fs::path(run.out_dir) / "report.html").string());
    result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("{}\n", summary_line(result));
    std::fflush(stdout);
  }
  dist::barrier();
}

// --resume of a run already at training.steps: one line, and no file of the run touched (open_run wrote none).
TrainResult nothing_to_do(const Run& run, const std::vector<std::string>& notes, bool progress) {
  TrainResult result;
  result.nothing_to_do = true;
  result.out_dir = run.out_dir;
  result.start_step = result.steps_done = run.start_step;
  result.total_steps = run.total_steps();
  if (!dist::is_root()) return result;
  if (progress)
    for (const auto& note : notes) fmt::print("tinyformer: {}\n", note);
  if (run.start_step == run.total_steps())
    fmt::print("tinyformer: run already at step {} of {}; nothing to do\n", run.start_step, run.total_steps());
  else
    fmt::print("tinyformer: run already at step {0}, past {1} {2}; nothing to do (set {1} above {0} to train on)\n",
               run.start_step, config::keys::training::steps, run.total_steps());
  std::fflush(stdout);
  return result;
}

// train_step, with a std::bad_alloc named: the step, the estimate, and (when this run made the out dir and saved
// nothing yet) the out dir removed again.
StepResult step_or_report_memory(Run& run, long step, bool log_now) {
  try {
    return train_step(run, step, log_now);
  } catch (const std::bad_alloc&) {
    std::string removed;
    std::error_code ec;
    if (dist::is_root() && run.created_out_dir && !fs::exists(run.checkpoint_path) &&
        fs::remove_all(run.out_dir, ec) > 0)
      removed = fmt::format("; removed the new out dir {}", run.out_dir);
    throw std::runtime_error(fmt::format(
        "step {}: out of memory in the training step ({}={}, {}={}; the run was estimated at {}, {} available now{}){}",
        step + 1, config::keys::training::batch_size, run.cfg.training.batch_size, config::keys::model::context,
        run.parts.model->context(), format_bytes(run.parts.memory_estimate), format_bytes(available_memory()),
        address_space_note(), removed));
  }
}

// training.max_seconds: whether this run's steps have taken the budget (never without one). Under MPI every rank
// takes the same decision (any rank past it).
bool time_budget_used(const config::RunConfig& cfg, std::chrono::steady_clock::time_point steps_t0) {
  const double budget = cfg.training.max_seconds;
  if (budget <= 0) return false;  // the same on every rank: no collective then
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - steps_t0).count();
  return dist::any(elapsed >= budget);
}

// A run whose every step was skipped (training.nonfinite: skip) learned nothing: an error, not a success. Every rank
// took the same decisions (the loss and the gradients were all-reduced).
void refuse_if_nothing_learned(const Run& run, const TrainResult& result) {
  const long ran = result.steps_done - run.start_step;
  if (ran == 0 || result.steps_skipped < ran) return;
  std::error_code ec;
  throw dist::CollectiveError(fmt::format(
      "every one of the {} step{} of this run was skipped: the loss or the gradients were not finite at each ({}: "
      "skip), so nothing was learned{}; lower {} or check the data",
      ran, ran == 1 ? "" : "s", config::keys::training::nonfinite,
      fs::exists(run.checkpoint_path, ec)
          ? fmt::format(" ({} holds the weights of step {})", run.checkpoint_path, run.start_step)
          : "",
      config::keys::optimizer::lr));
}

// While the steps run, a stop request waits for the end of the step (options.in_steps, read by the signal handler).
struct InSteps {
  std::atomic<bool>* flag;
  explicit InSteps(std::atomic<bool>* f) : flag(f) {
    if (flag) flag->store(true);
  }
  ~InSteps() {
    if (flag) flag->store(false);
  }
};

}  // namespace

namespace {

TrainResult train_open_run(Run& run, const TrainOptions& options, std::vector<std::string>& notes) {
  const auto t0 = std::chrono::steady_clock::now();
  const config::RunConfig& cfg = run.cfg;
  const bool progress = options.progress && dist::is_root();
  if (run.nothing_to_do) return nothing_to_do(run, notes, progress);
  if (options.resume) replay_gemm_plan(run, notes);
  if (const std::string held = blas::held_back_note(blas::core_choice()); !held.empty()) notes.push_back(held);
  announce(run, notes, progress);
  RunLog log(run, progress);
  TrainResult result;
  result.out_dir = run.out_dir;
  const long total = run.total_steps();
  result.start_step = result.steps_done = run.start_step;
  result.total_steps = total;
  if (run.start_step == 0 && snapshot_due(cfg, 0, false)) snapshot(run, 0, std::nullopt);  // the untrained model
  std::optional<InSteps> in_steps;
  in_steps.emplace(options.in_steps);
  const auto steps_t0 = std::chrono::steady_clock::now();
  std::exception_ptr callback_error;  // what options.on_step threw: rethrown once the run has ended
  for (long step = run.start_step; step < total; ++step) {
    const long done = step + 1;
    // The probe's attention is recorded on the steps due a log row; the time budget can make this step the last (and
    // logged) only once it has run, so that row may come without attention entropies.
    const bool recorded = every(done, cfg.logging.log_interval) || done == total;
    const StepResult s = step_or_report_memory(run, step, recorded);
    result.out_of_time = done < total && time_budget_used(cfg, steps_t0);
    const bool last = done == total || result.out_of_time;
    const bool log_now = every(done, cfg.logging.log_interval) || last;
    StepInfo info;
    info.step = done, info.total = total, info.loss = s.loss, info.lr = s.lr, info.skipped = !s.finite();
    bool save_now = false;
    if (info.skipped) {
      handle_nonfinite(run, s, done, options);
      result.steps_done = done;
      ++result.steps_skipped;
    } else {
      record(result, s, done);
      if (step == run.start_step) write_gemm_plan(run);  // every product shape has been met
      log.count(done, s);
      const bool eval_now = every(done, cfg.training.eval_interval) || last;
      const std::optional<infer::EvalResult> eval =
          log_and_evaluate(run, log, result, s, done, log_now, eval_now, recorded, info.row);
      run.parts.model->record_attention(false);
      if (snapshot_due(cfg, done, last)) snapshot(run, done, eval);
      save_now = every(done, cfg.logging.checkpoint_interval) || last;
    }
    if (options.on_step && !callback_error) try {
        options.on_step(info);
      } catch (...) {
        callback_error = std::current_exception();
      }
    // every rank stops at the same step
    const bool stop_now = dist::any((options.stop && options.stop->load()) || callback_error);
    if (save_now || stop_now) run.save(done);
    if (stop_now) {
      result.interrupted = true;
      log.end_line();
      if (progress)
        fmt::print("tinyformer: interrupted after step {}; checkpoint written to {} (continue with --resume)\n", done,
                   run.checkpoint_path);
      break;
    }
    if (result.out_of_time) {
      log.end_line();
      if (progress)
        fmt::print("tinyformer: time budget of {} s ({}) used after step {}; checkpoint written to {} (continue with "
                   "--resume)\n",
                   cfg.training.max_seconds, config::keys::training::max_seconds, done, run.checkpoint_path);
      break;
    }
  }
  in_steps.reset();
  if (total <= run.start_step) run.save(run.start_step);  // training.steps 0: the initial weights
  log.end_line();
  if (!callback_error) refuse_if_nothing_learned(run, result);
  write_gemm_plan(run);
  finish(run, result, progress, t0);
  if (callback_error) std::rethrow_exception(callback_error);
  return result;
}

}  // namespace

TrainResult train(const TrainOptions& options) {
  std::vector<std::string> notes;
  Run run = open_run(options, notes);
  // Every warning of the run (its setup's, a skipped step) goes through one function: kept for the result, then given
  // to the caller's on_warning or printed as the CLI prints it.
  std::vector<std::string> said;
  TrainOptions with_warnings = options;
  with_warnings.on_warning = [&said, &options](const std::string& w) {
    said.push_back(w);
    if (options.on_warning) {
      options.on_warning(w);
    } else {
      fmt::print(stderr, "tinyformer: warning: {}\n", w);
      std::fflush(stderr);
    }
  };
  try {
    for (const std::string& w : run.parts.warnings) with_warnings.on_warning(w);
    TrainResult result = train_open_run(run, with_warnings, notes);
    result.warnings = std::move(said);
    return result;
  } catch (const std::exception& e) {
    // A run that never wrote a checkpoint leaves no run dir behind (when this run made it).
    std::error_code ec;
    if (!dist::is_root() || !run.created_out_dir || fs::exists(run.checkpoint_path, ec)) throw;
    run.metrics = io::AppendFile();
    run.lock = io::LockFile();
    if (fs::remove_all(run.out_dir, ec) == 0 || ec || dynamic_cast<const dist::CollectiveError*>(&e)) throw;
    throw std::runtime_error(fmt::format("{}; removed the new out dir {}", exception_text(e), run.out_dir));
  }
}

}  // namespace tf::train
