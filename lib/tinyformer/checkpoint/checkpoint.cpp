#include "tinyformer/checkpoint/checkpoint.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/config/config.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::checkpoint {

namespace {
const std::string kOptimizerPrefix = "optimizer.";

std::string metadata_or_throw(const io::SafetensorsFile& file, const std::string& key) {
  const auto& md = file.metadata();
  auto it = md.find(key);
  if (it == md.end())
    throw std::runtime_error(
        fmt::format("{}: not a tinyformer checkpoint (no '{}' in its metadata)", file.path(), key));
  return it->second;
}
// A step count stored as metadata text: digits only (std::stoll would take "12abc" or "-3").
std::int64_t count_metadata(const io::SafetensorsFile& file, const std::string& key, const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error(fmt::format("{}: corrupt '{}' metadata '{}' (a step count was expected)", file.path(), key,
                                         text.substr(0, 40)));
  return std::stoll(text);
}

// The tensors the metadata describes (nn::parameter_shapes) must be the file's, name for name and shape for shape:
// this bounds the model by the file before a model of the metadata's size is built.
void check_config_fits_tensors(const io::SafetensorsFile& file, const config::ModelConfig& cfg) {
  if (!cfg.vocab_size || !cfg.context)
    throw std::runtime_error(
        fmt::format("{}: corrupt checkpoint: its model metadata has no vocab_size or context", file.path()));
  // Each block has at least 4 tensors of its own, so a file cannot describe more blocks than it has tensors.
  if (cfg.n_layer == 0 || cfg.n_layer > file.names().size() || cfg.mlp_ratio == 0 ||
      cfg.mlp_ratio > (std::size_t{1} << 20))
    throw std::runtime_error(fmt::format("{}: corrupt checkpoint: n_layer {} and mlp_ratio {} in its metadata",
                                         file.path(), cfg.n_layer, cfg.mlp_ratio));
  for (const nn::ParameterShape& p : nn::parameter_shapes(cfg)) {
    if (!file.has(p.name))
      throw std::runtime_error(fmt::format(
          "{}: corrupt checkpoint: its metadata describes a model with tensor {} {}, which the file does not hold",
          file.path(), p.name, shape_str(p.shape)));
    if (file.shape(p.name) != p.shape)
      throw std::runtime_error(
          fmt::format("{}: corrupt checkpoint: its metadata implies {} {} but the tensor has shape {}", file.path(),
                      p.name, shape_str(p.shape), shape_str(file.shape(p.name))));
  }
}

// Checkpoints written before the model section and its metadata shared the YAML names said n_embd and
// block_size (nanoGPT's) for d_model and context.
std::string with_current_model_names(const std::string& text) {
  if (json_too_deep(text)) return text;  // refused by model_from_json
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return text;
  for (const auto& [old_name, name] : {std::pair{"n_embd", "d_model"}, std::pair{"block_size", "context"}})
    if (j.contains(old_name) && !j.contains(name)) {
      j[name] = j[old_name];
      j.erase(old_name);
    }
  return j.dump();
}

// "tensor X holds NaN at [i, j] (and N more values that are not finite)", or "" when every value is finite.
std::string nonfinite_in(const Array<float>& values, const std::string& name, const Shape& shape) {
  std::size_t count = 0, first = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values.data()[i]) && count++ == 0) first = i;
  if (count == 0) return "";
  return fmt::format("tensor {} holds {} at {}{}, which no model can compute with (weights of a run that diverged?)",
                     name, values.data()[first], position_str(first, shape),
                     count > 1 ? fmt::format(" (and {} more values that are not finite)", count - 1) : "");
}

}  // namespace

