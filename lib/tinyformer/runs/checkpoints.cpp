#include "tinyformer/runs/checkpoints.hpp"

#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "tinyformer/checkpoint/data_fingerprint.hpp"
#include "tinyformer/checkpoint/llama2c.hpp"
#include "tinyformer/checkpoint/llmc.hpp"
#include "tinyformer/runs/environment.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::runs {

LoadedGPT open_checkpoint(const std::string& path) {
  return at_boundary([&] {
    check_environment();
    return load_gpt(path);
  });
}

namespace {

std::unique_ptr<data::DataSource> rebuild_data(const LoadedGPT& model) {
  if (model.config_yaml.empty())
    throw Error(ErrorKind::value, fmt::format("{}: saved without its run config (by a program's save), so the "
                                              "data it was trained on is not known",
                                              model.path));
  std::unique_ptr<data::DataSource> source;
  std::string fingerprint;
  try {
    const config::RunConfig cfg = config::load_config_text(model.config_yaml, model.path + " (its config)");
    source = data::make_data_source(cfg);
    fingerprint = checkpoint::data_fingerprint(cfg, *source);
  } catch (const std::exception& e) {
    throw Error(user_error(e).first,
                fmt::format("{}: the data it was trained on cannot be rebuilt: {}", model.path, user_message(e)));
  }
  std::vector<std::string> notes;  // the same check as train --resume's, without --allow-changes
  checkpoint::check_same_data(model.data_fingerprint, model.vocab.serialize(), fingerprint, source->vocab().serialize(),
                              false, model.path, notes, model.path);
  return source;
}

}  // namespace

std::unique_ptr<data::DataSource> run_data(const LoadedGPT& model) {
  return at_boundary([&] { return rebuild_data(model); });
}

std::unique_ptr<data::DataSource> run_data_if_available(const LoadedGPT& model, std::string& note) {
  try {
    return run_data(model);
  } catch (const Error& e) {
    note = e.what();
    return nullptr;
  }
}

Prompt encode_prompt(const LoadedGPT& model, const std::string& text, const std::string& argument, Overflow overflow) {
  return encode_prompt(model.vocab, model.model->context(), text, argument, overflow);
}

std::string export_model_file(const std::string& format) {
  return format == "llama2c-q8" ? "model_q80.bin" : "model.bin";
}

std::vector<std::string> export_checkpoint(const std::string& path, const std::string& format,
                                           const std::string& out_dir) {
  return at_boundary([&] {
    if (format != "llama2c" && format != "llama2c-q8" && format != "llmc")
      throw Error(ErrorKind::value, fmt::format("--format '{}': valid formats are llama2c, llama2c-q8, llmc", format));
    const std::string model_file = export_model_file(format);
    if (format == "llmc")  // before the checkpoint is read
      check_output_dir(out_dir, {model_file, "train.bin", "val.bin"});
    else
      check_output_dir(out_dir, {model_file, "tokenizer.bin"});
    const LoadedGPT checked = load_gpt(path);  // every check a sample makes: vocabulary, config, finite weights
    const io::SafetensorsFile file = io::SafetensorsFile::load(path);
    if (format == "llama2c-q8") {
      checkpoint::export_llama2c_q8(file, out_dir);
    } else if (format == "llama2c") {
      checkpoint::export_llama2c(file, out_dir);
    } else {
      // the run's tokens go along when its data is still there and is a stream of ids (text, an llm.c token file)
      std::string note;
      const std::unique_ptr<data::DataSource> source = run_data_if_available(checked, note);
      const std::optional<data::TokenStreams> streams = source ? source->token_streams() : std::nullopt;
      checkpoint::export_llmc(file, out_dir, streams ? &*streams : nullptr);
      if (streams) return std::vector<std::string>{model_file, "train.bin", "val.bin"};
      return std::vector<std::string>{model_file};
    }
    return std::vector<std::string>{model_file, "tokenizer.bin"};
  });
}

}  // namespace tf::runs
