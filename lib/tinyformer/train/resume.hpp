#pragma once
// What `train --resume` keeps and checks against the checkpoint it continues (README, "Resuming a run"):
// - the schedule: schedule.warmup_steps and schedule.decay_steps stay as the checkpoint's run resolved them unless
//   this command line sets them (--set), so that a longer training.steps neither restarts nor stretches the decay;
// - the config: every key that differs from the checkpoint's is listed; a change to an OnResume::exact key
//   (config/fields.hpp) is refused unless --allow-changes, one to an OnResume::fixed key always;
// - the data: the fingerprint of the data source stored in the checkpoint (its vocabulary, and for a file its size
//   and FNV-1a 64 hash) must be the data's now, unless --allow-changes.
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/data/data.hpp"

namespace tf::train {

// The checkpoint's "tinyformer.data": one JSON object
//   {"task": "text", "parameters": {the data section's keys}, "vocabulary": {"size": V, "fnv1a64": "<16 hex>"},
//    "file": {"path": "...", "bytes": N, "fnv1a64": "<16 hex>"}}
// ("file" only for the tasks that read data.path: text and tokens; the hashes are of the serialized vocabulary and
// of the file's bytes). Throws std::runtime_error naming the file if it cannot be read.
std::string data_fingerprint(const config::RunConfig& cfg, const data::DataSource& data);

// Sets cfg.schedule.warmup_steps and decay_steps to the values the checkpoint's run used (`saved`, decay_steps
// `auto` resolved to its training.steps), except those given with --set on this command line; decay_steps `auto`
// given with --set is resolved to cfg's training.steps. Returns the line that says what the schedule does from
// `step` on (and which values of the config file it does not use), after checking cfg again (config::validate); ""
// when `step` is already at training.steps.
std::string keep_checkpoint_schedule(const config::RunConfig& saved, long step, config::RunConfig& cfg);

// Compares cfg with the checkpoint's config. Appends one line listing every differing key (old -> new) to `notes`.
// Throws std::runtime_error (one line naming the checkpoint, each key, old and new value) for a changed fixed key,
// or a changed exact key without `allow_changes`. With `same_global_batch` (N x grad_accum x batch_size as the
// checkpoint's steps took) training.batch_size and training.grad_accum may change freely.
void check_config_changes(const config::RunConfig& saved, const config::RunConfig& cfg, bool allow_changes,
                          bool same_global_batch, const std::string& checkpoint, std::vector<std::string>& notes);

// The data's side of a resume: `saved_fingerprint` ("" in checkpoints written before it was stored: a note, and only
// the vocabularies are compared) against `fingerprint` (data_fingerprint now), and the checkpoint's serialized
// vocabulary against the data's. A difference throws std::runtime_error naming what changed (the vocabulary, the
// file's size or its content) unless `allow_changes`, which turns it into a note. `who` starts the message: "--resume"
// (whose remedy is --allow-changes), or the checkpoint of a command that reads its run's data (heads, attention).
void check_same_data(const std::string& saved_fingerprint, const std::string& saved_vocab,
                     const std::string& fingerprint, const std::string& vocab, bool allow_changes,
                     const std::string& checkpoint, std::vector<std::string>& notes,
                     const std::string& who = "--resume");

}  // namespace tf::train
