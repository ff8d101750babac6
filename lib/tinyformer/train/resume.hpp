#pragma once
// What `train --resume` keeps and checks against the checkpoint it continues (README, "Resuming a run"):
// - the schedule: schedule.warmup_steps and schedule.decay_steps stay as the checkpoint's run resolved them unless
//   this command line sets them (--set), so that a longer training.steps neither restarts nor stretches the decay;
// - the config: every key that differs from the checkpoint's is listed; a change to an OnResume::exact key
//   (config/fields.hpp) is refused unless --allow-changes, one to an OnResume::fixed key always;
// - the data: the fingerprint of the data source stored in the checkpoint (checkpoint/data_fingerprint.hpp) must be
//   the data's now, unless --allow-changes.
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"

namespace tf::train {

// Sets cfg.schedule.warmup_steps and decay_steps to the values the checkpoint's run used (`saved`, decay_steps
// `auto` resolved to its training.steps), except those given with --set on this command line; decay_steps `auto`
// given with --set is resolved to cfg's training.steps. Returns the line that says what the schedule does from
// `step` on (and which values of the config file it does not use), after checking cfg again (config::validate); ""
// when `step` is already at training.steps.
std::string keep_checkpoint_schedule(const config::RunConfig& saved, long step, config::RunConfig& cfg);

// Compares cfg with the checkpoint's config. Appends one line listing every differing key (old -> new) to `notes`.
// Throws std::invalid_argument (one line naming the checkpoint, each key, old and new value) for a changed fixed key,
// or a changed exact key without `allow_changes`. With `same_global_batch` (N x grad_accum x batch_size as the
// checkpoint's steps took) training.batch_size and training.grad_accum may change freely.
void check_config_changes(const config::RunConfig& saved, const config::RunConfig& cfg, bool allow_changes,
                          bool same_global_batch, const std::string& checkpoint, std::vector<std::string>& notes);

}  // namespace tf::train
