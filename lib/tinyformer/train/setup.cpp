#include "tinyformer/train/setup.hpp"

#include <fmt/format.h>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/optim/make_optimizer.hpp"

namespace tf::train {

namespace {

// logging.probe as token ids (cropped to the last `context` tokens), or the data's default probe.
IndexArray make_probe(const config::RunConfig& cfg, const data::DataSource& data, std::size_t context) {
  if (cfg.logging.probe.empty()) return data.probe_sequence();
  std::vector<Index> ids;
  try {
    ids = data.vocab().encode(cfg.logging.probe);
  } catch (const std::invalid_argument& e) {
    throw config::error_at(cfg, "logging.probe", e.what());
  }
  if (ids.empty()) throw config::error_at(cfg, "logging.probe", "has no tokens; give at least one");
  if (ids.size() > context) ids.erase(ids.begin(), ids.end() - static_cast<long>(context));
  IndexArray probe = IndexArray::from_shape({ids.size()});
  std::copy(ids.begin(), ids.end(), probe.data());
  return probe;
}

}  // namespace

config::ModelConfig resolve_model(const config::RunConfig& cfg, const data::DataSource& data) {
  config::ModelConfig model = cfg.model;
  const std::size_t data_vocab_size = data.vocab().size();
  if (model.vocab_size && *model.vocab_size < data_vocab_size)
    throw config::error_at(cfg, "model.vocab_size",
                           fmt::format("{} is smaller than the data's vocabulary of {} tokens; use {} or 'auto'",
                                       *model.vocab_size, data_vocab_size, data_vocab_size));
  if (!model.vocab_size) model.vocab_size = data_vocab_size;
  model.context = data.seq_len();  // model.context, resolved and checked by the data source
  return model;
}

RunSetup make_run(const config::RunConfig& cfg) {
  RunSetup run;
  Rng root(cfg.training.seed);
  const std::uint64_t init_seed = root.next_u64();
  run.data_rng = root.split();
  run.data = data::make_data_source(cfg);
  run.model = std::make_unique<nn::GPT<float>>(resolve_model(cfg, *run.data), init_seed);
  run.optimizer = optim::make_optimizer(cfg.optimizer, run.model->named_parameters());
  run.schedule = optim::LrSchedule::from_config(cfg);
  run.probe = make_probe(cfg, *run.data, run.model->context());
  return run;
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
