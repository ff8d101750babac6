// tinyformer gradcheck CONFIG.yaml [--set ...] [--small] [--checks N]: float64 gradient check of the
// configured GPT on one batch of its data, one line per parameter tensor, non-zero exit on failure.
#include <algorithm>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/autograd/gradcheck.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/train/memory_estimate.hpp"
#include "tinyformer/train/setup.hpp"

namespace tf::app {

void add_gradcheck_command(CLI::App& app) {
  struct Opts {
    std::string config;
    std::vector<std::string> overrides;
    bool small = false;
    std::size_t checks = 16;
    std::size_t batch = 2;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("gradcheck", "Float64 gradient check of the configured model against finite differences");
  cmd->add_option("config", o->config, "YAML config file")->required();
  cmd->add_option("--set", o->overrides, "Override a config key (repeatable)");
  cmd->add_flag("--small", o->small, "Shrink the model first: d_model = 4 per head, at most 2 layers");
  cmd->add_option("--checks", o->checks, "Elements checked per parameter tensor, chosen by a fixed seed (0 = all)")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd->add_option("--batch", o->batch, "Sequences in the checked batch")
      ->capture_default_str()
      ->check(whole_number(1, 4096, "a float64 gradcheck of more sequences needs more memory than it tells"));
  cmd->callback([o] {
    select_action([o] {
      config::RunConfig cfg = config::load_config(o->config, o->overrides);
      if (o->small) {
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
      const data::Batch batch = source->train_batch(o->batch, rng);
      GradcheckOptions opts;
      opts.max_checks_per_input = o->checks;
      fmt::print("gradcheck: {} parameters in {} tensors, batch [{}, {}], float64, eps {:g}, pass when "
                 "|analytic - numeric| <= {:g} + {:g} |numeric|, {} elements per tensor\n",
                 model.num_parameters(), model.named_parameters().size(), batch.x.shape()[0], batch.x.shape()[1],
                 opts.eps, opts.atol, opts.rtol, o->checks == 0 ? std::string("all") : std::to_string(o->checks));
      const GradcheckResult r =
          gradcheck_params([&] { return model.loss(batch.x, batch.y); }, model.named_parameters(), opts);
      fmt::print("{}", r.report());
      fmt::print("gradcheck: {}\n", r.ok ? "PASSED" : "FAILED");
      return r.ok ? 0 : 1;
    });
  });
}

}  // namespace tf::app
