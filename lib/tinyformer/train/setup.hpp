#pragma once
// Turns a validated run config into the objects a run needs, all derived from training.seed:
// Rng root(seed) -> the model's init seed, then the data generator (dropout has its own stream inside GPT).
#include <memory>

#include "tinyformer/config/config.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/io/safetensors.hpp"
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
  IndexArray probe;  // [T] the probe input for attention snapshots
};

data::DataSpec data_spec_from(const config::RunConfig& cfg);
// The run's data source. Errors name the config file and the key to change: ConfigError for model.context
// (and other keys the data disagrees with), std::runtime_error prefixed with data.path for an unusable file.
std::unique_ptr<data::DataSource> make_data(const config::RunConfig& cfg);
// The model section with vocab_size and context resolved against the data (ConfigError if vocab_size is too small).
nn::GPTConfig gpt_config_from(const config::RunConfig& cfg, const data::DataSource& data, std::uint64_t init_seed);
RunSetup make_run(const config::RunConfig& cfg);

// Throws std::invalid_argument listing every architecture field where the checkpoint differs from `cfg`.
void check_same_architecture(const io::SafetensorsFile& file, const nn::GPTConfig& cfg);
// Advances a data source that walks its file in order (tokens, shuffle off) by `steps` batches, so a resumed
// run sees the batches it would have seen. Sources that draw from the generator need nothing: its state is restored.
void fast_forward_data(const config::RunConfig& cfg, data::DataSource& source, std::size_t steps);

}  // namespace tf::train
