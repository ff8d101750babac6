// tinyformer attention CHECKPOINT --prompt TEXT [--out DIR]: the learned attention maps for a prompt, with the
// expected keys outlined and each head's scores when the prompt has the shape of the task's training sequences.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/inspect.hpp"

namespace tf::app {

namespace {

struct AttentionOptions {
  std::string checkpoint, prompt, out = "attention_maps";
};

int run_attention(const AttentionOptions& o) {
  runs::check_attention_outputs(o.out);  // before the checkpoint is read: nothing is written when one is refused
  LoadedGPT model = runs::open_checkpoint(o.checkpoint);
  const runs::Prompt prompt = runs::encode_prompt(model, o.prompt, "--prompt");
  const runs::PromptAttention attention = runs::attention_of(model, prompt);
  for (const auto& n : attention.notes) note(n);
  for (const auto& w : attention.warnings) warn(w);
  runs::write_attention_outputs(o.out, model, attention, o.prompt);
  const auto& shape = attention.map.weights.shape();
  fmt::print("wrote {0}/attention.npy [L,H,T,T] = [{1}, {2}, {3}, {3}], {0}/attention.json, {0}/attention.png, "
             "{0}/report.html\n",
             o.out, shape[0], shape[1], shape[2]);
  return 0;
}

}  // namespace

void add_attention_command(CLI::App& app) {
  auto o = std::make_shared<AttentionOptions>();
  CLI::App* cmd = app.add_subcommand("attention", "Write the attention maps of a prompt (npy, json, png, html)");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  cmd->add_option("--prompt", o->prompt, "Input text")->required();
  cmd->add_option("--out", o->out, "Output directory")->capture_default_str()->check(non_empty_path());
  cmd->callback([o] { select_action([o] { return run_attention(*o); }); });
}

}  // namespace tf::app
