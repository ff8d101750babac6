#pragma once
// What a trained model's attention does, the same for every front end: the attention maps of a prompt (with the
// task's expected keys when the prompt has its shape), each head's pattern scores and verdict on a prompt or on the
// run's held-out data, each head ablated in turn, and the logit lens with the direct logit attribution of a prompt.
// Counts are bounded and checked against the memory they need.
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/analysis/head_patterns.hpp"
#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/infer/ablation.hpp"
#include "tinyformer/infer/attention_files.hpp"
#include "tinyformer/infer/lens.hpp"
#include "tinyformer/runs/prompt.hpp"

namespace tf::runs {

inline constexpr std::size_t kMaxBatches = 100'000;   // held-out batches of heads and ablation: a bound on the time
inline constexpr std::size_t kMaxBatchSize = 65'536;  // sequences per batch: a bound on one batch's attention

// The attention of one prompt: the map (weights [L,H,T,T], labels, expected keys when known) and its head scores.
struct PromptAttention {
  infer::AttentionMap map;
  analysis::HeadScores scores;
  std::vector<std::string> notes;     // the data cannot be rebuilt: the maps come without expected keys
  std::vector<std::string> warnings;  // the prompt does not have the task's shape, or was cropped
};
PromptAttention attention_of(LoadedGPT& model, const Prompt& prompt);

// Checked before the checkpoint is read: `out` is a directory (or can be made) where attention.npy, .json, .png and
// report.html can be written. Throws runs::Error naming it.
void check_attention_outputs(const std::string& out);
// Writes out/attention.{npy,json,png} and out/report.html (the directory is created).
void write_attention_outputs(const std::string& out, const LoadedGPT& model, const PromptAttention& attention,
                             const std::string& prompt_text);

struct HeadsRequest {
  std::optional<Prompt> prompt;  // score on this prompt (at least 2 tokens); nullopt: the run's held-out data
  std::size_t batches = 8, batch_size = 64;
};
// Checks the counts (1 <= batches <= kMaxBatches, 1 <= batch_size <= kMaxBatchSize, and the memory of one batch's
// attention); throws runs::Error naming the argument (`flag_prefix` "--" for the CLI's flags).
void check_heads_request(const LoadedGPT& model, const HeadsRequest& request, const std::string& flag_prefix = "");
// Each head's scores for every pattern, its entropy and (analysis::verdicts) its verdict.
analysis::HeadScores head_scores(LoadedGPT& model, const HeadsRequest& request, const std::string& flag_prefix = "");
// Each head ablated in turn on the run's held-out data (`mode` "zero" or "mean").
infer::AblationReport ablate(LoadedGPT& model, std::size_t batches, std::size_t batch_size, const std::string& mode,
                             const std::string& flag_prefix = "");

struct LensRequest {
  std::optional<std::size_t> position;  // the position read (default: the prompt's last)
  std::size_t top = 5;                  // tokens per stage, 1 <= top <= the vocabulary
  std::string answer;                   // the token attributed: one token of the vocabulary ("": the top prediction)
};
struct PromptLens {
  std::size_t position = 0;
  std::vector<infer::LensRow> lens;  // the top tokens after the embeddings and after each block
  Index answer = 0;
  infer::LogitAttribution attribution;  // of `answer`'s logit at `position`
};
// The logit lens and direct logit attribution (infer/lens.hpp) at one position of a prompt. Throws runs::Error naming
// the position, top or answer (`flag_prefix` "--" for the CLI's flags) before anything is computed.
PromptLens lens_of(LoadedGPT& model, const Prompt& prompt, const LensRequest& request,
                   const std::string& flag_prefix = "");

}  // namespace tf::runs
