#pragma once
// Autoregressive sampling from a GPT, as nanoGPT's generate(): the context is cropped to the last
// block_size tokens, logits of the last position are divided by the temperature, optionally restricted
// to the top k, and a token is drawn from the softmax with the seeded generator. Nothing is recorded.
#include <vector>

#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

struct SampleOptions {
  std::size_t new_tokens = 32;
  double temperature = 1.0;  // > 0; 0 is not allowed (use top_k = 1 for greedy decoding)
  std::size_t top_k = 0;     // 0 = no restriction
};

// prompt: token ids (at least one). Returns prompt + new_tokens ids.
std::vector<Index> generate(nn::GPT<float>& model, const std::vector<Index>& prompt, const SampleOptions& options,
                            Rng& rng);

// The next-token distribution (probabilities over V) from the last position's logits [V], at the given
// temperature (> 0) and top_k (0 = all).
std::vector<double> next_token_probs(const Array<float>& last_logits, double temperature, std::size_t top_k);

}  // namespace tf::infer
