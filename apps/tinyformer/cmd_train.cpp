// tinyformer train CONFIG.yaml [--set key.path=value ...] [--out DIR] [--resume [--allow-changes] | --overwrite]
//                  [--init-from FILE] [--quiet]
#include <atomic>
#include <csignal>

#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/config/keys.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/runs/training.hpp"

namespace tf::app {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<bool> g_in_steps{false};  // set by train() while the steps run
// Rank 0 alone says why it stopped, as it alone prints everything else, and only while train() runs. When a rank of a
// job exits with an error, mpirun sends SIGTERM to the ranks still ending (their MPI_Finalize, their exit): by then
// rank 0 has printed the error line, and a line from them would only repeat that the job ended.
std::atomic<bool> g_speaks{true};
void say(const char* msg, std::size_t n) {
  if (!g_speaks.load()) return;
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, msg, n);
}
// The first SIGINT/SIGTERM/SIGUSR1/SIGHUP asks the loop to finish the step, save and stop; a second one stops at once
// (checkpoints are written atomically, so the last one stays whole). Outside the steps (loading the config and the
// data, building the model, writing the report) there is nothing to save: the first one stops at once. Stopping at
// once removes the temporary files being written. A step, evaluation or save that has not ended 10 s after the
// first request (a huge held-out set, a slow disk) is not waited for longer: SIGALRM stops the process as a second
// request would. Only async-signal-safe calls here.
// Under mpirun: Ctrl-C makes mpirun send SIGTERM to every rank (after odls_base_sigkill_timeout seconds, and SIGKILL
// as long again after it); SIGUSR1 sent to mpirun is forwarded to every rank at once.
constexpr unsigned kGraceSeconds = 10;
extern "C" void stop_after_grace(int) {
  io::remove_temporaries_in_progress();
  static const char msg[] =
      "\ntinyformer: the step, evaluation or save did not end within 10 s of the interrupt: stopping "
      "now without saving (a checkpoint written before is intact)\n";
  say(msg, sizeof msg - 1);
  ::_exit(130);
}

extern "C" void request_stop(int) {
  if (!g_in_steps.load()) {
    io::remove_temporaries_in_progress();
    static const char msg[] =
        "\ntinyformer: interrupted outside the training steps: stopped now (no file is left half-written)\n";
    say(msg, sizeof msg - 1);
    ::_exit(130);
  }
  if (!g_stop.exchange(true)) {
    ::alarm(kGraceSeconds);
    return;
  }
  io::remove_temporaries_in_progress();
  static const char msg[] =
      "\ntinyformer: second interrupt: stopping now without saving (the last checkpoint is intact)\n";
  say(msg, sizeof msg - 1);
  ::_exit(130);
}
}  // namespace

void add_train_command(CLI::App& app) {
  auto opts = std::make_shared<runs::TrainOptions>();
  auto out = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("train", "Train a GPT from a YAML config; writes the run dir (docs/cli.md)");
  cmd->add_option("config", opts->config_path, "YAML config file (configs/*.yaml)")->required();
  cmd->add_option("--set", opts->overrides,
                  fmt::format("Override a config key: --set {}=200 (repeatable)", tf::config::keys::training::steps));
  cmd->add_option("--out", *out, fmt::format("Run directory (default: {})", tf::config::keys::logging::out_dir))
      ->check(non_empty_path());
  CLI::Option* resume = cmd->add_flag("--resume", opts->resume, "Continue from <out>/checkpoint.safetensors");
  cmd->add_flag("--allow-changes", opts->allow_changes,
                "With --resume: accept config keys and data that differ from the checkpoint's (not the model's shape)")
      ->needs(resume);
  cmd->add_flag("--overwrite", opts->overwrite, "Start afresh in an out dir that holds an earlier run (replaces it)")
      ->excludes(resume);
  cmd->add_option("--init-from", opts->init_from, "Start from these weights (safetensors, nanoGPT names)")
      ->check(readable_file())
      ->excludes(resume);  // a resumed run takes its weights from its checkpoint
  cmd->add_flag("--quiet", *quiet, "No progress lines; only the final summary line");
  cmd->callback([opts, out, quiet] {
    select_action([opts, out, quiet] {
      if (!out->empty()) opts->out_dir = *out;
      opts->progress = !*quiet;
      opts->stop = &g_stop;
      opts->in_steps = &g_in_steps;
      g_speaks = dist::is_root();
      struct Silence {  // train() has returned or thrown: what it printed, or the error line, tells what happened
        ~Silence() { g_speaks = false; }
      } silence;
      on_signal(SIGINT, request_stop);  // finish the step, checkpoint, exit 130
      on_signal(SIGTERM, request_stop);
      on_signal(SIGUSR1, request_stop);
      on_hangup(request_stop);  // the terminal closed: as Ctrl-C (nohup's ignored SIGHUP stays ignored)
      on_signal(SIGALRM, stop_after_grace);
      const runs::TrainResult r = runs::train(*opts);
      return r.interrupted ? 130 : 0;
    });
  });
}

}  // namespace tf::app
