#include "model_loading.hpp"

#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/checkpoint/checkpoint.hpp"

namespace tf::app {

LoadedModel load_trained_model(const std::string& checkpoint_path) {
  const auto file = io::SafetensorsFile::load(checkpoint_path);
  LoadedModel loaded;
  loaded.model =
      std::make_unique<nn::GPT<float>>(checkpoint::read_model_config(file), 0);  // the weights are loaded next
  checkpoint::load_model_weights(file, *loaded.model);
  loaded.model->eval();
  const checkpoint::TrainingState state = checkpoint::read_training_state(file);
  loaded.path = checkpoint_path;
  try {
    loaded.vocab = data::Vocabulary::deserialize(state.vocab);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: corrupt 'tinyformer.vocab' metadata: {}", checkpoint_path, e.what()));
  }
  loaded.step = state.step;
  loaded.config_yaml = state.config_yaml;
  return loaded;
}

std::unique_ptr<data::DataSource> data_of(const LoadedModel& loaded) {
  try {
    return data::make_data_source(config::load_config_text(loaded.config_yaml, loaded.path + " (its config)"));
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("{}: the data it was trained on cannot be rebuilt: {}", loaded.path, e.what()));
  }
}

std::vector<Index> encode_prompt(const LoadedModel& loaded, const std::string& prompt, bool* cropped) {
  if (prompt.empty()) throw std::invalid_argument("--prompt is empty; give at least one token");
  std::vector<Index> ids;
  try {
    ids = loaded.vocab.encode(prompt);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("--prompt: {}", e.what()));
  }
  if (ids.empty()) throw std::invalid_argument("--prompt has no tokens; give at least one");
  // a vocabulary with <s> (SentencePiece) was trained with it before every document: the prompt starts one, as in
  // llama2.c's run.c
  if (loaded.vocab.bos() >= 0) ids.insert(ids.begin(), loaded.vocab.bos());
  const std::size_t context = loaded.model->context();
  if (cropped) *cropped = ids.size() > context;
  if (ids.size() > context) {
    fmt::print(stderr, "tinyformer: warning: the prompt has {} tokens, the context is {}: keeping the last {}\n",
               ids.size(), context, context);
    ids.erase(ids.begin(), ids.end() - static_cast<long>(context));
  }
  return ids;
}

}  // namespace tf::app
