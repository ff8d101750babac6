#pragma once
// Turns a validated run config into the objects a run needs, all derived from training.seed:
// Rng root(seed) -> the model's init seed, then the data generator (dropout has its own stream inside GPT).
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/optim/optimizer.hpp"
#include "tinyformer/optim/schedule.hpp"

namespace tf::train {

struct RunSetup {
  std::unique_ptr<data::DataSource> data;
  std::unique_ptr<nn::GPT<float>> model;
  std::unique_ptr<optim::Optimizer<float>> optimizer;
  optim::LrSchedule schedule;
  Rng data_rng;
  IndexArray probe;                   // [T] the probe input for attention snapshots
  double memory_estimate = 0;         // bytes the run is estimated to need at its peak (train/memory_estimate.hpp)
  int threads = 1;                    // kernel threads: training.threads, or the physical cores for auto
  std::vector<std::string> warnings;  // rank 0: the probe cropped, threads above the cores (train() says them)
};

// The model section with vocab_size and context resolved against the data: model.context is the data's T
// (checked by the data source), vocab_size auto is the data's vocabulary (a set value smaller than it throws
// ConfigError).
config::ModelConfig resolve_model(const config::RunConfig& cfg, const data::DataSource& data);
// Checks the memory the run needs against the machine's before anything is allocated (train/memory_estimate.hpp),
// and names what was being allocated when std::bad_alloc happens anyway.
RunSetup make_run(const config::RunConfig& cfg);

// A warning, or "" when there is nothing to say: the run's attention snapshots add up to more than 1 GiB on disk.
// Each is the probe's [layers, heads, T, T] in float32 (attention/step_*.npy, beside a PNG), about one per
// logging.attention_interval steps: a probe of 2000 tokens on an 8 x 8-head model is 1 GiB a snapshot. make_run adds
// it to the run's warnings (rank 0).
std::string snapshot_bytes_warning(const config::RunConfig& cfg, std::size_t layers, std::size_t heads, std::size_t T);

// training.threads, or for auto OMP_NUM_THREADS when set (tf::threads_from_environment, which refuses a bad value),
// else the machine's physical cores (under mpirun shared by the node's processes); above the cores, adds a warning
// (rank 0).
int choose_threads(const config::RunConfig& cfg, std::vector<std::string>& warnings);

// The sequences of one optimizer step over all processes: N x grad_accum x batch_size (N = dist::size()).
std::size_t sequences_per_step(const config::RunConfig& cfg);

// Advances a data source that walks its file in order (tokens, shuffle off) by `steps` steps of `sequences` each, so
// a resumed run sees the batches it would have seen. Sources that draw from the generator need nothing: its state
// is restored.
void fast_forward_data(const config::RunConfig& cfg, data::DataSource& source, std::size_t steps,
                       std::size_t sequences);

}  // namespace tf::train