config::ModelConfig read_model_config(const io::SafetensorsFile& file) {
  const std::string text = with_current_model_names(metadata_or_throw(file, "tinyformer.model"));
  config::ModelConfig cfg;
  try {
    cfg = config::model_from_json(text);
  } catch (const config::ConfigError& e) {
    throw std::runtime_error(fmt::format("{}: corrupt 'tinyformer.model' metadata: {}", file.path(), e.what()));
  }
  check_config_fits_tensors(file, cfg);
  return cfg;
}

void check_same_architecture(const io::SafetensorsFile& file, const config::ModelConfig& model) {
  config::RunConfig saved, current;
  saved.model = read_model_config(file);
  current.model = model;
  std::string msg;
  for (const config::FieldChange& c : config::diff(saved, current))
    if (c.on_resume == config::OnResume::fixed)
      msg += fmt::format("\n  {}: checkpoint {}, config {}", c.path, c.before, c.after);
  if (!msg.empty())
    throw std::invalid_argument(fmt::format("{}: the checkpoint's model differs from the config:{}", file.path(), msg));
}

TrainingState read_training_state(const io::SafetensorsFile& file) {
  TrainingState st;
  st.step = count_metadata(file, "tinyformer.step", metadata_or_throw(file, "tinyformer.step"));
  st.config_yaml = metadata_or_throw(file, "tinyformer.config");
  st.vocab = metadata_or_throw(file, "tinyformer.vocab");
  st.data_rng = metadata_or_throw(file, "tinyformer.rng.data");
  st.dropout_rng = metadata_or_throw(file, "tinyformer.rng.dropout");
  for (const auto& [key, state] :
       {std::pair{"tinyformer.rng.data", &st.data_rng}, std::pair{"tinyformer.rng.dropout", &st.dropout_rng}}) {
    if (state->empty()) continue;  // tf::save records none (a model saved by a program, not a run)
    try {
      Rng().set_state(*state);  // a resumed run restores it: checked now, named with its key
    } catch (const std::invalid_argument&) {
      throw std::runtime_error(
          fmt::format("{}: corrupt '{}' metadata: not the state of a random generator (mt19937_64)", file.path(), key));
    }
  }
  const auto& md = file.metadata();
  if (auto it = md.find("tinyformer.sequences_per_step"); it != md.end())
    st.sequences_per_step = count_metadata(file, it->first, it->second);
  if (auto it = md.find("tinyformer.processes"); it != md.end())
    st.processes = count_metadata(file, it->first, it->second);
  if (auto it = md.find("tinyformer.data"); it != md.end()) st.data_fingerprint = it->second;
  return st;
}

void save_checkpoint(const std::string& path, const nn::GPT<float>& model, const optim::Optimizer<float>* optimizer,
                     const TrainingState& state) {
  io::SafetensorsWriter writer;
  for (const auto& [name, p] : model.named_parameters(false)) writer.add(name, p.value());
  if (optimizer) {
    for (const auto& [name, t] : optimizer->state_tensors()) writer.add(kOptimizerPrefix + name, t);
    writer.set_metadata("tinyformer.optimizer", optimizer->name());
    writer.set_metadata("tinyformer.optimizer.step_count", std::to_string(optimizer->step_count()));
  }
  writer.set_metadata("format", "pt");
  writer.set_metadata("tinyformer.model", config::model_json(model.config()));
  writer.set_metadata("tinyformer.config", state.config_yaml);
  writer.set_metadata("tinyformer.step", std::to_string(state.step));
  writer.set_metadata("tinyformer.vocab", state.vocab);
  writer.set_metadata("tinyformer.rng.data", state.data_rng);
  writer.set_metadata("tinyformer.rng.dropout", state.dropout_rng);
  writer.set_metadata("tinyformer.sequences_per_step", std::to_string(state.sequences_per_step));
  writer.set_metadata("tinyformer.processes", std::to_string(state.processes));
  if (!state.data_fingerprint.empty()) writer.set_metadata("tinyformer.data", state.data_fingerprint);
  writer.write_atomic(path);
}

