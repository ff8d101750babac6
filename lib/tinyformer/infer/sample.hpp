#pragma once
// Autoregressive sampling from a GPT, as nanoGPT's generate(): the logits of the last position are divided by the
// temperature, optionally restricted to the top k, and a token is drawn from the softmax with the seeded generator;
// temperature 0 takes the most likely token (the first on ties). Nothing is recorded for backward.
// With the KV cache (the default) each new token costs one position's forward: the keys and values of earlier
// positions are kept (nn::KVCache). Without it every token recomputes the whole (cropped) sequence, as nanoGPT does.
// Past the context, both keep the last `context` tokens (nanoGPT's crop): the cache is rebuilt from them each step.
#include <functional>
#include <stdexcept>
#include <vector>

#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

struct SampleOptions {
  std::size_t new_tokens = 32;
  double temperature = 1.0;  // >= 0; 0 = greedy
  std::size_t top_k = 0;     // 0 = no restriction
  bool use_cache = true;     // false: recompute the whole sequence for every token
  Index stop_id = -1;        // >= 0: generation ends before this token (<s> of a SentencePiece vocabulary, as in
                             // llama2.c's run.c: a new document would start)
  // Called with the whole sequence after each new token, so that a caller can show the tokens as they are made.
  std::function<void(const std::vector<Index>&)> on_token;
};

// Thrown by generate when the last position's logits hold inf or NaN (weights that overflow).
struct NonFiniteLogits : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// prompt: token ids (at least one). Returns prompt + new_tokens ids (fewer when stop_id came). Throws NonFiniteLogits
// when the model's logits are not finite.
std::vector<Index> generate(nn::GPT<float>& model, const std::vector<Index>& prompt, const SampleOptions& options,
                            Rng& rng);

// The next-token distribution (probabilities over V) from the last position's logits [V], at the given
// temperature (> 0) and top_k (0 = all).
std::vector<double> next_token_probs(const Array<float>& last_logits, double temperature, std::size_t top_k);

// The token drawn from last_logits [V]: argmax at temperature 0, else an inverse-CDF draw from next_token_probs
// with one rng.uniform().
Index choose_token(const Array<float>& last_logits, const SampleOptions& options, Rng& rng);

}  // namespace tf::infer
