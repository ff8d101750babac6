#pragma once
// Reading the residual stream in the vocabulary's terms (no grad, eval mode), as TransformerLens does:
//  - the logit lens (nostalgebraist 2020): the residual stream after the embeddings and after each block, put
//    through the final norm and the unembedding as if the model ended there; the top tokens at a position;
//  - direct logit attribution: how much each component that writes into the residual stream (the embeddings, every
//    attention head, each layer's attention bias, each MLP) adds directly to the logit of a token, through the final
//    norm (its scale taken from the real forward, as TransformerLens' apply_ln_to_stack) and the unembedding.
// The logit is read as a logit difference against the mean over the vocabulary, logit[t] - mean_v logit[v]: that is
// what the softmax sees, and it makes the parts add up exactly: embed + sum of heads + attention biases + MLPs +
// final_bias = logit[t] - mean_v logit[v] (up to rounding), final_bias being what the final norm's bias adds.
// Per head, with z_h [D] the head's output before c_proj and W_O^h [C,D] its columns of c_proj.weight:
//   contribution_h = (W_O^h z_h) . g,  g = the direction that the final norm and unembedding give token t:
//     layernorm: g = (u - mean(u)) / sigma, u = w_ln * (U[t] - mean_v U[v]), sigma = the std of the final residual
//     rmsnorm:   g = u / rms,  none: g = U[t] - mean_v U[v]
#include <cstddef>
#include <string>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

// The logit lens at one position: the residual after the embeddings ("embed") and after each block ("block 0", ...,
// the last one being the model's own prediction), each with its top tokens.
struct LensRow {
  std::string stage;                  // "embed", "block 0", ...
  std::vector<Index> tokens;          // the k most likely tokens, most likely first
  std::vector<double> probabilities;  // their softmax probabilities
};
// ids [T] (at most the context); position < T; k >= 1 (at most V). std::invalid_argument otherwise.
std::vector<LensRow> logit_lens(nn::GPT<float>& model, const IndexArray& ids, std::size_t position, std::size_t k);

// The direct logit attribution of a token at a position, or averaged over many.
struct LogitAttribution {
  double logit = 0.0;                      // logit[t] - mean_v logit[v] of the real forward (averaged when averaged)
  double embed = 0.0;                      // wte (+ wpe)
  std::vector<std::vector<double>> heads;  // [L][H]
  std::vector<double> attention_bias;      // [L] c_proj's bias of each layer (zeros without biases)
  std::vector<double> mlp;                 // [L] each block's MLP output; empty for an attention-only model
  double final_bias = 0.0;                 // the final LayerNorm's bias (0 for rmsnorm and none)
  std::size_t positions = 0;               // how many (sequence, position) pairs were averaged (1 for one prompt)
  // embed + heads + attention_bias + mlp + final_bias: equals `logit` up to rounding
  double sum() const;
};

// The attribution of token `token` at `position` of ids [T]. std::invalid_argument for a bad position or token.
LogitAttribution direct_logit_attribution(nn::GPT<float>& model, const IndexArray& ids, std::size_t position,
                                          Index token);
// The mean attribution of the correct next token over every scored position (y != -1) of the first `max_batches`
// held-out batches of `batch_size`: which heads write the answer. A collective under MPI is not needed: every rank
// computes the same.
LogitAttribution mean_direct_logit_attribution(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size,
                                               std::size_t max_batches);

}  // namespace tf::infer
