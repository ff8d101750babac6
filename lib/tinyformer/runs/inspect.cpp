#include "tinyformer/runs/inspect.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/train/memory_estimate.hpp"

namespace fs = std::filesystem;

namespace tf::runs {

namespace {

IndexArray array_of(const std::vector<Index>& ids) {
  IndexArray x = IndexArray::from_shape({ids.size()});
  std::copy(ids.begin(), ids.end(), x.data());
  return x;
}

// The attention of `x` [T], with a model whose weights overflow named (its attention is not a distribution then).
Array<float> attention_or_refuse(LoadedGPT& model, const IndexArray& x) {
  Array<float> w = infer::probe_attention(*model.model, x);
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!std::isfinite(w.data()[i]))
      throw Error(ErrorKind::value, fmt::format("{}: the attention weights are not finite ({}); the weights overflow",
                                                model.path, w.data()[i]));
  return w;
}

// Verdicts per head [L][H], or empty when the scores have no pattern (a one-token prompt has no query to count).
std::vector<std::vector<std::string>> head_roles(const analysis::HeadScores& scores) {
  if (scores.patterns.empty()) return {};
  std::vector<std::vector<std::string>> roles(scores.layers, std::vector<std::string>(scores.heads));
  for (const auto& v : analysis::verdicts(scores)) roles[v.layer][v.head] = v.label();
  return roles;
}

// The bytes one batch of `batch_size` sequences needs while its attention is recorded: the weights [B,H,T,T] of
// every layer (twice: recorded and copied), the logits and their softmax [B,T,V], and the activations [B,T,C] of
// each layer, float32.
double batch_bytes(const LoadedGPT& model, std::size_t batch_size) {
  const double B = static_cast<double>(batch_size), T = static_cast<double>(model.model->context());
  const double L = static_cast<double>(model.config.n_layer), H = static_cast<double>(model.config.n_head);
  const double C = static_cast<double>(model.config.d_model), V = static_cast<double>(model.model->vocab_size());
  return 4.0 * B * T * (2 * L * H * T + 3 * V + 12 * L * C);
}

void check_counts(const LoadedGPT& model, std::size_t batches, std::size_t batch_size, const std::string& flag_prefix) {
  if (batches < 1 || batches > kMaxBatches)
    throw Error(ErrorKind::value, fmt::format("{}batches: must be from 1 to {} (a bound on the time), got {}",
                                              flag_prefix, kMaxBatches, batches));
  if (batch_size < 1 || batch_size > kMaxBatchSize)
    throw Error(ErrorKind::value,
                fmt::format("{}batch{}size: must be from 1 to {} (a bound on the memory of one batch's attention), "
                            "got {}",
                            flag_prefix, flag_prefix.empty() ? "_" : "-", kMaxBatchSize, batch_size));
  const double need = batch_bytes(model, batch_size), available = tf::available_memory();
  if (available > 0 && need > available)
    throw Error(ErrorKind::memory,
                fmt::format("{}batch{}size {}: one batch's attention and logits need an estimated {}; this machine has "
                            "{} available; use a smaller batch size",
                            flag_prefix, flag_prefix.empty() ? "_" : "-", batch_size, tf::format_bytes(need),
                            tf::format_bytes(available)));
}

}  // namespace

PromptAttention attention_of(LoadedGPT& model, const Prompt& prompt) {
  return at_boundary([&] {
    PromptAttention out;
    if (!prompt.warning.empty()) out.warnings.push_back(prompt.warning);
    const IndexArray x = array_of(prompt.ids);
    std::string note;
    const auto source = run_data_if_available(model, note);
    if (!source) out.notes.push_back(note + "; the maps are written without expected keys");
    infer::AttentionMap& map = out.map;
    map.step = model.step;
    map.weights = attention_or_refuse(model, x);
    map.labels = infer::token_labels(model.vocab, x);
    map.title = fmt::format("attention for the prompt, step {}", model.step);
    const bool cropped = prompt.dropped > 0;
    const std::string mismatch = source && !cropped ? source->prompt_mismatch(prompt.ids) : "";
    if (!mismatch.empty()) out.warnings.push_back(mismatch + "; no expected keys are drawn");
    const bool expected = source && !cropped && mismatch.empty() && !source->expected_pattern().empty();
    if (expected) {
      map.expected = source->expected_attention(x);
      map.expected_pattern = source->expected_pattern();
    }
    out.scores = analysis::score_heads(map.weights, x, map.expected);
    if (expected && out.scores.index_of(analysis::Pattern::expected))
      map.scores = out.scores.table(analysis::Pattern::expected);
    return out;
  });
}

void check_attention_outputs(const std::string& out) {
  at_boundary([&] { check_output_dir(out, {"attention.npy", "attention.json", "attention.png", "report.html"}); });
}

