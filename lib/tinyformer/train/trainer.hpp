#pragma once
// The training loop behind `tinyformer train`: config -> data, model, optimizer, schedule; then steps with
// logging, evaluation, attention snapshots, checkpoints and the HTML report, all in the run's out dir:
//   config.yaml              the resolved config
//   metrics.jsonl            one JSON object per logged step
//   attention/step_NNNNNN.{npy,json,png}   probe attention [L,H,T,T], its tokens, and the heatmap grid
//   checkpoint.safetensors   weights + optimizer + step + RNG states (atomic)
//   report.html              loss curves and every attention snapshot, self-contained
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"

namespace tf::train {

// What a per-step callback sees, after each step (on every process of a data-parallel run).
struct StepInfo {
  long step = 0;         // the step just done (1-based)
  long total = 0;        // training.steps
  double loss = 0;       // its training loss (not finite when skipped)
  double lr = 0;         // the learning rate it used
  bool skipped = false;  // its loss or gradients were not finite and it changed nothing (training.nonfinite: skip)
  std::string row;       // the row it wrote to metrics.jsonl (one JSON object), or "" when it logged none
};

struct TrainOptions {
  std::string config_path;                  // the YAML file; with config_text, the name that stands for it in messages
  std::string config_text;                  // when not empty: the config itself (no file is read)
  std::vector<std::string> overrides;       // --set key.path=value
  std::optional<std::string> out_dir;       // --out, overrides logging.out_dir
  bool resume = false;                      // continue from <out>/checkpoint.safetensors
  bool overwrite = false;                   // start afresh in an out dir that holds a checkpoint (refused otherwise)
  bool allow_changes = false;               // --resume: accept config keys (OnResume::exact) and data that differ
  std::string init_from;                    // --init-from weights.safetensors
  bool progress = true;                     // print progress lines
  const std::atomic<bool>* stop = nullptr;  // set by a signal handler: finish the step, checkpoint, stop
  // Called after each step. When it throws, training stops as a stop request stops it (the checkpoint written, the
  // run dir's files and lock finished), then train() rethrows what it threw.
  std::function<void(const StepInfo&)> on_step;
  // Called with each warning of the run (rank 0), as one line without the "tinyformer: warning: " the CLI puts
  // before it: the probe cropped to the context, more threads than cores, a step skipped for a non-finite loss or
  // gradient (training.nonfinite: skip). Unset: printed to stderr with it.
  std::function<void(const std::string&)> on_warning;
  // Set by train() while a stop request can wait for the end of a step (the loop over steps); false before (loading,
  // building) and after it (the report), where the signal handler ends the process at once.
  std::atomic<bool>* in_steps = nullptr;
};

struct TrainResult {
  bool interrupted = false;    // stopped by `stop`; the checkpoint was written
  bool out_of_time = false;    // stopped before training.steps by training.max_seconds; evaluated and saved
  bool nothing_to_do = false;  // --resume of a finished run: nothing trained, no file touched
  long start_step = 0;         // the step this process started from (the checkpoint's with --resume)
  long total_steps = 0;        // training.steps
  double wall_seconds = 0;     // from the start of train() to its end
  long steps_done = 0;         // the step reached (skipped steps count: training.nonfinite skip)
  long steps_skipped = 0;      // steps of this run skipped for a non-finite loss or gradient
  double last_train_loss = 0;
  std::optional<double> last_val_loss;
  std::optional<double> last_val_bpb;  // text: the last evaluation's bits per byte
  std::optional<double> last_accuracy;
  std::vector<double> train_losses;   // every step's loss, in order (this process's steps only)
  std::vector<std::string> warnings;  // what options.on_warning was given, in order (rank 0)
  std::string out_dir;
};

// Trains as `tinyformer train` does. A run whose steps were all skipped (training.nonfinite: skip) learned nothing:
// it throws naming the key, after the run's files are finished.
TrainResult train(const TrainOptions& options);

// The run's config: options.config_text (named options.config_path) or the file options.config_path, with
// options.overrides.
config::RunConfig load_run_config(const TrainOptions& options);

}  // namespace tf::train