std::vector<std::string> weight_problems(const io::SafetensorsFile& file,
                                         const std::vector<nn::ParameterShape>& expected) {
  std::vector<std::string> problems;
  for (const auto& [name, shape] : expected) {
    if (!file.has(name)) {
      problems.push_back(fmt::format("missing tensor {} {}", name, shape_str(shape)));
      continue;
    }
    if (file.shape(name) != shape)
      problems.push_back(fmt::format("{}: the file has shape {}, the model needs {}", name, shape_str(file.shape(name)),
                                     shape_str(shape)));
    if (file.dtype(name) != io::DType::F32)
      problems.push_back(fmt::format("{}: dtype {} in the file, F32 needed", name, io::dtype_name(file.dtype(name))));
  }
  for (const auto& name : file.names()) {
    if (name.rfind(kOptimizerPrefix, 0) == 0) continue;
    bool known = false;
    for (const auto& e : expected) known = known || e.name == name;
    // a tied model has no lm_head.weight of its own; PyTorch state dicts may still carry the shared copy
    if (!known && !(name == "lm_head.weight" && file.has("transformer.wte.weight")))
      problems.push_back(fmt::format("unexpected tensor {} {}", name, shape_str(file.shape(name))));
  }
  return problems;
}

std::string weight_mismatch_message(const io::SafetensorsFile& file, const std::vector<std::string>& problems) {
  std::string msg = fmt::format("{}: the weights do not match the model ({} problem{}):", file.path(), problems.size(),
                                problems.size() == 1 ? "" : "s");
  for (const auto& p : problems) msg += "\n  " + p;
  return msg;
}

void load_model_weights(const io::SafetensorsFile& file, nn::Module<float>& model) {
  const auto params = model.named_parameters(false);  // every name, a tied weight under each (torch's state_dict)
  std::vector<nn::ParameterShape> expected;
  for (const auto& [name, p] : params) expected.push_back({name, p.shape()});
  const std::vector<std::string> problems = weight_problems(file, expected);
  if (!problems.empty()) throw std::invalid_argument(weight_mismatch_message(file, problems));
  // Each tensor decoded once: checked for NaN and infinity, kept, and moved into the model only when every one is
  // finite (a refused file changes no weight).
  std::vector<Array<float>> values;
  values.reserve(expected.size());
  for (const auto& e : expected) {
    values.push_back(file.get_f32(e.name));
    if (const std::string bad = nonfinite_in(values.back(), e.name, e.shape); !bad.empty())
      throw std::invalid_argument(fmt::format("{}: {}", file.path(), bad));
  }
  std::size_t i = 0;
  for (auto& [name, p] : model.named_parameters(false)) p.mutable_value() = std::move(values[i++]);
}

void load_optimizer_state(const io::SafetensorsFile& file, optim::Optimizer<float>& optimizer) {
  const auto& md = file.metadata();
  auto name_it = md.find("tinyformer.optimizer");
  if (name_it != md.end() && name_it->second != optimizer.name())
    throw std::invalid_argument(fmt::format("{}: the checkpoint holds {} state but the config asks for {}", file.path(),
                                            name_it->second, optimizer.name()));
  optim::NamedArrays<float> tensors;
  for (const auto& name : file.names())
    if (name.rfind(kOptimizerPrefix, 0) == 0) {
      Array<float> values = file.get_f32(name);  // decoded once: checked, then kept
      if (const std::string bad = nonfinite_in(values, name, file.shape(name)); !bad.empty())
        throw std::invalid_argument(fmt::format("{}: optimizer state: {}", file.path(), bad));
      tensors.emplace_back(name.substr(kOptimizerPrefix.size()), std::move(values));
    }
  std::int64_t count = 0;
  auto it = md.find("tinyformer.optimizer.step_count");
  if (it != md.end()) count = count_metadata(file, it->first, it->second);
  try {
    optimizer.load_state(tensors, count);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: optimizer state does not fit: {}", file.path(), e.what()));
  }
}

