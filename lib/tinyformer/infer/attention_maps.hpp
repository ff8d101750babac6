#pragma once
// Reading a model's attention for one input: the weights of every layer and head, and labels for its tokens.
#include <string>
#include <vector>

#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

// Attention weights of the model for one input [T] (no grad, eval mode): [L,H,T,T].
Array<float> probe_attention(nn::GPT<float>& model, const IndexArray& ids);
// Display labels of token ids (vocabulary tokens, control characters escaped).
std::vector<std::string> token_labels(const data::Vocabulary& vocab, const IndexArray& ids);

}  // namespace tf::infer