void write_attention_outputs(const std::string& out, const LoadedGPT& model, const PromptAttention& attention,
                             const std::string& prompt_text) {
  at_boundary([&] {
    check_attention_outputs(out);
    std::error_code ec;
    const bool made = !fs::exists(out, ec);
    fs::create_directories(out, ec);
    if (ec) throw Error(ErrorKind::file, fmt::format("cannot create --out {}: {}", out, ec.message()));
    try {
      const infer::AttentionMap& map = attention.map;
      infer::write_attention_files(out, "attention", map);
      io::ReportData report;
      report.title = fmt::format("attention of \"{}\" in {} (step {})", prompt_text, model.path, model.step);
      report.config_yaml = model.config_yaml;
      report.expected_pattern = map.expected_pattern;
      report.head_roles = head_roles(attention.scores);
      report.attention.push_back({map.step, map.labels, map.weights, map.expected, map.scores});
      io::write_html_report((fs::path(out) / "report.html").string(), report);
    } catch (...) {
      if (made) fs::remove_all(out, ec);
      throw;
    }
  });
}

void check_heads_request(const LoadedGPT& model, const HeadsRequest& request, const std::string& flag_prefix) {
  at_boundary([&] {
    if (request.prompt && request.prompt->ids.size() < 2)
      throw Error(ErrorKind::value, fmt::format("{}prompt: {} token; the head scores need at least 2 (a query and an "
                                                "earlier key)",
                                                flag_prefix, request.prompt->ids.size()));
    if (!request.prompt) check_counts(model, request.batches, request.batch_size, flag_prefix);
  });
}

analysis::HeadScores head_scores(LoadedGPT& model, const HeadsRequest& request, const std::string& flag_prefix) {
  return at_boundary([&] {
    check_heads_request(model, request, flag_prefix);
    if (request.prompt) {
      const IndexArray x = array_of(request.prompt->ids);
      return analysis::score_heads(attention_or_refuse(model, x), x);
    }
    const auto source = run_data(model);
    const auto scores = infer::score_heads_on_data(*model.model, *source, request.batch_size, request.batches);
    if (!scores)
      throw Error(ErrorKind::value,
                  fmt::format("{}: no sequence has finite attention to score (the weights overflow)", model.path));
    return *scores;
  });
}

infer::AblationReport ablate(LoadedGPT& model, std::size_t batches, std::size_t batch_size, const std::string& mode,
                             const std::string& flag_prefix) {
  return at_boundary([&] {
    if (mode != "zero" && mode != "mean")
      throw Error(ErrorKind::value,
                  fmt::format("{}: '{}'; valid are zero, mean", flag_prefix.empty() ? "mode" : "--ablate-mode", mode));
    check_counts(model, batches, batch_size, flag_prefix);
    const auto source = run_data(model);
    return infer::ablate_heads(*model.model, *source, batch_size, batches,
                               mode == "mean" ? infer::Ablation::mean : infer::Ablation::zero);
  });
}

PromptLens lens_of(LoadedGPT& model, const Prompt& prompt, const LensRequest& request, const std::string& flag_prefix) {
  return at_boundary([&] {
    PromptLens r;
    r.position = request.position.value_or(prompt.ids.size() - 1);
    if (r.position >= prompt.ids.size())
      throw Error(ErrorKind::value, fmt::format("{}position {} is past the prompt's {} tokens; valid: 0 to {}",
                                                flag_prefix, r.position, prompt.ids.size(), prompt.ids.size() - 1));
    if (request.top < 1 || request.top > model.vocab.size())
      throw Error(
          ErrorKind::value,
          fmt::format("{}top {} is {} the vocabulary's {} tokens; valid: 1 to {}", flag_prefix, request.top,
                      request.top < 1 ? "fewer than one of" : "more than", model.vocab.size(), model.vocab.size()));
    std::optional<Index> answer;
    if (!request.answer.empty()) {
      std::vector<Index> ids;
      try {
        ids = model.vocab.encode(request.answer);
      } catch (const std::invalid_argument& e) {
        throw Error(ErrorKind::value, fmt::format("{}answer: {}", flag_prefix, e.what()));
      }
      if (ids.size() != 1)
        throw Error(ErrorKind::value, fmt::format("{}answer '{}' is {} tokens of this vocabulary; give exactly one",
                                                  flag_prefix, request.answer, ids.size()));
      answer = ids.front();
    }
    const IndexArray x = array_of(prompt.ids);
    r.lens = infer::logit_lens(*model.model, x, r.position, request.top);
    r.answer = answer.value_or(r.lens.back().tokens.front());  // the model's own top prediction
    r.attribution = infer::direct_logit_attribution(*model.model, x, r.position, r.answer);
    return r;
  });
}

}  // namespace tf::runs
