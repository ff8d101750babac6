#include "tinyformer/train/setup.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/optim/make_optimizer.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/train/memory_estimate.hpp"

namespace tf::train {

namespace {

// logging.probe as token ids (cropped to the last `context` tokens, with a warning), or the data's default probe.
IndexArray make_probe(const config::RunConfig& cfg, const data::DataSource& data, std::size_t context,
                      std::vector<std::string>& warnings) {
  if (cfg.logging.probe.empty()) return data.probe_sequence();
  std::vector<Index> ids;
  try {
    ids = data.vocab().encode(cfg.logging.probe);
  } catch (const std::invalid_argument& e) {
    throw config::error_at(cfg, config::keys::logging::probe, e.what());
  }
  if (ids.empty()) throw config::error_at(cfg, config::keys::logging::probe, "has no tokens; give at least one");
  if (ids.size() > context) {  // as `attention` does with a long --prompt: said once, in one line
    if (dist::is_root())
      warnings.push_back(fmt::format("{} has {} tokens, the context is {}: keeping the last {}",
                                     config::keys::logging::probe, ids.size(), context, context));
    ids.erase(ids.begin(), ids.end() - static_cast<long>(context));
  }
  IndexArray probe = IndexArray::from_shape({ids.size()});
  std::copy(ids.begin(), ids.end(), probe.data());
  return probe;
}

// Runs `make`; a std::bad_alloc that still happens (the estimate was too low, or memory went elsewhere meanwhile)
// becomes one line naming what was being allocated.
template <class Make>
auto allocating(const std::string& what, double estimate, Make&& make) {
  try {
    return make();
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(
        fmt::format("out of memory while {} (the whole run was estimated at {}; {} available now{})", what,
                    format_bytes(estimate), format_bytes(available_memory()), address_space_note()));
  }
}

}  // namespace

int choose_threads(const config::RunConfig& cfg, std::vector<std::string>& warnings) {
  const int cores = physical_cores();
  // auto: OMP_NUM_THREADS when set; else, under mpirun, the cores shared by the processes on this node (OpenMPI says
  // how many there are)
  const int from_environment = threads_from_environment();
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int per_node = local ? std::max(1, std::atoi(local)) : 1;
  const int threads = cfg.training.threads ? static_cast<int>(*cfg.training.threads)
                      : from_environment   ? from_environment
                                           : std::max(1, cores / per_node);
  if (threads > cores && dist::is_root())
    warnings.push_back(fmt::format("{} {} is more than this machine's {} cores: the threads take turns, which is "
                                   "slower (results are the same)",
                                   cfg.training.threads ? config::keys::training::threads : "OMP_NUM_THREADS", threads,
                                   cores));
  return threads;
}

config::ModelConfig resolve_model(const config::RunConfig& cfg, const data::DataSource& data) {
  config::ModelConfig model = cfg.model;
  const std::size_t data_vocab_size = data.vocab().size();
  if (model.vocab_size && *model.vocab_size < data_vocab_size)
    throw config::error_at(cfg, config::keys::model::vocab_size,
                           fmt::format("{} is smaller than the data's vocabulary of {} tokens; use {} or 'auto'",
                                       *model.vocab_size, data_vocab_size, data_vocab_size));
  if (!model.vocab_size) model.vocab_size = data_vocab_size;
  model.context = data.seq_len();  // model.context, resolved and checked by the data source
  return model;
}

RunSetup make_run(const config::RunConfig& cfg) {
  RunSetup run;
  config::validate(cfg);
  run.threads = choose_threads(cfg, run.warnings);
  // Before anything is allocated: what the config alone tells (all of it for the synthetic tasks), then, with the
  // data's T and V, the whole estimate before the model is built.
  const data::DataFootprint footprint = data::data_footprint(cfg);
  MemoryEstimate estimate = estimate_memory(cfg, footprint.T, footprint.V, footprint.bytes);
  check_memory(cfg, estimate, footprint.T, footprint.V);
  Rng root(cfg.training.seed);
  const std::uint64_t init_seed = root.next_u64();
  run.data_rng = root.split();
  run.data = allocating(fmt::format("loading the data ({})", cfg.source.locate(config::keys::data::task)),
                        estimate.total(), [&] { return data::make_data_source(cfg); });
  const config::ModelConfig model = resolve_model(cfg, *run.data);
  estimate = estimate_memory(cfg, *model.context, *model.vocab_size, footprint.bytes);
  check_memory(cfg, estimate, *model.context, *model.vocab_size);
  run.memory_estimate = estimate.total();
  run.model = allocating(fmt::format("building the model ({}={}, {}={}, vocabulary {})", config::keys::model::d_model,
                                     model.d_model, config::keys::model::n_layer, model.n_layer, *model.vocab_size),
                         run.memory_estimate, [&] { return std::make_unique<nn::GPT<float>>(model, init_seed); });
  run.optimizer = allocating("allocating the optimizer state", run.memory_estimate,
                             [&] { return optim::make_optimizer(cfg.optimizer, run.model->named_parameters()); });
  run.schedule = optim::LrSchedule::from_config(cfg);
  run.probe = make_probe(cfg, *run.data, run.model->context(), run.warnings);
  const std::string snapshots = snapshot_bytes_warning(cfg, model.n_layer, model.n_head, run.probe.size());
  if (!snapshots.empty() && dist::is_root()) run.warnings.push_back(snapshots);
  return run;
}

std::string snapshot_bytes_warning(const config::RunConfig& cfg, std::size_t layers, std::size_t heads, std::size_t T) {
  namespace kl = config::keys::logging;
  const std::size_t interval = cfg.logging.attention_interval, steps = cfg.training.steps;
  if (interval == 0) return "";
  const double each = 4.0 * static_cast<double>(layers * heads) * static_cast<double>(T) * static_cast<double>(T);
  const double count = std::floor(static_cast<double>(steps) / static_cast<double>(interval)) + 1;
  if (each * count <= 1024.0 * 1024.0 * 1024.0) return "";
  return fmt::format("the attention snapshots of the probe ({} tokens) take {} each ([{}, {}, {}, {}] float32 in "
                     "attention/step_*.npy): {} {} over {} {} writes about {:.0f} of them, {} (a shorter {} or a "
                     "larger {} writes less)",
                     T, format_bytes(each), layers, heads, T, T, kl::attention_interval, interval,
                     config::keys::training::steps, steps, count, format_bytes(each * count), kl::probe,
                     kl::attention_interval);
}

std::size_t sequences_per_step(const config::RunConfig& cfg) {
  return static_cast<std::size_t>(dist::size()) * cfg.training.grad_accum * cfg.training.batch_size;
}

void fast_forward_data(const config::RunConfig& cfg, data::DataSource& source, std::size_t steps,
                       std::size_t sequences) {
  if (cfg.data.task != config::Task::tokens || cfg.data.shuffle) return;
  Rng unused(0);
  for (std::size_t i = 0; i < steps; ++i) source.train_batch(sequences, unused);
}

}  // namespace tf::train
