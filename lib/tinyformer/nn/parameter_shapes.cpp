#include "tinyformer/nn/parameter_shapes.hpp"

#include <stdexcept>

#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

namespace {

using Shapes = std::vector<ParameterShape>;

void add_norm(Shapes& out, const std::string& name, const config::ModelConfig& cfg) {
  if (cfg.norm == config::Norm::none) return;
  out.push_back({name + ".weight", {cfg.d_model}});
  if (cfg.norm == config::Norm::layernorm && cfg.bias) out.push_back({name + ".bias", {cfg.d_model}});
}

void add_linear(Shapes& out, const std::string& name, std::size_t in, std::size_t out_features, bool bias) {
  out.push_back({name + ".weight", {out_features, in}});
  if (bias) out.push_back({name + ".bias", {out_features}});
}

std::size_t resolved(const std::optional<std::size_t>& value, const char* key) {
  if (!value) throw std::invalid_argument(std::string("parameter_shapes: ") + key + " must be a number, not auto");
  return *value;
}

// The parameters before the blocks (embeddings) and after them (final norm, head).
Shapes embedding_shapes(const config::ModelConfig& cfg) {
  const std::size_t V = resolved(cfg.vocab_size, "vocab_size"), T = resolved(cfg.context, "context");
  Shapes out{{"transformer.wte.weight", {V, cfg.d_model}}};
  if (cfg.position == config::Position::learned) out.push_back({"transformer.wpe.weight", {T, cfg.d_model}});
  return out;
}

Shapes final_shapes(const config::ModelConfig& cfg) {
  Shapes out;
  add_norm(out, "transformer.ln_f", cfg);
  if (!cfg.tie_weights) add_linear(out, "lm_head", cfg.d_model, resolved(cfg.vocab_size, "vocab_size"), false);
  return out;
}

double count(const Shapes& shapes) {
  double n = 0;
  for (const auto& p : shapes) {
    double size = 1;
    for (std::size_t d : p.shape) size *= static_cast<double>(d);
    n += size;
  }
  return n;
}

}  // namespace

bool has_mlp(const config::ModelConfig& cfg) { return cfg.mlp != config::Mlp::none; }

std::size_t mlp_hidden(const config::ModelConfig& cfg) {
  if (!has_mlp(cfg)) return 0;
  return cfg.mlp == config::Mlp::swiglu ? swiglu_hidden(cfg.d_model, cfg.mlp_ratio) : cfg.mlp_ratio * cfg.d_model;
}

// c_attn's rows: the n_head q heads, then the n_kv_head k heads, then the v heads, D rows each (n_kv_head 0: n_head).
std::size_t qkv_width(const config::ModelConfig& cfg) {
  if (cfg.n_kv_head == 0 || cfg.n_head == 0) return 3 * cfg.d_model;
  return cfg.d_model + 2 * cfg.n_kv_head * (cfg.d_model / cfg.n_head);
}

std::size_t mlp_fc_width(const config::ModelConfig& cfg) {
  return cfg.mlp == config::Mlp::swiglu ? 2 * mlp_hidden(cfg) : mlp_hidden(cfg);
}

std::vector<ParameterShape> block_parameter_shapes(const config::ModelConfig& cfg) {
  const std::size_t C = cfg.d_model;
  Shapes out;
  add_norm(out, "ln_1", cfg);
  add_linear(out, "attn.c_attn", C, qkv_width(cfg), cfg.bias);
  add_linear(out, "attn.c_proj", C, C, cfg.bias);
  if (!has_mlp(cfg)) return out;
  add_norm(out, "ln_2", cfg);
  add_linear(out, "mlp.c_fc", C, mlp_fc_width(cfg), cfg.bias);
  add_linear(out, "mlp.c_proj", mlp_hidden(cfg), C, cfg.bias);
  return out;
}

std::vector<ParameterShape> parameter_shapes(const config::ModelConfig& cfg) {
  Shapes out = embedding_shapes(cfg);
  const Shapes block = block_parameter_shapes(cfg);
  for (std::size_t l = 0; l < cfg.n_layer; ++l)
    for (const auto& p : block) out.push_back({"transformer.h." + std::to_string(l) + "." + p.name, p.shape});
  for (auto& p : final_shapes(cfg)) out.push_back(std::move(p));
  return out;
}

double parameter_count(const config::ModelConfig& cfg) {
  return count(embedding_shapes(cfg)) + static_cast<double>(cfg.n_layer) * count(block_parameter_shapes(cfg)) +
         count(final_shapes(cfg));
}

}  // namespace tf::nn
