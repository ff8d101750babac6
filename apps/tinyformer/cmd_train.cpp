// tinyformer train CONFIG.yaml [--set key.path=value ...] [--out DIR] [--resume [--allow-changes] | --overwrite]
//                  [--init-from FILE] [--quiet]
#include <atomic>
#include <csignal>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "tinyformer/train/trainer.hpp"

namespace tf::app {

namespace {
std::atomic<bool> g_stop{false};
// The first SIGINT/SIGTERM/SIGUSR1 asks the loop to finish the step, save and stop; a second one stops at once
// (checkpoints are written atomically, so the last one stays whole). Only async-signal-safe calls here.
// Under mpirun: Ctrl-C makes mpirun send SIGTERM to every rank (after odls_base_sigkill_timeout seconds, and SIGKILL
// as long again after it); SIGUSR1 sent to mpirun is forwarded to every rank at once.
extern "C" void request_stop(int) {
  if (!g_stop.exchange(true)) return;
  static const char msg[] = "\ntinyformer: second interrupt: stopping now without saving (the last checkpoint is intact)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  ::_exit(130);
}
}  // namespace

void add_train_command(CLI::App& app) {
  auto opts = std::make_shared<train::TrainOptions>();
  auto out = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("train", "Train a GPT from a YAML config; writes the run dir (see README)");
  cmd->add_option("config", opts->config_path, "YAML config file (configs/*.yaml)")->required();
  cmd->add_option("--set", opts->overrides, "Override a config key: --set training.steps=200 (repeatable)");
  cmd->add_option("--out", *out, "Run directory (default: logging.out_dir)")->check(non_empty_path());
  CLI::Option* resume = cmd->add_flag("--resume", opts->resume, "Continue from <out>/checkpoint.safetensors");
  cmd->add_flag("--allow-changes", opts->allow_changes,
                "With --resume: accept config keys and data that differ from the checkpoint's (not the model's shape)")
      ->needs(resume);
  cmd->add_flag("--overwrite", opts->overwrite, "Start afresh in an out dir that holds an earlier run (replaces it)")
      ->excludes(resume);
  cmd->add_option("--init-from", opts->init_from, "Start from these weights (safetensors, nanoGPT names)")
      ->check(readable_file());
  cmd->add_flag("--quiet", *quiet, "No progress lines; only the final summary line");
  cmd->callback([opts, out, quiet] {
    select_action([opts, out, quiet] {
      if (!out->empty()) opts->out_dir = *out;
      opts->progress = !*quiet;
      opts->stop = &g_stop;
      std::signal(SIGINT, request_stop);  // finish the step, checkpoint, exit 130
      std::signal(SIGTERM, request_stop);
      std::signal(SIGUSR1, request_stop);
      const train::TrainResult r = train::train(*opts);
      return r.interrupted ? 130 : 0;
    });
  });
}

}  // namespace tf::app
