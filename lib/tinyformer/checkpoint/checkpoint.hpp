#pragma once
// Checkpoints are safetensors files (io/safetensors.hpp):
//   tensors   the model's weights under nanoGPT's names ("transformer.wte.weight", ...), F32, and the
//             optimizer state under "optimizer.<kind>.<parameter name>" (e.g. optimizer.exp_avg.lm_head.weight)
//   metadata  "format": "pt"; "tinyformer.model": the model section as JSON (config::model_json: the YAML names,
//             vocab_size and context resolved); "tinyformer.config": the resolved
//             run config (YAML); "tinyformer.step"; "tinyformer.vocab" (data::Vocabulary::serialize);
//             "tinyformer.optimizer" and "tinyformer.optimizer.step_count"; "tinyformer.rng.data" and
//             "tinyformer.rng.dropout" (generator states, so a resumed run continues bit for bit);
//             "tinyformer.sequences_per_step" (N x grad_accum x batch_size, the global batch) and
//             "tinyformer.processes" (N), absent in checkpoints written before data-parallel training;
//             "tinyformer.data": the data source's fingerprint (JSON, train/resume.hpp), absent in older checkpoints.
// A PyTorch user loads the weights by keeping the names that do not start with "optimizer.".
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/optim/optimizer.hpp"

namespace tf::checkpoint {

struct TrainingState {
  std::int64_t step = 0;  // optimizer steps completed
  std::string config_yaml;
  std::string vocab;     // serialized vocabulary
  std::string data_rng;  // Rng::state()
  std::string dropout_rng;
  std::int64_t sequences_per_step = 0;  // the global batch of the run that wrote it (0: not recorded)
  std::int64_t processes = 1;           // MPI processes of that run
  std::string data_fingerprint;         // JSON (train/resume.hpp); "": not recorded (an older checkpoint)
};

// Writes atomically (temporary file, fsync, rename): a crash mid-write leaves the previous file intact.
void save_checkpoint(const std::string& path, const nn::GPT<float>& model, const optim::Optimizer<float>* optimizer,
                     const TrainingState& state);

// The model section stored in a checkpoint. Throws std::runtime_error naming the file if it has none, or if it
// disagrees with the tensors it describes (nn::parameter_shapes, each name and shape): a corrupt
// header is refused before a model of its size is built.
config::ModelConfig read_model_config(const io::SafetensorsFile& file);
TrainingState read_training_state(const io::SafetensorsFile& file);
// The vocabulary `serialized` (a TrainingState::vocab) of the checkpoint at `path`. Throws std::runtime_error
// "<path>: corrupt 'tinyformer.vocab' metadata: <what is wrong>" when it cannot be read back (a damaged
// SentencePiece model included): every reader of a checkpoint's vocabulary goes through here.
data::Vocabulary read_vocabulary(const std::string& serialized, const std::string& path);
// Throws std::invalid_argument listing every model key that shapes the weights (on_resume: fixed) where the
// checkpoint differs from `model`.
void check_same_architecture(const io::SafetensorsFile& file, const config::ModelConfig& model);

// Copies every weight from the file into `model`. Throws std::invalid_argument listing each mismatch
// (missing tensor, unexpected tensor, shape or dtype differences), or naming the first tensor that holds a NaN or an
// infinity and where, before changing anything. Each tensor is decoded from the file once.
void load_model_weights(const io::SafetensorsFile& file, nn::Module<float>& model);
// The mismatches load_model_weights lists between the file's tensors and `expected` (names and shapes; for a GPT
// nn::parameter_shapes of its config, known before a model of that size is built), and its one message of them.
std::vector<std::string> weight_problems(const io::SafetensorsFile& file,
                                         const std::vector<nn::ParameterShape>& expected);
std::string weight_mismatch_message(const io::SafetensorsFile& file, const std::vector<std::string>& problems);
// Restores the optimizer's state and step count from the "optimizer." tensors (refusing non-finite values, as above).
void load_optimizer_state(const io::SafetensorsFile& file, optim::Optimizer<float>& optimizer);

}  // namespace tf::checkpoint

namespace tf {

// ---- Saving and loading from a program, in the app's format: what tf::save writes, `tinyformer sample`, `attention`
// and `heads` read, and tf::load_gpt reads what `tinyformer train` wrote.

struct SaveOptions {
  std::int64_t step = 0;    // optimizer steps taken, as the app reports it
  std::string config_yaml;  // the run config (config::to_yaml) when there is one; "" saves none, and the app then
                            // says that the data the model was trained on is not known
};
// Writes `model`'s weights, its model config and `vocab` (atomically, as the app does). Throws std::invalid_argument
// when vocab's size is not the model's vocab_size (an empty vocabulary included), or when options.step < 0.
void save(const std::string& path, const nn::GPT<float>& model, const data::Vocabulary& vocab,
          const SaveOptions& options = {});

struct LoadedGPT {
  std::string path;                       // the checkpoint it was read from
  std::unique_ptr<nn::GPT<float>> model;  // built from `config` with the file's weights, in eval mode
  config::ModelConfig config;
  data::Vocabulary vocab;
  std::int64_t step = 0;
  std::string config_yaml;       // the run config saved with it ("" when none was)
  std::string data_fingerprint;  // "tinyformer.data" (train/resume.hpp), "" when none was saved
};
// Reads a checkpoint that `tinyformer train` or tf::save wrote. Throws std::runtime_error naming the file when it
// cannot be read or is not a tinyformer checkpoint, std::invalid_argument when its weights do not fit its config.
LoadedGPT load_gpt(const std::string& path);

// Any module (not only a GPT): its named parameters as an F32 safetensors file, nothing else; load() copies them back
// into a module of the same structure and throws std::invalid_argument listing every mismatch before changing anything.
// Both throw std::invalid_argument, writing or reading nothing, for a module without parameters (members that were
// never registered) and for one whose registered sub-module has been destroyed.
void save(const std::string& path, const nn::Module<float>& model);
void load(const std::string& path, nn::Module<float>& model);

}  // namespace tf
