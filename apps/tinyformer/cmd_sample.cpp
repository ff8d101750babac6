// tinyformer sample CHECKPOINT --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "model_loading.hpp"
#include "tinyformer/infer/sample.hpp"

namespace tf::app {

void add_sample_command(CLI::App& app) {
  struct Opts {
    std::string checkpoint, prompt;
    infer::SampleOptions sample;
    std::uint64_t seed = 1337;
  };
  auto o = std::make_shared<Opts>();
  o->sample.new_tokens = 64;
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a checkpoint");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(CLI::ExistingFile);
  cmd->add_option("--prompt", o->prompt, "Text to continue")->required();
  cmd->add_option("--tokens", o->sample.new_tokens, "New tokens to generate")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd->add_option("--temperature", o->sample.temperature, "Softmax temperature (> 0)")->capture_default_str();
  cmd->add_option("--top-k", o->sample.top_k, "Sample among the k most likely tokens (0 = all)")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd->add_option("--seed", o->seed, "Seed of the sampling generator")->capture_default_str()->check(whole_number(0));
  cmd->callback([o] {
    select_action([o] {
      LoadedModel loaded = load_trained_model(o->checkpoint);
      const std::vector<Index> prompt = encode_prompt(loaded, o->prompt);
      Rng rng(o->seed);
      const std::vector<Index> ids = infer::generate(*loaded.model, prompt, o->sample, rng);
      fmt::print("{}\n", loaded.vocab.decode(ids));
      return 0;
    });
  });
}

}  // namespace tf::app
