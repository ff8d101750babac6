#include "tinyformer/train/memory_estimate.hpp"

#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/memory.hpp"
#include "tinyformer/train/setup.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>

namespace tf::train {

namespace {

constexpr double S = sizeof(float);

struct Dims {
  double B, T, C, H, L, V, F, Q;  // F: the MLP's hidden width, Q: c_attn's (q, k and v)
};

// The model section with the data's T and V in place of auto.
config::ModelConfig resolved_model(const config::RunConfig& cfg, std::size_t T, std::size_t V) {
  config::ModelConfig m = cfg.model;
  m.context = T;
  m.vocab_size = V;
  return m;
}

Dims dims_of(const config::RunConfig& cfg, std::size_t T, std::size_t V) {
  const config::ModelConfig& m = cfg.model;
  return {static_cast<double>(cfg.training.batch_size),
          static_cast<double>(T),
          static_cast<double>(m.d_model),
          static_cast<double>(m.n_head),
          static_cast<double>(m.n_layer),
          static_cast<double>(V),
          static_cast<double>(nn::mlp_hidden(m)),
          static_cast<double>(nn::qkv_width(m))};
}

double file_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(size);
}

// What the estimate is computed from: the config, the data's T and V, and the data's bytes.
struct Scenario {
  config::RunConfig cfg;
  std::size_t T, V;
  double data_bytes;
};

// A key that can drive the estimate, its value and a modest value for it: the field's default, or for the
// vocabulary and the context (`auto` by default) a small one. shrink(s) puts the modest value into a scenario.
struct Knob {
  const char* key;
  std::size_t value, modest;
  std::function<void(Scenario&)> shrink;
};

// A count field of the config as a knob at its default. A field of the data section changes what the data holds,
// so the scenario's data bytes (and, for the synthetic tasks, whose T the data section fixes, its T) follow.
template <class Section>
Knob field_knob(const config::RunConfig& cfg, const config::FieldRef<Section, std::size_t>& field) {
  const std::size_t modest = field.default_value();
  return {field.path, field.of(cfg), modest, [field, modest](Scenario& s) {
            field.of(s.cfg) = modest;
            if constexpr (std::is_same_v<Section, config::DataConfig>) {
              const data::DataFootprint fp = data::data_footprint(s.cfg);
              s.data_bytes = fp.bytes;
              const bool file = s.cfg.data.task == config::Task::text || s.cfg.data.task == config::Task::tokens;
              if (!file && s.T > 0) s.T = fp.T;
            }
          }};
}

std::vector<Knob> knobs(const config::RunConfig& cfg, std::size_t T, std::size_t V) {
  namespace field = config::field;
  std::vector<Knob> k{field_knob(cfg, field::model::d_model),       field_knob(cfg, field::model::n_layer),
                      field_knob(cfg, field::model::n_head),        field_knob(cfg, field::model::mlp_ratio),
                      field_knob(cfg, field::training::batch_size), field_knob(cfg, field::training::grad_accum),
                      field_knob(cfg, field::data::eval_size)};
  const std::size_t small_V = std::min<std::size_t>(V, 256);
  // The vocabulary is the key the user sets: model.vocab_size, or with a SentencePiece tokenizer and model.vocab_size
  // auto, data.vocab_size (naming model.vocab_size (default) sent the user to a key that follows the other)
  const bool pieces = cfg.data.tokenizer != config::Tokenizer::char_ && !cfg.model.vocab_size;
  k.push_back({pieces ? config::keys::data::vocab_size : config::keys::model::vocab_size, V, small_V,
               [small_V](Scenario& s) { s.V = small_V; }});
  const config::Task task = cfg.data.task;
  if (task == config::Task::add) {
    k.push_back(field_knob(cfg, field::data::digits));
  } else if (task != config::Task::text && task != config::Task::tokens) {
    k.push_back(field_knob(cfg, field::data::length));
  } else {
    const std::size_t small_T = std::min<std::size_t>(T, 64);
    k.push_back({config::keys::model::context, T, small_T, [small_T](Scenario& s) {
                   s.T = small_T;
                   s.cfg.model.context = small_T;
                 }});
  }
  return k;
}

// The estimate with `knob` at its modest value.
double estimate_with(const config::RunConfig& cfg, const Knob& knob, std::size_t T, std::size_t V, double data_bytes) {
  Scenario s{cfg, T, V, data_bytes};
  knob.shrink(s);
  return estimate_memory(s.cfg, s.T, s.V, s.data_bytes).total();
}

}  // namespace

