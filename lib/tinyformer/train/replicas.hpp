#pragma once
// Data-parallel training keeps one replica of the model per process; these keep the replicas the same. All are
// collective (every rank calls them, in the same order) and do nothing with one process.
#include <cstddef>
#include <string>

#include "tinyformer/train/run.hpp"

namespace tf::train {

// 64-bit FNV-1a over every parameter's float32 bytes, in named_parameters() order, as 16 hex digits.
std::string parameters_hash(const nn::GPT<float>& model);

// --resume under MPI: rank 0 restored the checkpoint; the others take its step, generator states, weights and
// optimizer state, and advance an in-order data source by the step's `sequences` (rank 0's value) as rank 0 did.
void share_resumed_state(Run& run, std::size_t sequences);
// --resume under MPI: rank 0's schedule.warmup_steps and decay_steps (kept from the checkpoint, which only rank 0
// reads) become every rank's, with the schedule and config_yaml made from them. Collective.
void share_resumed_schedule(Run& run);

// Refuses (dist::CollectiveError on every rank) a run whose ranks differ in the resolved config (training.threads
// aside: results do not depend on it) or the data (description, vocabulary, a hash of the held-out batches).
void check_same_config_and_data(Run& run);
// Refuses a run whose ranks hold different weights (a hash of every parameter); `what` names them in the message
// ("the initial parameters", "the weights after step 200").
void check_same_parameters(const Run& run, const std::string& what);

}  // namespace tf::train
