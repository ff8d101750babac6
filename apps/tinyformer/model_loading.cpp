#include "model_loading.hpp"

#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/train/checkpoint.hpp"

namespace tf::app {

LoadedModel load_trained_model(const std::string& checkpoint_path) {
  const auto file = io::SafetensorsFile::load(checkpoint_path);
  LoadedModel loaded;
  loaded.model = std::make_unique<nn::GPT<float>>(train::read_model_config(file), 0);  // the weights are loaded next
  train::load_model_weights(file, *loaded.model);
  loaded.model->eval();
  loaded.vocab = data::Vocabulary::deserialize(train::read_training_state(file).vocab);
  return loaded;
}

std::vector<Index> encode_prompt(const LoadedModel& loaded, const std::string& prompt) {
  if (prompt.empty()) throw std::invalid_argument("--prompt is empty; give at least one token");
  std::vector<Index> ids;
  try {
    ids = loaded.vocab.encode(prompt);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("--prompt: {}", e.what()));
  }
  if (ids.empty()) throw std::invalid_argument("--prompt has no tokens; give at least one");
  const std::size_t context = loaded.model->context();
  if (ids.size() > context) {
    fmt::print(stderr, "tinyformer: warning: the prompt has {} tokens, the context is {}: keeping the last {}\n",
               ids.size(), context, context);
    ids.erase(ids.begin(), ids.end() - static_cast<long>(context));
  }
  return ids;
}

}  // namespace tf::app
