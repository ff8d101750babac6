#pragma once
// Loading a trained model back from a checkpoint for sample/attention.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::app {

struct LoadedModel {
  std::string path;
  std::unique_ptr<nn::GPT<float>> model;  // in eval mode
  data::Vocabulary vocab;
  std::int64_t step = 0;         // optimizer steps the checkpoint had taken
  std::string config_yaml;       // the run's resolved config (tinyformer.config)
  std::string data_fingerprint;  // tinyformer.data: what the run trained on
};

LoadedModel load_trained_model(const std::string& checkpoint_path);

// The run's data source, rebuilt from the checkpoint's config (its task, or its text or tokens file, which must
// still be there and hold what the run trained on, as `train --resume` checks). Throws naming the checkpoint when the
// config cannot be read, the data cannot be built, or it differs from the checkpoint's.
std::unique_ptr<data::DataSource> data_of(const LoadedModel& loaded);

// Encodes a prompt with clear errors (empty prompt, characters outside the vocabulary are named by Vocabulary);
// a prompt longer than the context keeps its last `context` tokens, with a warning on stderr (as nanoGPT crops), and
// sets *cropped.
std::vector<Index> encode_prompt(const LoadedModel& loaded, const std::string& prompt, bool* cropped = nullptr);

}  // namespace tf::app
