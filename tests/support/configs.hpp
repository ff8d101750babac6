#pragma once
// The configs the tests share: one tiny GPT (V 7, T 5, C 8, H 2, L 2) and run configs of the synthetic tasks
// with small sizes, built in code the way load_config would fill them.
#include <filesystem>
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"

namespace tf::test {

// A model of V tokens, context T, width C, H heads and L layers (the other keys their defaults).
inline config::ModelConfig model(std::size_t V, std::size_t T, std::size_t C, std::size_t H, std::size_t L) {
  config::ModelConfig cfg;
  cfg.vocab_size = V;
  cfg.context = T;
  cfg.d_model = C;
  cfg.n_head = H;
  cfg.n_layer = L;
  return cfg;
}

inline config::ModelConfig tiny_model() { return model(7, 5, 8, 2, 2); }

// data.task `task` (a YAML name; an unknown one throws config::ConfigError) with source length `length`, `alphabet`
// symbols, 3 digits for add, 100 held-out examples, model.context auto and training.seed 7.
inline config::RunConfig task_config(const std::string& task, std::size_t length = 6, std::size_t alphabet = 5) {
  config::RunConfig cfg;
  cfg.data.task = config::parse_enum<config::Task>(task);
  cfg.data.length = length;
  cfg.data.alphabet = alphabet;
  cfg.data.digits = 3;
  cfg.data.eval_size = 100;
  cfg.training.seed = 7;
  return cfg;
}

// configs/reverse.yaml of the source tree with `overrides` ("section.key=value", as --set).
inline config::RunConfig reverse_config(const std::vector<std::string>& overrides = {}) {
  const std::string path = (std::filesystem::path(TINYFORMER_SOURCE_DIR) / "configs" / "reverse.yaml").string();
  return config::load_config(path, overrides);
}

}  // namespace tf::test
