#pragma once
// Loading a trained model back from a checkpoint for sample/attention.
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::app {

struct LoadedModel {
  std::unique_ptr<nn::GPT<float>> model;
  data::Vocabulary vocab;
};

LoadedModel load_trained_model(const std::string& checkpoint_path);

// Encodes a prompt with clear errors (empty prompt, characters outside the vocabulary are named by Vocabulary);
// a prompt longer than the context keeps its last `context` tokens, with a warning on stderr (as nanoGPT crops).
std::vector<Index> encode_prompt(const LoadedModel& loaded, const std::string& prompt);

}  // namespace tf::app
