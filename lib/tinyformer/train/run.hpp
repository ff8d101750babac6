#pragma once
// An open run: the resolved config, the objects it trains, its out dir with config.yaml and metrics.jsonl, and
// the step it starts from (0, or the checkpoint's with --resume). open_run does every check before the first
// file is written, so a refused run creates no run directory.
//
// Under MPI (dist::size() > 1) every rank opens the run; rank 0 alone touches the out dir (the check for an earlier
// run, --resume's checkpoint, config.yaml, metrics.jsonl, and later every file the run writes). A rank whose part
// fails makes every rank refuse the run with its message; the resumed state is sent from rank 0 to the others;
// then the ranks must agree on the resolved config, the data and a hash of the parameters, before step 1.
#include <optional>
#include <string>

#include "tinyformer/config/config.hpp"
#include "tinyformer/dist/gradients.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/train/setup.hpp"
#include "tinyformer/train/trainer.hpp"

namespace tf::train {

struct Run {
  config::RunConfig cfg;  // as resolved: model.context holds the data's T
  RunSetup parts;         // data, model, optimizer, schedule, generators, probe
  std::string out_dir, checkpoint_path, config_yaml;
  io::AppendFile metrics;  // metrics.jsonl, appended to on resume
  long start_step = 0;
  bool nothing_to_do = false;    // --resume of a run already at training.steps (or past it): no file is touched
  std::string data_fingerprint;  // rank 0: checkpoint::data_fingerprint, stored in every checkpoint
  bool created_out_dir =
      false;  // the out dir did not exist before this run (removed again if step 1 runs out of memory)
  std::optional<std::string> kept_metrics;   // --resume: metrics.jsonl cut back to the checkpoint's step (if needed)
  io::LockFile lock;                         // <out>/tinyformer.lock, held for the whole run (rank 0)
  dist::GradientAllReduce reduce_gradients;  // the flat all-reduce buffer, reused every step

  long total_steps() const { return static_cast<long>(cfg.training.steps); }
  // Writes the checkpoint of `step` atomically (rank 0). Throws std::runtime_error naming the step and saying
  // whether the previous checkpoint is intact. Collective under MPI: the ranks first compare a hash of their
  // weights, which must be the same (dist::CollectiveError otherwise).
  void save(long step);
};

// --resume after a kill: keeps the rows of metrics.jsonl up to `step` (the checkpoint's) and drops later ones and a
// cut-off last line, so the resumed run's rows are not logged twice (rewritten atomically).
void truncate_metrics(const std::string& path, long step);
// What truncate_metrics would leave in the file, or nothing when it keeps every row (or there is no file). Reads
// through the gate: metrics.jsonl that is a FIFO, device or directory is refused with its path.
std::optional<std::string> metrics_rows_to_keep(const std::string& path, long step);

// Loads the config, builds the run's objects, restores a checkpoint (--resume) or initial weights (--init-from),
// then creates the out dir and its files (not when a resumed run has nothing to do). Lines for the user (a stale
// temporary removed, the keys changed since the checkpoint, what the schedule does) go to `notes`.
Run open_run(const TrainOptions& options, std::vector<std::string>& notes);

}  // namespace tf::train