MemoryEstimate estimate_memory(const config::RunConfig& cfg, std::size_t T, std::size_t V, double data_bytes) {
  MemoryEstimate e;
  e.data = data_bytes;
  if (T == 0 || V == 0) return e;  // the model's part needs the data's T and V
  const Dims d = dims_of(cfg, T, V);
  const double P = nn::parameter_count(resolved_model(cfg, T, V));
  e.weights = S * P;
  e.gradients = S * P;
  const config::OptimizerConfig& o = cfg.optimizer;
  e.optimizer = o.name == config::OptimizerName::sgd ? (o.momentum > 0 ? S * P : 0) : 2 * S * P;
  e.checkpoint = e.weights + e.optimizer;
  const double BT = d.B * d.T;
  e.activations = S * BT * (d.L * (7 * d.C + d.Q + 2 * d.F + 2 * d.H * d.T) + 3 * d.V + 2 * d.C);
  e.evaluation = 2 * S * BT * d.V;
  const double global = static_cast<double>(sequences_per_step(cfg));  // every process draws the global batch
  e.batches = 2 * static_cast<double>(sizeof(Index)) * global * d.T * (global > d.B ? 2 : 1);
  return e;
}

void check_memory(const config::RunConfig& cfg, const MemoryEstimate& e, std::size_t T, std::size_t V) {
  const double available = available_memory();
  if (available <= 0 || e.total() <= available) return;
  const std::array<std::pair<const char*, double>, 8> parts{{{"parameters", e.weights},
                                                             {"gradients", e.gradients},
                                                             {"optimizer state", e.optimizer},
                                                             {"checkpoint copy", e.checkpoint},
                                                             {"activations", e.activations},
                                                             {"evaluation", e.evaluation},
                                                             {"batches", e.batches},
                                                             {"data", e.data}}};
  std::string listed;
  for (const auto& [name, bytes] : parts)
    if (bytes > 0) listed += fmt::format("{}{} {}", listed.empty() ? "" : ", ", name, format_bytes(bytes));
  // The keys whose modest value would shrink the estimate most, the largest first.
  std::vector<std::pair<double, Knob>> ranked;
  for (const Knob& knob : knobs(cfg, T, V))
    if (knob.modest < knob.value) ranked.emplace_back(e.total() / estimate_with(cfg, knob, T, V, e.data), knob);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // A data file too large for the machine: no key's modest value helps, the file is what to change.
  const bool file = cfg.data.task == config::Task::text || cfg.data.task == config::Task::tokens;
  if (file && e.data >= e.total() / 2)
    throw config::error_at(
        cfg, config::keys::data::path,
        fmt::format("'{}' ({}) needs an estimated {} ({}); this machine has {} available; use a smaller file",
                    cfg.data.path, format_bytes(file_bytes(cfg.data.path)), format_bytes(e.total()), listed,
                    format_bytes(available)));
  std::string driven, first = file ? config::keys::data::path : config::keys::data::eval_size;
  for (std::size_t i = 0; i < ranked.size() && i < 2 && ranked[i].first >= (i == 0 ? 1.5 : 2); ++i) {
    const Knob& knob = ranked[i].second;
    if (i == 0) first = knob.key;
    driven += fmt::format("{}{}={}", i == 0 ? "" : " and ", knob.key, knob.value);
  }
  if (driven.empty()) driven = "this config";  // no key at a modest value would make it fit
  throw config::error_at(cfg, first,
                         fmt::format("{} need{} an estimated {} ({}); this machine has {} available; lower {}", driven,
                                     driven.find(" and ") == std::string::npos ? "s" : "", format_bytes(e.total()),
                                     listed, format_bytes(available), first));
}

}  // namespace tf::train
