// libFuzzer target: the safetensors reader and what `tinyformer sample` does with a checkpoint: read the
// header, every tensor in every dtype it offers, the model config and training state from the metadata,
// then build that model and load its weights and the AdamW state (what --resume does). Every input must load or be
// refused with a std::exception (runtime_error / invalid_argument); a crash, a sanitizer report or a huge allocation is
// a bug.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "fuzz_file.hpp"
#include "fuzz_target.hpp"
#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/clip.hpp"
#include "tinyformer/optim/param_groups.hpp"
#include "tinyformer/optim/sgd.hpp"

TINYFORMER_FUZZ_TARGET(safetensors) {
  const std::string path = tf::fuzz::write_input(data, size, ".safetensors");
  std::optional<tf::io::SafetensorsFile> file;
  try {
    file = tf::io::SafetensorsFile::load(path);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find(path) == std::string::npos) __builtin_trap();  // the message names the file
    return 0;
  }
  for (const auto& name : file->names()) {
    try {
      if (file->dtype(name) == tf::io::DType::F32 || file->dtype(name) == tf::io::DType::F64) {
        file->get_f32(name, tf::io::Conversion::allow_narrowing);
        file->get_f64(name);
      } else {
        file->get_index(name);
        file->get_i64(name);
      }
    } catch (const std::runtime_error&) {
    }
  }
  try {
    tf::data::Vocabulary::deserialize(tf::checkpoint::read_training_state(*file).vocab);
  } catch (const std::exception&) {
  }
  try {
    const tf::config::ModelConfig cfg =
        tf::checkpoint::read_model_config(*file);  // checked against the tensors' shapes
    tf::nn::GPT<float> model(cfg, 0);
    tf::checkpoint::load_model_weights(*file, model);
    tf::optim::AdamW<float> optimizer(model.named_parameters());  // what --resume loads next
    tf::checkpoint::load_optimizer_state(*file, optimizer);
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
