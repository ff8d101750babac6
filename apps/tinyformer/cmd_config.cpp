// tinyformer config CONFIG.yaml [--set ...]: the resolved config (every key, defaults filled) as YAML;
// tinyformer config --docs: the reference of every key (docs/config.md), made from the field list.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/runs/training.hpp"

namespace tf::app {

void add_config_command(CLI::App& app) {
  struct Opts {
    std::string config;
    std::vector<std::string> overrides;
    bool docs = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("config", "Print the resolved config as YAML, or with --docs the reference of every key");
  cmd->add_option("config", o->config, "YAML config file");
  cmd->add_option("--set", o->overrides, "Override a config key (repeatable)");
  CLI::Option* docs = cmd->add_flag("--docs", o->docs, "Print docs/config.md (every key, type, default and meaning)");
  docs->excludes(cmd->get_option("config"));
  cmd->callback([o] {
    select_action([o] {
      if (o->docs) {
        fmt::print("{}", config::reference_markdown());
        return 0;
      }
      if (o->config.empty()) throw std::invalid_argument("config: give a config file (or --docs)");
      runs::TrainOptions options;
      options.config_path = o->config;
      options.overrides = o->overrides;
      fmt::print("{}", runs::resolved_config(options));
      return 0;
    });
  });
}

}  // namespace tf::app
