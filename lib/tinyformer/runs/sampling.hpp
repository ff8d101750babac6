#pragma once
// Sampling from a trained model, the same for every front end: bounded (the number of tokens and the temperature are
// checked before the first token), streaming (the text of each new token as it is made, a character spelled in byte
// pieces printed whole), cancellable (a stop request ends it after the token being made), and ending at the
// vocabulary's <s> as llama2.c's run.c does. The numbers come from one call of infer::generate.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/runs/prompt.hpp"

namespace tf::runs {

// At most this many new tokens in one sample: a million take minutes on a small model.
inline constexpr std::size_t kMaxNewTokens = 1'000'000;
// A temperature between 0 and this is greedy sampling in effect (the logits divided by it differ by more than a
// float's range): refused, 0 asks for greedy.
inline constexpr double kMinTemperature = 1e-6;

struct SampleRequest {
  // New tokens; nullopt: a task's checkpoint completes the sequence (to its answer's end) when the prompt has the
  // task's shape, else one answer's worth; text and tokens 64.
  std::optional<std::size_t> tokens;
  double temperature = 1.0;  // 0 (greedy) or in [kMinTemperature, 1e6]
  std::size_t top_k = 0;     // 0 = all tokens
  std::uint64_t seed = 1337;
  bool use_cache = true;  // false: recompute the whole sequence for every token
};

struct Sample {
  std::vector<Index> ids;             // the prompt's ids, then the new ones
  std::string text;                   // the whole sequence decoded (what on_text was given, in pieces)
  bool cancelled = false;             // `cancel` was set before the last token asked for
  std::vector<std::string> warnings;  // e.g. a prompt that does not have the task's shape
};

// Checks `request` against its bounds; throws runs::Error naming the argument ("tokens", "temperature", ...;
// `flag_prefix` "--" for the CLI's flags).
void check_sample_request(const SampleRequest& request, const std::string& flag_prefix = "");

// prompt + up to request.tokens new tokens. on_text, when given, gets the text as it comes: first the prompt's, then
// each new token's (a byte piece waits for the rest of its character). A cancel flag that becomes true ends the
// sample after the token being made (Sample::cancelled). What on_text throws ends the sample and is rethrown as it
// was (a Python exception stays one). Weights whose logits overflow throw runs::Error naming the checkpoint.
Sample sample(LoadedGPT& model, const Prompt& prompt, const SampleRequest& request,
              const std::function<void(const std::string&)>& on_text = {}, const std::atomic<bool>* cancel = nullptr,
              const std::string& flag_prefix = "");

}  // namespace tf::runs
