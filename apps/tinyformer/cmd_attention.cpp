// tinyformer attention CHECKPOINT --prompt TEXT [--out DIR]: the learned attention maps for a prompt, with the
// expected keys outlined and each head's scores when the prompt has the shape of the task's training sequences.
#include <filesystem>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "model_loading.hpp"
#include "tinyformer/analysis/head_patterns.hpp"
#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/train/run_report.hpp"

namespace tf::app {

namespace {

struct AttentionOptions {
  std::string checkpoint, prompt, out = "attention_maps";
};

// The data the checkpoint was trained on, for its expected keys; nullptr (with a note) when it cannot be rebuilt.
std::unique_ptr<data::DataSource> data_if_available(const LoadedModel& loaded) {
  try {
    return data_of(loaded);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tinyformer: note: {}; the maps are written without expected keys\n", e.what());
    return nullptr;
  }
}

// Every file attention writes, checked before the checkpoint is read (nothing is written when one is refused).
void plan_attention_outputs(const std::string& out) {
  std::error_code ec;
  const auto kind = std::filesystem::status(out, ec).type();
  if (kind == std::filesystem::file_type::not_found) return;
  if (kind != std::filesystem::file_type::directory)
    throw std::runtime_error(fmt::format("--out {} is not a directory; choose another --out", out));
  for (const char* name : {"attention.npy", "attention.json", "attention.png", "report.html"})
    check_output_path((std::filesystem::path(out) / name).string());
}

int run_attention(const AttentionOptions& o) {
  plan_attention_outputs(o.out);
  LoadedModel loaded = load_trained_model(o.checkpoint);
  bool cropped = false;
  const std::vector<Index> ids = encode_prompt(loaded, o.prompt, &cropped);
  IndexArray x = IndexArray::from_shape({ids.size()});
  std::copy(ids.begin(), ids.end(), x.data());
  const auto source = data_if_available(loaded);
  train::AttentionMap map;
  map.step = loaded.step;
  map.weights = infer::probe_attention(*loaded.model, x);
  map.labels = infer::token_labels(loaded.vocab, x);
  map.title = fmt::format("attention for the prompt, step {}", loaded.step);
  const std::string mismatch = source && !cropped ? source->prompt_mismatch(ids) : "";
  if (!mismatch.empty()) fmt::print(stderr, "tinyformer: warning: {}; no expected keys are drawn\n", mismatch);
  const bool expected = source && !cropped && mismatch.empty() && !source->expected_pattern().empty();
  if (expected) {
    map.expected = source->expected_attention(x);
    map.expected_pattern = source->expected_pattern();
  }
  const analysis::HeadScores scores = analysis::score_heads(map.weights, x, map.expected);
  if (expected && scores.index_of(analysis::Pattern::expected)) map.scores = scores.table(analysis::Pattern::expected);
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create --out {}: {}", o.out, ec.message()));
  train::write_attention_files(o.out, "attention", map);

  io::ReportData report;
  report.title = fmt::format("attention of \"{}\" in {} (step {})", o.prompt, o.checkpoint, loaded.step);
  report.config_yaml = loaded.config_yaml;
  report.expected_pattern = map.expected_pattern;
  report.head_roles.assign(scores.layers, std::vector<std::string>(scores.heads));
  for (const auto& v : analysis::verdicts(scores)) report.head_roles[v.layer][v.head] = v.label();
  report.attention.push_back({map.step, map.labels, map.weights, map.expected, map.scores});
  io::write_html_report((std::filesystem::path(o.out) / "report.html").string(), report);
  fmt::print("wrote {0}/attention.npy [L,H,T,T] = [{1}, {2}, {3}, {3}], {0}/attention.json, {0}/attention.png, "
             "{0}/report.html\n",
             o.out, map.weights.shape()[0], map.weights.shape()[1], map.weights.shape()[2]);
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
