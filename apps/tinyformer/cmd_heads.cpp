// tinyformer heads CHECKPOINT [--prompt TEXT | --data] [--batches N] [--json] [--ablate [--ablate-mode zero|mean]]
// What each head does (its score for each named pattern, and a verdict), and with --ablate whether it matters.
#include <algorithm>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/inspect.hpp"

namespace tf::app {

namespace {

struct HeadsOptions {
  std::string checkpoint, prompt;
  bool data = false, json = false, ablate = false;
  std::string ablate_mode = "zero";
  std::size_t batches = 8, batch_size = 64;
};

std::string table_text(const std::vector<std::vector<double>>& t) {
  std::string out = "      ";
  for (std::size_t h = 0; h < (t.empty() ? 0 : t[0].size()); ++h) out += fmt::format("  H{:<4}", h);
  for (std::size_t l = 0; l < t.size(); ++l) {
    out += fmt::format("\n  L{:<3} ", l);
    for (double v : t[l]) out += fmt::format("  {:.3f}", v);
  }
  return out;
}

void print_scores(const analysis::HeadScores& s) {
  for (std::size_t p = 0; p < s.patterns.size(); ++p)
    fmt::print("{}: {} (uniform head {:.3f}; {} queries)\n{}\n\n", analysis::pattern_name(s.patterns[p]),
               analysis::pattern_description(s.patterns[p]), s.baseline[p], s.counted[p],
               table_text(s.table(s.patterns[p])));
  fmt::print(
      "mean attention entropy (nats; a uniform head: {:.3f})\n{}\n\nverdicts (best pattern >= {}, else diffuse):\n",
      s.uniform_entropy, table_text(s.entropy_table()), analysis::kPatternThreshold);
  for (const auto& v : analysis::verdicts(s)) fmt::print("  layer {} head {}: {}\n", v.layer, v.head, v.label());
}

// The ablation table, heads sorted by the accuracy they cost (then the loss they add).
void print_ablation(const infer::AblationReport& r, const std::string& mode) {
  const double acc0 = r.intact.accuracy.value_or(NAN);
  fmt::print("\nablation ({}: each head's output replaced before c_proj): intact loss {:.4f}{}\n", mode, r.intact.loss,
             r.intact.accuracy ? fmt::format(", accuracy {:.3f}", acc0) : "");
  std::vector<infer::HeadAblation> heads = r.heads;
  std::stable_sort(heads.begin(), heads.end(), [&](const auto& a, const auto& b) {
    const double da = acc0 - a.result.accuracy.value_or(acc0), db = acc0 - b.result.accuracy.value_or(acc0);
    return da != db ? da > db : a.result.loss > b.result.loss;
  });
  fmt::print("  head      loss   +loss{}\n", r.intact.accuracy ? "  accuracy     drop" : "");
  for (const auto& h : heads) {
    std::string line =
        fmt::format("  L{} H{:<4} {:7.4f} {:+7.4f}", h.layer, h.head, h.result.loss, h.result.loss - r.intact.loss);
    if (h.result.accuracy) line += fmt::format("     {:.3f}  {:+.3f}", *h.result.accuracy, acc0 - *h.result.accuracy);
    fmt::print("{}\n", line);
  }
}

nlohmann::json ablation_json(const infer::AblationReport& r, const std::string& mode) {
  auto one = [](const infer::EvalResult& e) {
    nlohmann::json j = {{"loss", e.loss}};
    if (e.accuracy) j["accuracy"] = *e.accuracy;
    return j;
  };
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& h : r.heads) heads.push_back({{"layer", h.layer}, {"head", h.head}, {"result", one(h.result)}});
  return {{"mode", mode}, {"intact", one(r.intact)}, {"heads", heads}};
}

int run_heads(const HeadsOptions& o) {
  LoadedGPT model = runs::open_checkpoint(o.checkpoint);
  runs::HeadsRequest request;
  request.batches = o.batches, request.batch_size = o.batch_size;
  if (!o.prompt.empty()) request.prompt = runs::encode_prompt(model, o.prompt, "--prompt");
  if (request.prompt && !request.prompt->warning.empty()) warn(request.prompt->warning);
  runs::check_heads_request(model, request, "--");
  const analysis::HeadScores scores = runs::head_scores(model, request, "--");
  const std::string what = request.prompt ? fmt::format("the prompt ({} tokens)", request.prompt->ids.size())
                                          : fmt::format("held-out data, {} sequences", scores.sequences);
  std::optional<infer::AblationReport> ablation;
  if (o.ablate) ablation = runs::ablate(model, o.batches, o.batch_size, o.ablate_mode, "--");
  if (o.json) {
    nlohmann::json j = nlohmann::json::parse(infer::heads_json(scores));
    j["checkpoint"] = o.checkpoint;
    j["step"] = model.step;
    if (ablation) j["ablation"] = ablation_json(*ablation, o.ablate_mode);
    fmt::print("{}\n", j.dump(1));
    return 0;
  }
  fmt::print("heads of {} (step {}) on {}\n\n", o.checkpoint, model.step, what);
  print_scores(scores);
  if (ablation) print_ablation(*ablation, o.ablate_mode);
  return 0;
}

}  // namespace

void add_heads_command(CLI::App& app) {
  auto o = std::make_shared<HeadsOptions>();
  CLI::App* cmd = app.add_subcommand("heads", "What each attention head does (pattern scores, verdicts) and, with "
                                              "--ablate, how much the model needs it");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  CLI::Option* prompt = cmd->add_option("--prompt", o->prompt, "Score the heads on this text only");
  cmd->add_flag("--data", o->data, "Score the heads on the run's held-out data (the default)")->excludes(prompt);
  cmd->add_option("--batches", o->batches, "Held-out batches to use")
      ->capture_default_str()
      ->check(whole_number(1, 100'000, "a bound on the time"));
  cmd->add_option("--batch-size", o->batch_size, "Sequences per batch")
      ->capture_default_str()
      ->check(whole_number(1, 65'536, "a bound on the memory of one batch's attention"));
  cmd->add_flag("--json", o->json, "Print one JSON object (scores, entropies, verdicts, ablation)");
  CLI::Option* ablate =
      cmd->add_flag("--ablate", o->ablate, "Ablate each head in turn on the held-out data")->excludes(prompt);
  cmd->add_option("--ablate-mode", o->ablate_mode,
                  "zero: the head's output is 0; mean: its mean over the held-out data")
      ->capture_default_str()
      ->check(CLI::IsMember({"zero", "mean"}))
      ->needs(ablate);
  cmd->callback([o] { select_action([o] { return run_heads(*o); }); });
}

}  // namespace tf::app
