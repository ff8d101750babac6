// tinyformer sample CHECKPOINT --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S]
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/sampling.hpp"

namespace tf::app {

namespace {
// Ctrl-C (or SIGTERM) ends the sample after the token being made: its text is printed whole, then exit 130. When
// stdout is a full pipe that nobody reads, the interrupted write fails and nothing more is written.
std::atomic<bool> g_cancel{false};
extern "C" void cancel_sample(int) { g_cancel.store(true); }
}  // namespace

void add_sample_command(CLI::App& app) {
  struct Opts {
    std::string checkpoint, prompt;
    runs::SampleRequest sample;
    bool no_cache = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a checkpoint");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  cmd->add_option("--prompt", o->prompt, "Text to continue")->required();
  cmd->add_option("--tokens", o->sample.tokens,
                  "New tokens to generate (default: a task's checkpoint completes the sequence, to its answer's "
                  "end; otherwise 64)")
      ->check(whole_number(0, runs::kMaxNewTokens, "a bound on the time and memory of one sample"));
  cmd->add_option("--temperature", o->sample.temperature,
                  "Softmax temperature (0 = always the most likely token, else at least 1e-6)")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->add_flag("--no-cache", o->no_cache, "Recompute the whole sequence for every token (no KV cache)");
  cmd->add_option("--top-k", o->sample.top_k, "Sample among the k most likely tokens (0 = all)")
      ->capture_default_str()
      ->check(whole_number(0, 1'000'000'000, "more than any vocabulary"));
  cmd->add_option("--seed", o->sample.seed, "Seed of the sampling generator")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd->callback([o] {
    select_action([o] {
      runs::SampleRequest request = o->sample;
      request.use_cache = !o->no_cache;
      runs::check_sample_request(request, "--");  // before the checkpoint is read
      LoadedGPT model = runs::open_checkpoint(o->checkpoint);
      const runs::Prompt prompt = runs::encode_prompt(model, o->prompt, "--prompt");
      if (!prompt.warning.empty()) warn(prompt.warning);
      bool printed = false, cut = false;  // cut: a write failed after Ctrl-C, and nothing more is written
      const auto print = [&](const std::string& text) {  // the text appears as the tokens are made
        if (cut) return;
        try {
          fmt::print("{}", text);
          if (std::fflush(stdout) != 0)
            throw std::system_error(errno, std::generic_category(), "cannot write to stdout");
        } catch (const std::system_error&) {
          if (!g_cancel.load()) throw;
          std::clearerr(stdout);
          cut = true;
          return;
        }
        printed = true;
      };
      on_signal(SIGINT, cancel_sample);
      on_signal(SIGTERM, cancel_sample);
      runs::Sample s;
      try {
        s = runs::sample(model, prompt, request, print, &g_cancel, "--");
        for (const auto& w : s.warnings) warn(w);
      } catch (...) {
        if (printed && !cut) fmt::print("\n");  // the error line starts a line of its own
        throw;
      }
      if (!cut) fmt::print("\n");
      return s.cancelled ? 130 : 0;
    });
  });
}

}  // namespace tf::app
