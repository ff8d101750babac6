// tinyformer sample CHECKPOINT --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S]
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "model_loading.hpp"
#include "tinyformer/data/text_stream.hpp"
#include "tinyformer/infer/sample.hpp"

namespace tf::app {

namespace {

// A task's checkpoint completes the sequence (to the end of its answer) when the prompt has the task's shape, else
// writes one answer's worth; text and tokens: 64.
std::size_t default_new_tokens(const LoadedModel& loaded, const std::vector<Index>& prompt) {
  std::unique_ptr<data::DataSource> source;
  try {
    source = data_of(loaded);
  } catch (const std::exception&) {
    return 64;  // the data file is gone: nothing tells the answer's length
  }
  if (!source->is_task()) return 64;
  const std::size_t full = source->seq_len() + 1;
  const std::string mismatch = source->prompt_mismatch(prompt);
  if (mismatch.empty()) return full > prompt.size() ? full - prompt.size() : 0;
  fmt::print(stderr, "tinyformer: warning: {}; writing {} tokens (one answer's length)\n", mismatch,
             source->answer_length());
  return source->answer_length();
}

// Prints the text of the tokens made since the last call, at once (--tokens may be large).
void print_new_text(data::TextStream& stream, const std::vector<Index>& ids, bool last) {
  const std::string text = stream.next(ids, last);
  if (text.empty()) return;
  fmt::print("{}", text);
  std::fflush(stdout);
}

}  // namespace

void add_sample_command(CLI::App& app) {
  struct Opts {
    std::string checkpoint, prompt;
    infer::SampleOptions sample;
    std::optional<std::size_t> tokens;
    std::uint64_t seed = 1337;
    bool no_cache = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a checkpoint");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  cmd->add_option("--prompt", o->prompt, "Text to continue")->required();
  cmd->add_option("--tokens", o->tokens,
                  "New tokens to generate (default: a task's checkpoint completes the sequence, to its answer's "
                  "end; otherwise 64)")
      ->check(whole_number(0, kMaxSampledTokens, "a bound on the time and memory of one sample"));
  cmd->add_option("--temperature", o->sample.temperature,
                  "Softmax temperature (>= 0; 0 = always the most likely "
                  "token)")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->add_flag("--no-cache", o->no_cache, "Recompute the whole sequence for every token (no KV cache)");
  cmd->add_option("--top-k", o->sample.top_k, "Sample among the k most likely tokens (0 = all)")
      ->capture_default_str()
      ->check(whole_number(0, 1'000'000'000, "more than any vocabulary"));
  cmd->add_option("--seed", o->seed, "Seed of the sampling generator")->capture_default_str()->check(whole_number(0));
  cmd->callback([o] {
    select_action([o] {
      LoadedModel loaded = load_trained_model(o->checkpoint);
      const std::vector<Index> prompt = encode_prompt(loaded, o->prompt);
      infer::SampleOptions options = o->sample;
      options.use_cache = !o->no_cache;
      options.stop_id = loaded.vocab.bos();
      options.new_tokens = o->tokens ? *o->tokens : default_new_tokens(loaded, prompt);
      Rng rng(o->seed);
      data::TextStream stream(loaded.vocab);  // the text appears as the tokens are made
      print_new_text(stream, prompt, false);
      options.on_token = [&](const std::vector<Index>& ids) { print_new_text(stream, ids, false); };
      std::vector<Index> ids;
      try {
        ids = infer::generate(*loaded.model, prompt, options, rng);
      } catch (const infer::NonFiniteLogits& e) {
        fmt::print("\n");
        throw std::runtime_error(fmt::format("{}: {}", o->checkpoint, e.what()));
      }
      print_new_text(stream, ids, true);
      fmt::print("\n");
      return 0;
    });
  });
}

}  // namespace tf::app
