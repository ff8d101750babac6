#pragma once
// Autoregressive sampling from a GPT, as nanoGPT's generate(): the logits of the last position are divided by the
// temperature, optionally restricted to the top k, and a token is drawn from the softmax with the seeded generator;
// temperature 0 takes the most likely token (the first on ties). Nothing is recorded for backward.
// With the KV cache (the default) the tokens go through infer::Decoder, the decoding engine: one position's forward
// per new token, without autograd; past the context its window moves as decoder.hpp says (rope: a rolling window;
// learned positions: recomputed every decoder.window_shift tokens). Without it every token recomputes the whole
// sequence cropped to its last `context` tokens with the model's forward, as nanoGPT does.
#include <functional>
#include <stdexcept>
#include <vector>

#include "tinyformer/infer/decoder.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

struct SampleOptions {
  std::size_t new_tokens = 32;
  double temperature = 1.0;  // >= 0; 0 = greedy
  std::size_t top_k = 0;     // 0 = no restriction
  bool use_cache = true;     // false: recompute the whole sequence for every token
  DecoderOptions decoder;    // with the cache: float32 or int8 weights, the window past the context
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
// The same with a decoder built beforehand (its weights packed once for many samples); options.use_cache and
// options.decoder are not read (the decoder's own options hold).
std::vector<Index> generate(Decoder& decoder, const std::vector<Index>& prompt, const SampleOptions& options, Rng& rng);

// The next-token distribution (probabilities over V) from the last position's logits [V], at the given
// temperature (> 0) and top_k (0 = all).
std::vector<double> next_token_probs(const Array<float>& last_logits, double temperature, std::size_t top_k);

// The token drawn from last_logits [V]: argmax at temperature 0, else an inverse-CDF draw from next_token_probs
// with one rng.uniform().
Index choose_token(const Array<float>& last_logits, const SampleOptions& options, Rng& rng);
// The same on logits [V] in a plain buffer.
Index choose_token(const float* last_logits, std::size_t V, const SampleOptions& options, Rng& rng);

}  // namespace tf::infer
