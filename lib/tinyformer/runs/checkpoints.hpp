#pragma once
// A trained model opened from its checkpoint, the same for every front end: `tinyformer sample`, `attention`,
// `heads` and `export`, Python's tf.load, and a C++ program. Every consistency check of tf::load_gpt runs (the model
// metadata against the tensors, the vocabulary against the model, the run config against the model, finite weights),
// and the run's data is rebuilt only when it is still the data the checkpoint was trained on.
#include <memory>
#include <string>
#include <vector>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/runs/prompt.hpp"

namespace tf::runs {

// The model (eval mode), its config and vocabulary, the step and the run config of `path`. Throws runs::Error naming
// the file.
LoadedGPT open_checkpoint(const std::string& path);

// The run's data source, rebuilt from the checkpoint's config (its task, or its text or tokens file, which must
// still be there and hold what the run trained on, as `train --resume` checks). Throws runs::Error naming the
// checkpoint when the config cannot be read, the data cannot be built, or it differs from the checkpoint's.
std::unique_ptr<data::DataSource> run_data(const LoadedGPT& model);
// The same, or nullptr with the reason in `note` (for a command that does without the data).
std::unique_ptr<data::DataSource> run_data_if_available(const LoadedGPT& model, std::string& note);

// encode_prompt with the checkpoint's vocabulary and its model's context.
Prompt encode_prompt(const LoadedGPT& model, const std::string& text, const std::string& argument = "prompt",
                     Overflow overflow = Overflow::keep_last);

// Writes out_dir/model.bin (format "llama2c", for llama2.c's run.c) or out_dir/model_q80.bin ("llama2c-q8", int8
// weights for runq.c), and out_dir/tokenizer.bin (checkpoint/llama2c.hpp); or ("llmc", for llm.c's train_gpt2.c,
// checkpoint/llmc.hpp) out_dir/model.bin, with out_dir/train.bin and out_dir/val.bin when the run's data can be
// rebuilt and is a stream of ids (text, or tokens from an llm.c token file). Checks out_dir and opens the checkpoint
// with every check above first; a refused export writes nothing and creates no directory. Returns the names of the
// files written.
std::vector<std::string> export_checkpoint(const std::string& path, const std::string& format,
                                           const std::string& out_dir);
// The model file export_checkpoint writes for `format`: model.bin or model_q80.bin.
std::string export_model_file(const std::string& format);

}  // namespace tf::runs
