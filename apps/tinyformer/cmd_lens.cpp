// tinyformer lens CHECKPOINT --prompt TEXT [--position N] [--top K] [--answer TOKEN] [--json]
// The logit lens (the top tokens after the embeddings and after each block) at one position of a prompt, and the direct
// logit attribution of the answer token there: what each head, each MLP and the embeddings add to its logit. The
// analysis is the library's (runs::lens_of over infer/lens.hpp); this file parses, calls and prints.
#include <cmath>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/inspect.hpp"

namespace tf::app {

namespace {

struct LensOptions {
  std::string checkpoint, prompt, answer;
  std::optional<std::size_t> position;
  std::size_t top = 5;
  bool json = false;
};

void print_text(const LoadedGPT& loaded, const std::vector<Index>& ids, std::size_t position,
                const std::vector<infer::LensRow>& lens, Index answer, const infer::LogitAttribution& a) {
  fmt::print("logit lens of {} (step {}) at position {} (token '{}'), top {}:\n", loaded.path, loaded.step, position,
             loaded.vocab.label(ids[position]), lens.front().tokens.size());
  for (const auto& row : lens) {
    std::string line = fmt::format("  {:<9}", row.stage);
    for (std::size_t i = 0; i < row.tokens.size(); ++i)
      line += fmt::format("  {:>6} {:.3f}", "'" + loaded.vocab.label(row.tokens[i]) + "'", row.probabilities[i]);
    fmt::print("{}\n", line);
  }
  fmt::print("\ndirect logit attribution of '{}' (logit - mean logit {:+.3f}; the parts add up to {:+.3f}):\n",
             loaded.vocab.label(answer), a.logit, a.sum());
  std::string header = "        ";
  for (std::size_t h = 0; h < a.heads.front().size(); ++h) header += fmt::format("  {:>7}", fmt::format("H{}", h));
  header += "  attn bias";
  if (!a.mlp.empty()) header += "      MLP";
  fmt::print("{}\n", header);
  for (std::size_t l = 0; l < a.heads.size(); ++l) {
    std::string line = fmt::format("  L{:<5}", l);
    for (const double v : a.heads[l]) line += fmt::format("  {:+7.3f}", v);
    line += fmt::format("    {:+7.3f}", a.attention_bias[l]);
    if (!a.mlp.empty()) line += fmt::format("  {:+7.3f}", a.mlp[l]);
    fmt::print("{}\n", line);
  }
  fmt::print("  embeddings {:+.3f}, final norm's bias {:+.3f}\n", a.embed, a.final_bias);
}

nlohmann::json to_json(const LoadedGPT& loaded, std::size_t position, const std::vector<infer::LensRow>& lens,
                       Index answer, const infer::LogitAttribution& a) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : lens) {
    nlohmann::json tokens = nlohmann::json::array();
    for (std::size_t i = 0; i < row.tokens.size(); ++i)
      tokens.push_back(
          {{"token", loaded.vocab.token(row.tokens[i])}, {"id", row.tokens[i]}, {"probability", row.probabilities[i]}});
    rows.push_back({{"stage", row.stage}, {"top", tokens}});
  }
  return {{"checkpoint", loaded.path},
          {"step", loaded.step},
          {"position", position},
          {"lens", rows},
          {"answer", loaded.vocab.token(answer)},
          {"direct_logit_attribution",
           {{"logit", a.logit},
            {"embed", a.embed},
            {"heads", a.heads},
            {"attention_bias", a.attention_bias},
            {"mlp", a.mlp},
            {"final_bias", a.final_bias}}}};
}

int run_lens(const LensOptions& o) {
  LoadedGPT loaded = runs::open_checkpoint(o.checkpoint);
  const runs::Prompt prompt = runs::encode_prompt(loaded, o.prompt, "--prompt");
  if (!prompt.warning.empty()) warn(prompt.warning);
  runs::LensRequest request;
  request.position = o.position;
  request.top = o.top;
  request.answer = o.answer;
  const runs::PromptLens r = runs::lens_of(loaded, prompt, request, "--");
  if (o.json)
    fmt::print("{}\n", to_json(loaded, r.position, r.lens, r.answer, r.attribution).dump(1));
  else
    print_text(loaded, prompt.ids, r.position, r.lens, r.answer, r.attribution);
  return 0;
}

}  // namespace

void add_lens_command(CLI::App& app) {
  auto o = std::make_shared<LensOptions>();
  CLI::App* cmd = app.add_subcommand("lens", "The logit lens after each layer at one position of a prompt, and the "
                                             "direct logit attribution of the answer token to every head");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  cmd->add_option("--prompt", o->prompt, "The text to read (a task's format, e.g. \"12 34 =\")")->required();
  cmd->add_option("--position", o->position, "The position to read, counted from 0 (default: the last)")
      ->check(whole_number(0, 1'000'000, "a bound on the context"));
  cmd->add_option("--top", o->top, "Tokens shown per layer")
      ->capture_default_str()
      ->check(whole_number(1, 1'000'000, "a bound on the vocabulary"));
  cmd->add_option("--answer", o->answer,
                  "The token whose logit is attributed (default: the model's top prediction at the position)");
  cmd->add_flag("--json", o->json, "Print one JSON object (lens rows, attribution)");
  cmd->callback([o] { select_action([o] { return run_lens(*o); }); });
}

}  // namespace tf::app
