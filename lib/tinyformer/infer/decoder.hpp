#pragma once
// The decoding engine behind sampling: a GPT's forward for one new token at a time, without autograd. Nothing is
// recorded and nothing is allocated per token: the weights are packed once for matrix-vector products (float32 rows
// padded to 64 bytes, or int8 per group of 32 as llama2.c's runq.c), and the activations, the keys and values of
// every layer (the KV cache) and the logits live in buffers made when the decoder is built. One token reads each
// weight once, so a token costs about the time the memory takes to deliver the weights (docs/performance.md, "Round
// four"). Several tokens at once (a prompt, a window recomputed) go through GEMM on the model's float32 weights
// instead.
//
// Past the context (T positions), the window the model sees moves:
//   rope     a rolling window: the keys and values stay cached at their positions (a ring buffer), and each new
//            token attends to the T positions up to its own, as a sliding-window model (Mistral) does. Rotary
//            positions make a query see the same relative offsets as inside the context, so nothing is recomputed.
//            Each cached key and value was computed when its own token was new, so from the second layer on they
//            carry what that token saw then: this is not nanoGPT's crop (which recomputes every position of the
//            cropped window for every token), except with one layer, where the two agree.
//   learned  the positions are rows of a table that stops at T, so the window is recomputed: when the sequence
//            passes the context, the window drops its first `window_shift` tokens and the rest is computed again
//            at positions 0.. (GEMM), then the next tokens are cached until it is full again. A token thus sees
//            between T - window_shift + 1 and T tokens. window_shift 1 is nanoGPT's crop exactly (one recompute a
//            token); the default, T / 4, recomputes once every T / 4 tokens.
// The logits for a sequence depend on the sequence alone (and the options), never on the calls that came before: a
// decoder asked for a sequence that does not extend the one it holds recomputes from where they part.
#include <cstddef>
#include <memory>
#include <vector>

#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

enum class DecoderWeights {
  f32,  // the model's float32 weights
  q8    // int8 per group of 32 with a float scale per group (Q8_0, llama2.c's runq.c); the vector that multiplies a
        // matrix is quantised the same way, and the group sums are exact int32 (ops/kernels/matvec.hpp)
};
const char* name(DecoderWeights w);  // "f32", "q8"

struct DecoderOptions {
  DecoderWeights weights = DecoderWeights::f32;
  std::size_t window_shift = 0;  // learned positions past the context (above); 0: context / 4 (at least 1)
};

class Decoder {
 public:
  // Packs (or quantises) `model`'s weights, as they are now: a later change to the model is not seen. The decoder
  // keeps the model's weight tensors alive (not the model), for the GEMMs of several tokens at once. Throws
  // std::invalid_argument when window_shift exceeds the context.
  explicit Decoder(const nn::GPT<float>& model, const DecoderOptions& options = {});
  ~Decoder();
  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) noexcept;

  // The logits [V] of the token that follows `ids` (at least one id, each in [0, V)). Only the tokens past the
  // longest prefix of `ids` that the decoder already holds are computed. The result stays valid until the next
  // call. Throws std::invalid_argument for an empty `ids` or an id out of range (naming it).
  const std::vector<float>& next_logits(const std::vector<Index>& ids);

  std::size_t vocab_size() const;
  std::size_t context() const;
  const DecoderOptions& options() const;
  // The bytes of packed weights that one decoded token reads: every matrix (the classifier too, the token embedding
  // row aside), with the padding and the int8 scales, and the norms' weights.
  std::size_t weight_bytes_per_token() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tf::infer
