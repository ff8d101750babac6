#include "tinyformer/train/replicas.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/dist/dist.hpp"

namespace tf::train {

namespace {

// The held-out batches' ids, hashed: a different data file with the same sizes differs here.
std::string replica_data_fingerprint(Run& run) {
  data::DataSource& source = *run.parts.data;
  std::uint64_t h = dist::fnv1a(nullptr, 0);
  for (const data::Batch& b : source.eval_batches(run.cfg.training.batch_size)) {
    h = dist::fnv1a(b.x.data(), b.x.size() * sizeof(Index), h);
    h = dist::fnv1a(b.y.data(), b.y.size() * sizeof(Index), h);
  }
  return fmt::format("{}\nvocabulary {}\nheld-out batches {}", source.describe(), source.vocab().serialize(),
                     dist::hex64(h));
}

// Rank 0's optimizer state: names and shapes as JSON (the data follows tensor by tensor).
nlohmann::json optimizer_layout(const optim::NamedArrays<float>& tensors, std::int64_t step_count) {
  nlohmann::json layout = {{"step_count", step_count}, {"tensors", nlohmann::json::array()}};
  for (const auto& [name, t] : tensors) layout["tensors"].push_back({{"name", name}, {"shape", t.shape()}});
  return layout;
}

void share_optimizer_state(optim::Optimizer<float>& optimizer) {
  optim::NamedArrays<float> tensors;
  std::string text;
  if (dist::is_root()) {
    tensors = optimizer.state_tensors();
    text = optimizer_layout(tensors, optimizer.step_count()).dump();
  }
  dist::broadcast(text);
  const nlohmann::json layout = nlohmann::json::parse(text);
  if (!dist::is_root())
    for (const auto& t : layout["tensors"])
      tensors.emplace_back(t["name"].get<std::string>(),
                           Array<float>::from_shape(t["shape"].get<std::vector<std::size_t>>()));
  for (auto& [name, t] : tensors) dist::broadcast(t.data(), t.size());
  if (!dist::is_root()) optimizer.load_state(tensors, layout["step_count"].get<std::int64_t>());
}

}  // namespace

std::string parameters_hash(const nn::GPT<float>& model) {
  std::uint64_t h = dist::fnv1a(nullptr, 0);
  for (const auto& [name, p] : model.named_parameters())
    h = dist::fnv1a(p.value().data(), p.numel() * sizeof(float), h);
  return dist::hex64(h);
}

void share_resumed_state(Run& run, std::size_t sequences) {
  if (dist::size() == 1) return;
  nn::GPT<float>& model = *run.parts.model;
  std::string text;
  if (dist::is_root())
    text = nlohmann::json{{"step", run.start_step},
                          {"data_rng", run.parts.data_rng.state()},
                          {"dropout_rng", model.dropout_rng().state()},
                          {"sequences", sequences}}
               .dump();
  dist::broadcast(text);
  for (auto& [name, p] : model.named_parameters()) dist::broadcast(p.mutable_value().data(), p.numel());
  share_optimizer_state(*run.parts.optimizer);
  if (dist::is_root()) return;
  const nlohmann::json st = nlohmann::json::parse(text);
  run.start_step = st["step"].get<long>();
  run.parts.data_rng.set_state(st["data_rng"].get<std::string>());
  model.dropout_rng().set_state(st["dropout_rng"].get<std::string>());
  fast_forward_data(run.cfg, *run.parts.data, static_cast<std::size_t>(run.start_step),
                    st["sequences"].get<std::size_t>());
}

void share_resumed_schedule(Run& run) {
  if (dist::size() == 1) return;
  config::ScheduleConfig& s = run.cfg.schedule;
  std::string text;
  if (dist::is_root())
    text = nlohmann::json{{"warmup_steps", s.warmup_steps}, {"decay_steps", config::effective_decay_steps(run.cfg)}}
               .dump();
  dist::broadcast(text);
  const nlohmann::json kept = nlohmann::json::parse(text);
  s.warmup_steps = kept["warmup_steps"].get<std::size_t>();
  s.decay_steps = kept["decay_steps"].get<std::size_t>();
  run.parts.schedule = optim::LrSchedule::from_config(run.cfg);
  run.config_yaml = config::to_yaml(run.cfg);
}

void check_same_config_and_data(Run& run) {
  if (dist::size() == 1) return;
  config::RunConfig cfg = run.cfg;
  cfg.training.threads = 1;
  dist::check_same(fmt::format("the resolved config ({} may differ)", config::keys::training::threads),
                   config::to_yaml(cfg));
  dist::check_same("the data", replica_data_fingerprint(run));
}

void check_same_parameters(const Run& run, const std::string& what) {
  if (dist::size() == 1) return;
  dist::check_same(what + " (hash of every weight)", parameters_hash(*run.parts.model));
}

}  // namespace tf::train
