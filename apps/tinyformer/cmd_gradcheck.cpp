// tinyformer gradcheck CONFIG.yaml [--set ...] [--small] [--checks N]: float64 gradient check of the
// configured GPT on one batch of its data, one line per parameter tensor, non-zero exit on failure.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/runs/training.hpp"

namespace tf::app {

void add_gradcheck_command(CLI::App& app) {
  auto o = std::make_shared<runs::GradcheckRequest>();
  CLI::App* cmd =
      app.add_subcommand("gradcheck", "Float64 gradient check of the configured model against finite differences");
  cmd->add_option("config", o->config_path, "YAML config file")->required();
  cmd->add_option("--set", o->overrides, "Override a config key (repeatable)");
  cmd->add_flag("--small", o->small, "Shrink the model first: d_model = 4 per head, at most 2 layers");
  cmd->add_option("--checks", o->checks, "Elements checked per parameter tensor, chosen by a fixed seed (0 = all)")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd->add_option("--batch", o->batch, "Sequences in the checked batch")
      ->capture_default_str()
      ->check(whole_number(1, runs::kMaxGradcheckBatch,
                           "a float64 gradcheck of more sequences needs more memory than it tells"));
  cmd->callback([o] {
    select_action([o] {
      const runs::GradcheckRun run = runs::gradcheck(*o, "--");
      const GradcheckResult& r = run.result;
      fmt::print("{}\n", run.header);
      fmt::print("{}", r.report());
      fmt::print("gradcheck: {}\n", r.ok ? "PASSED" : "FAILED");
      return r.ok ? 0 : 1;
    });
  });
}

}  // namespace tf::app
