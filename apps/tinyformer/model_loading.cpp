#include "model_loading.hpp"

#include <cstdio>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/train/resume.hpp"

namespace tf::app {

LoadedModel load_trained_model(const std::string& checkpoint_path) {
  LoadedGPT gpt = load_gpt(checkpoint_path);
  LoadedModel loaded;
  loaded.path = checkpoint_path;
  loaded.model = std::move(gpt.model);
  loaded.vocab = std::move(gpt.vocab);
  loaded.step = gpt.step;
  loaded.config_yaml = std::move(gpt.config_yaml);
  loaded.data_fingerprint = std::move(gpt.data_fingerprint);
  return loaded;
}

std::unique_ptr<data::DataSource> data_of(const LoadedModel& loaded) {
  if (loaded.config_yaml.empty())
    throw std::runtime_error(fmt::format("{}: saved without its run config (tf::save from a program), so the data it "
                                         "was trained on is not known",
                                         loaded.path));
  std::unique_ptr<data::DataSource> source;
  std::string fingerprint;
  try {
    const config::RunConfig cfg = config::load_config_text(loaded.config_yaml, loaded.path + " (its config)");
    source = data::make_data_source(cfg);
    fingerprint = train::data_fingerprint(cfg, *source);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("{}: the data it was trained on cannot be rebuilt: {}", loaded.path, e.what()));
  }
  std::vector<std::string> notes;  // the same check as train --resume's, without --allow-changes
  train::check_same_data(loaded.data_fingerprint, loaded.vocab.serialize(), fingerprint, source->vocab().serialize(),
                         false, loaded.path, notes, loaded.path);
  return source;
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