data::Vocabulary read_vocabulary(const std::string& serialized, const std::string& path) {
  try {
    return data::Vocabulary::deserialize(serialized);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: corrupt 'tinyformer.vocab' metadata: {}", path, e.what()));
  }
}

}  // namespace tf::checkpoint

namespace tf {

void save(const std::string& path, const nn::GPT<float>& model, const data::Vocabulary& vocab,
          const SaveOptions& options) {
  if (vocab.size() != model.vocab_size())
    throw std::invalid_argument(fmt::format("save: vocab has {} tokens but the model's vocab_size is {}; pass the "
                                            "vocabulary the model was trained with",
                                            vocab.size(), model.vocab_size()));
  if (options.step < 0) throw std::invalid_argument(fmt::format("save: options.step = {} must be >= 0", options.step));
  checkpoint::TrainingState state;
  state.step = options.step;
  state.config_yaml = options.config_yaml;
  state.vocab = vocab.serialize();
  checkpoint::save_checkpoint(path, model, nullptr, state);
}

LoadedGPT load_gpt(const std::string& path) {
  const auto file = io::SafetensorsFile::load(path);
  LoadedGPT loaded;
  loaded.path = path;
  loaded.config = checkpoint::read_model_config(file);
  loaded.model = std::make_unique<nn::GPT<float>>(loaded.config, 0);  // the seed does not matter: weights are loaded
  checkpoint::load_model_weights(file, *loaded.model);
  loaded.model->eval();
  const checkpoint::TrainingState state = checkpoint::read_training_state(file);
  loaded.vocab = checkpoint::read_vocabulary(state.vocab, path);
  if (loaded.vocab.size() != *loaded.config.vocab_size)
    throw std::runtime_error(fmt::format("{}: corrupt checkpoint: its vocabulary has {} tokens, its model {}", path,
                                         loaded.vocab.size(), *loaded.config.vocab_size));
  if (!state.config_yaml.empty()) {  // a run's checkpoint: its config parses and agrees with its model
    config::RunConfig run = config::load_config_text(state.config_yaml, path + " (its config)");
    if (!run.model.vocab_size) run.model.vocab_size = loaded.config.vocab_size;  // `auto`: resolved by the data
    if (!run.model.context) run.model.context = loaded.config.context;
    config::RunConfig from_model = run;
    from_model.model = loaded.config;
    for (const config::FieldChange& c : config::diff(run, from_model))
      if (c.on_resume == config::OnResume::fixed)  // the architecture; how it was initialised is no longer in it
        throw std::runtime_error(fmt::format("{}: corrupt checkpoint: its config has {} {} but its model {}", path,
                                             c.path, c.before, c.after));
  }
  loaded.step = state.step;
  loaded.config_yaml = state.config_yaml;
  loaded.data_fingerprint = state.data_fingerprint;
  return loaded;
}

namespace {
// The module's parameters, or std::invalid_argument when it has none (its members were never registered).
nn::NamedParams<float> parameters_to_carry(const std::string& path, const nn::Module<float>& model, const char* what) {
  nn::NamedParams<float> params = model.named_parameters(false);
  if (params.empty())
    throw std::invalid_argument(fmt::format("tf::{}({}): the module has no parameters; register its layers with "
                                            "register_module and its tensors with register_parameter in its "
                                            "constructor",
                                            what, path));
  return params;
}
}  // namespace

void save(const std::string& path, const nn::Module<float>& model) {
  io::SafetensorsWriter writer;
  for (const auto& [name, p] : parameters_to_carry(path, model, "save")) writer.add(name, p.value());
  writer.set_metadata("format", "pt");
  writer.write_atomic(path);
}

void load(const std::string& path, nn::Module<float>& model) {
  parameters_to_carry(path, model, "load");
  checkpoint::load_model_weights(io::SafetensorsFile::load(path), model);
}

}  // namespace tf
