#include "tinyformer/runs/training.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/runs/environment.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/train/memory_estimate.hpp"
#include "tinyformer/train/setup.hpp"

namespace tf::runs {

train::TrainResult train(const train::TrainOptions& options) {
  CallbackGuard guard;
  train::TrainOptions guarded = options;
  if (options.on_step) guarded.on_step = [&](const train::StepInfo& info) { guard.call(options.on_step, info); };
  if (options.on_warning) guarded.on_warning = [&](const std::string& w) { guard.call(options.on_warning, w); };
  return at_boundary(guard, [&] {
    check_environment();
    return train::train(guarded);
  });
}

std::string resolved_config(const train::TrainOptions& options) {
  return at_boundary([&] { return config::to_yaml(train::load_run_config(options)); });
}

GradcheckRun gradcheck(const GradcheckRequest& request, const std::string& flag_prefix) {
  return at_boundary([&] {
    check_environment();
    if (request.batch < 1 || request.batch > kMaxGradcheckBatch)
      throw Error(ErrorKind::value, fmt::format("{}batch: must be from 1 to {} (a float64 gradcheck of more sequences "
                                                "needs more memory than it tells), got {}",
                                                flag_prefix, kMaxGradcheckBatch, request.batch));
    config::RunConfig cfg = config::load_config(request.config_path, request.overrides);
    if (request.small) {
      cfg.model.d_model = 4 * cfg.model.n_head;
      cfg.model.n_layer = std::min<std::size_t>(cfg.model.n_layer, 2);
    }
    // The memory estimate before anything is allocated by the config's sizes, as train does (float32 figures;
    // float64 needs about twice the parameters' part).
    const data::DataFootprint footprint = data::data_footprint(cfg);
    train::check_memory(cfg, train::estimate_memory(cfg, footprint.T, footprint.V, footprint.bytes), footprint.T,
                        footprint.V);
    const auto source = data::make_data_source(cfg);
    const config::ModelConfig resolved = train::resolve_model(cfg, *source);
    train::check_memory(cfg, train::estimate_memory(cfg, *resolved.context, *resolved.vocab_size, footprint.bytes),
                        *resolved.context, *resolved.vocab_size);
    nn::GPT<double> model(resolved, cfg.training.seed);
    model.eval();  // dropout off: the loss must be a deterministic function of the weights
    Rng rng(cfg.training.seed);
    const data::Batch batch = source->train_batch(request.batch, rng);
    GradcheckOptions opts;
    opts.max_checks_per_input = request.checks;
    GradcheckRun run;
    run.header = fmt::format("gradcheck: {} parameters in {} tensors, batch [{}, {}], float64, eps {:g}, pass when "
                             "|analytic - numeric| <= {:g} + {:g} |numeric|, {} elements per tensor",
                             model.num_parameters(), model.named_parameters().size(), batch.x.shape()[0],
                             batch.x.shape()[1], opts.eps, opts.atol, opts.rtol,
                             request.checks == 0 ? std::string("all") : std::to_string(request.checks));
    run.result = gradcheck_params([&] { return model.loss(batch.x, batch.y); }, model.named_parameters(), opts);
    return run;
  });
}

}  // namespace tf::runs
