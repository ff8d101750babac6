#include "tinyformer/train/setup.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/train/checkpoint.hpp"

namespace tf::train {

data::DataSpec data_spec_from(const config::RunConfig& cfg) {
  data::DataSpec spec;
  spec.task = config::to_string(cfg.data.task);
  spec.path = cfg.data.path;
  spec.length = cfg.data.length;
  spec.digits = cfg.data.digits;
  spec.alphabet = cfg.data.alphabet;
  spec.eval_size = cfg.data.eval_size;
  spec.val_fraction = cfg.data.val_fraction;
  spec.shuffle = cfg.data.shuffle;
  spec.context = cfg.model.context;
  spec.seed = cfg.training.seed;
  spec.vocab_size = cfg.model.vocab_size;
  return spec;
}

std::unique_ptr<data::DataSource> make_data(const config::RunConfig& cfg) {
  try {
    return data::make_data_source(data_spec_from(cfg));
  } catch (const data::SpecError& e) {
    throw config::error_at(cfg, e.key(), e.what());
  } catch (const std::runtime_error& e) {  // the file: missing, empty, not UTF-8, a bad .npy, ...
    throw std::runtime_error(fmt::format("{}: {}", cfg.source.locate("data.path"), e.what()));
  }
}

nn::GPTConfig gpt_config_from(const config::RunConfig& cfg, const data::DataSource& data, std::uint64_t init_seed) {
  nn::GPTConfig g;
  const std::size_t data_vocab_size = data.vocab().size();
  if (cfg.model.vocab_size && *cfg.model.vocab_size < data_vocab_size)
    throw config::error_at(cfg, "model.vocab_size",
                           fmt::format("{} is smaller than the data's vocabulary of {} tokens; use {} or 'auto'",
                                       *cfg.model.vocab_size, data_vocab_size, data_vocab_size));
  g.vocab_size = cfg.model.vocab_size ? *cfg.model.vocab_size : data_vocab_size;
  g.block_size = data.seq_len();  // model.context, resolved and checked by the data source
  g.n_layer = cfg.model.n_layer;
  g.n_head = cfg.model.n_head;
  g.n_embd = cfg.model.d_model;
  g.mlp_ratio = cfg.model.mlp_ratio;
  g.dropout = cfg.model.dropout;
  g.bias = cfg.model.bias;
  g.tie_weights = cfg.model.tie_weights;
  g.init = nn::parse_init_scheme(config::to_string(cfg.model.init));
  g.seed = init_seed;
  return g;
}

RunSetup make_run(const config::RunConfig& cfg) {
  RunSetup run;
  Rng root(cfg.training.seed);
  const std::uint64_t init_seed = root.next_u64();
  run.data_rng = root.split();
  run.data = make_data(cfg);
  run.model = std::make_unique<nn::GPT<float>>(gpt_config_from(cfg, *run.data, init_seed));
  run.model->set_attention_impl(cfg.model.attention == config::AttentionImpl::fused ? nn::AttentionImpl::fused
                                                                                    : nn::AttentionImpl::composed);

  const auto& o = cfg.optimizer;
  const auto groups = optim::make_param_groups(run.model->named_parameters(), o.weight_decay,
                                               optim::parse_decay_rule(config::to_string(o.decay_rule)));
  switch (o.name) {
    case config::OptimizerName::sgd: {
      optim::SgdOptions s;
      s.momentum = o.momentum;
      s.nesterov = o.nesterov;
      run.optimizer = std::make_unique<optim::SGD<float>>(groups, o.lr, s);
      break;
    }
    case config::OptimizerName::adam:
    case config::OptimizerName::adamw: {
      optim::AdamOptions a;
      a.beta1 = o.betas[0];
      a.beta2 = o.betas[1];
      a.eps = o.eps;
      if (o.name == config::OptimizerName::adam)
        run.optimizer = std::make_unique<optim::Adam<float>>(groups, o.lr, a);
      else
        run.optimizer = std::make_unique<optim::AdamW<float>>(groups, o.lr, a);
      break;
    }
  }

  const auto& s = cfg.schedule;
  switch (s.name) {
    case config::ScheduleName::constant: run.schedule = optim::LrSchedule::constant(o.lr); break;
    case config::ScheduleName::warmup: run.schedule = optim::LrSchedule::warmup(o.lr, long(s.warmup_steps)); break;
    case config::ScheduleName::cosine:
      run.schedule = optim::LrSchedule::cosine(o.lr, long(s.warmup_steps), long(config::effective_decay_steps(cfg)),
                                               s.min_lr);
      break;
  }
  run.schedule.validate();

  if (cfg.logging.probe.empty()) {
    run.probe = run.data->probe_sequence();
  } else {
    std::vector<Index> ids;
    try {
      ids = run.data->vocab().encode(cfg.logging.probe);
    } catch (const std::invalid_argument& e) {
      throw config::error_at(cfg, "logging.probe", e.what());
    }
    if (ids.empty()) throw config::error_at(cfg, "logging.probe", "has no tokens; give at least one");
    const std::size_t T = run.model->config().block_size;
    if (ids.size() > T) ids.erase(ids.begin(), ids.end() - static_cast<long>(T));
    run.probe = IndexArray::from_shape({ids.size()});
    std::copy(ids.begin(), ids.end(), run.probe.data());
  }
  return run;
}

void check_same_architecture(const io::SafetensorsFile& file, const nn::GPTConfig& cfg) {
  const nn::GPTConfig saved = read_model_config(file);
  std::vector<std::string> diffs;
  auto cmp = [&](const char* key, auto a, auto b) {
    if (a != b) diffs.push_back(fmt::format("{}: checkpoint {}, config {}", key, a, b));
  };
  cmp("model.vocab_size", saved.vocab_size, cfg.vocab_size);
  cmp("model.context", saved.block_size, cfg.block_size);
  cmp("model.n_layer", saved.n_layer, cfg.n_layer);
  cmp("model.n_head", saved.n_head, cfg.n_head);
  cmp("model.d_model", saved.n_embd, cfg.n_embd);
  cmp("model.mlp_ratio", saved.mlp_ratio, cfg.mlp_ratio);
  cmp("model.bias", saved.bias, cfg.bias);
  cmp("model.tie_weights", saved.tie_weights, cfg.tie_weights);
  if (!diffs.empty()) {
    std::string msg = fmt::format("{}: the checkpoint's model differs from the config:", file.path());
    for (const auto& d : diffs) msg += "\n  " + d;
    throw std::invalid_argument(msg);
  }
}

void fast_forward_data(const config::RunConfig& cfg, data::DataSource& source, std::size_t steps) {
  if (cfg.data.task != config::Task::tokens || cfg.data.shuffle) return;
  Rng unused(0);
  for (std::size_t i = 0; i < steps; ++i) source.train_batch(cfg.training.batch_size, unused);
}

}  // namespace tf::train
