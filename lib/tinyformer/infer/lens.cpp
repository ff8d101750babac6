// The logit lens and direct logit attribution (infer/lens.hpp), from one cached forward (nn::GPT::run_with_cache):
// the embeddings, each head's z and each MLP's output, read through the final norm and the unembedding in float64.
#include "tinyformer/infer/lens.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::infer {

namespace {

// The model's weights that the readout needs, and the cached activations of one forward.
struct Readout {
  const config::ModelConfig& cfg;
  std::size_t C, H, D, V, L;
  const Array<float>* unembed = nullptr;  // [V,C] lm_head.weight, or wte when tied
  const Array<float>* ln_weight = nullptr;
  const Array<float>* ln_bias = nullptr;                        // layernorm with bias only
  std::vector<const Array<float>*> c_proj_weight, c_proj_bias;  // [L]: [C,C] and [C] (null without biases)
  std::vector<double> mean_unembed;                             // [C] mean over the vocabulary of U[v]
  nn::ActivationCache<float> cache;
  Array<float> logits;  // [B,T,V]

  Readout(nn::GPT<float>& model, const IndexArray& ids) : cfg(model.config()) {
    C = cfg.d_model, H = cfg.n_head, D = C / H, V = model.vocab_size(), L = cfg.n_layer;
    NoGradGuard no_grad;
    const bool was_training = model.training();
    model.eval();
    std::vector<std::string> names{"hook_embed", "blocks.0.hook_resid_pre"};  // what the readouts below read
    if (cfg.position == config::Position::learned) names.emplace_back("hook_pos_embed");
    for (std::size_t l = 0; l < L; ++l) {
      for (const char* leaf : {"hook_resid_post", "attn.hook_z"}) names.push_back(fmt::format("blocks.{}.{}", l, leaf));
      if (cfg.mlp != config::Mlp::none) names.push_back(fmt::format("blocks.{}.hook_mlp_out", l));
    }
    nn::Hooks<float> hooks;
    hooks.cache_into(cache, names);
    logits = model.forward(ids, hooks).value();
    model.train(was_training);
    params = model.named_parameters();
    unembed = find(cfg.tie_weights ? "transformer.wte.weight" : "lm_head.weight");
    if (cfg.norm != config::Norm::none) ln_weight = find("transformer.ln_f.weight");
    if (cfg.norm == config::Norm::layernorm && cfg.bias) ln_bias = find("transformer.ln_f.bias");
    for (std::size_t l = 0; l < L; ++l) {
      c_proj_weight.push_back(find(fmt::format("transformer.h.{}.attn.c_proj.weight", l)));
      c_proj_bias.push_back(cfg.bias ? find(fmt::format("transformer.h.{}.attn.c_proj.bias", l)) : nullptr);
    }
    mean_unembed.assign(C, 0.0);
    for (std::size_t v = 0; v < V; ++v)
      for (std::size_t c = 0; c < C; ++c) mean_unembed[c] += (*unembed)(v, c) / static_cast<double>(V);
  }

  const Array<float>* find(const std::string& name) const {
    for (const auto& [n, p] : params)
      if (n == name) return &p.value();
    throw std::logic_error("lens: the model has no parameter " + name);
  }

  const Array<float>& at(const std::string& name) const { return cache.at(name); }

  // The residual stream at (b, q) after block `block` (-1: the embeddings), [C] in float64.
  std::vector<double> residual(std::size_t b, std::size_t q, long block) const {
    const Array<float>& x =
        block < 0 ? at("blocks.0.hook_resid_pre") : at(fmt::format("blocks.{}.hook_resid_post", block));
    std::vector<double> r(C);
    for (std::size_t c = 0; c < C; ++c) r[c] = x(b, q, c);
    return r;
  }

  // The final norm of a residual [C], and the scale it divides by (sigma for layernorm, rms for rmsnorm, 1 for none).
  double norm_scale(const std::vector<double>& x) const {
    if (cfg.norm == config::Norm::none) return 1.0;
    const double n = static_cast<double>(C);
    if (cfg.norm == config::Norm::rmsnorm) {
      double sq = 0;
      for (const double v : x) sq += v * v;
      return std::sqrt(sq / n + kNormEps);
    }
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
    double var = 0;
    for (const double v : x) var += (v - mean) * (v - mean);
    return std::sqrt(var / n + kNormEps);
  }
  std::vector<double> final_norm(const std::vector<double>& x) const {
    const double scale = norm_scale(x);
    const double mean = cfg.norm == config::Norm::layernorm ? std::accumulate(x.begin(), x.end(), 0.0) / double(C) : 0;
    std::vector<double> y(C);
    for (std::size_t c = 0; c < C; ++c) {
      y[c] = (x[c] - mean) / scale;
      if (ln_weight) y[c] *= (*ln_weight)(c);
      if (ln_bias) y[c] += (*ln_bias)(c);
    }
    return y;
  }

  // g: a component c of the final residual at (b, q) adds c . g to logit[t] - mean_v logit[v]; `final_bias` gets
  // what the norm's bias adds.
  std::vector<double> direction(std::size_t b, std::size_t q, Index t, double& final_bias) const {
    const double scale = norm_scale(residual(b, q, static_cast<long>(L) - 1));
    std::vector<double> u(C);
    final_bias = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const double d = (*unembed)(static_cast<std::size_t>(t), c) - mean_unembed[c];
      u[c] = ln_weight ? (*ln_weight)(c)*d : d;
      if (ln_bias) final_bias += (*ln_bias)(c)*d;
    }
    if (cfg.norm == config::Norm::layernorm) {
      const double mean = std::accumulate(u.begin(), u.end(), 0.0) / static_cast<double>(C);
      for (double& v : u) v -= mean;
    }
    for (double& v : u) v /= scale;
    return u;
  }

  // Adds the attribution of token t at (b, q) to `out`.
  void attribute(std::size_t b, std::size_t q, Index t, LogitAttribution& out) const {
    double final_bias = 0;
    const std::vector<double> g = direction(b, q, t, final_bias);
    auto dot = [&](const Array<float>& a) {  // a [B,T,C] at (b, q)
      double s = 0;
      for (std::size_t c = 0; c < C; ++c) s += a(b, q, c) * g[c];
      return s;
    };
    out.embed += dot(at("hook_embed"));
    if (cache.count("hook_pos_embed"))
      for (std::size_t c = 0; c < C; ++c) out.embed += at("hook_pos_embed")(0, q, c) * g[c];
    for (std::size_t l = 0; l < L; ++l) {
      const Array<float>& z = at(fmt::format("blocks.{}.attn.hook_z", l));  // [B,T,H,D]
      const Array<float>& w = *c_proj_weight[l];                            // [C, H*D]
      for (std::size_t h = 0; h < H; ++h) {
        double s = 0;
        for (std::size_t c = 0; c < C; ++c) {
          double o = 0;
          for (std::size_t d = 0; d < D; ++d) o += double(w(c, h * D + d)) * z(b, q, h, d);
          s += o * g[c];
        }
        out.heads[l][h] += s;
      }
      if (c_proj_bias[l])
        for (std::size_t c = 0; c < C; ++c) out.attention_bias[l] += (*c_proj_bias[l])(c)*g[c];
      if (!out.mlp.empty()) out.mlp[l] += dot(at(fmt::format("blocks.{}.hook_mlp_out", l)));
    }
    out.final_bias += final_bias;
    double mean_logit = 0;
    for (std::size_t v = 0; v < V; ++v) mean_logit += logits(b, q, v) / static_cast<double>(V);
    out.logit += logits(b, q, static_cast<std::size_t>(t)) - mean_logit;
    ++out.positions;
  }

  LogitAttribution empty_attribution() const {
    LogitAttribution a;
    a.heads.assign(L, std::vector<double>(H, 0.0));
    a.attention_bias.assign(L, 0.0);
    if (nn::has_mlp(cfg)) a.mlp.assign(L, 0.0);
    return a;
  }

 private:
  nn::NamedParams<float> params;
};

void check_position(const IndexArray& ids, std::size_t position, const char* who) {
  if (ids.dimension() != 1 || ids.size() == 0)
    throw std::invalid_argument(
        fmt::format("{}: ids must be one sequence [T], got {}", who, shape_str(to_shape(ids.shape()))));
  if (position >= ids.size())
    throw std::invalid_argument(fmt::format("{}: position {} is past the sequence of {} tokens (valid: 0 to {})", who,
                                            position, ids.size(), ids.size() - 1));
}

IndexArray as_batch(const IndexArray& ids) {
  IndexArray x = IndexArray::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), x.begin());
  return x;
}

void divide(LogitAttribution& a) {
  if (a.positions == 0) return;
  const double n = static_cast<double>(a.positions);
  a.logit /= n, a.embed /= n, a.final_bias /= n;
  for (auto& row : a.heads)
    for (double& v : row) v /= n;
  for (double& v : a.attention_bias) v /= n;
  for (double& v : a.mlp) v /= n;
}

}  // namespace

double LogitAttribution::sum() const {
  double s = embed + final_bias;
  for (const auto& row : heads) s = std::accumulate(row.begin(), row.end(), s);
  s = std::accumulate(attention_bias.begin(), attention_bias.end(), s);
  return std::accumulate(mlp.begin(), mlp.end(), s);
}

std::vector<LensRow> logit_lens(nn::GPT<float>& model, const IndexArray& ids, std::size_t position, std::size_t k) {
  check_position(ids, position, "logit_lens");
  if (k == 0 || k > model.vocab_size())
    throw std::invalid_argument(
        fmt::format("logit_lens: k must be 1 to the vocabulary's {} tokens, got {}", model.vocab_size(), k));
  const Readout r(model, as_batch(ids));
  std::vector<LensRow> rows;
  for (long block = -1; block < static_cast<long>(r.L); ++block) {
    const std::vector<double> y = r.final_norm(r.residual(0, position, block));
    std::vector<double> logit(r.V, 0.0);
    for (std::size_t v = 0; v < r.V; ++v)
      for (std::size_t c = 0; c < r.C; ++c) logit[v] += (*r.unembed)(v, c) * y[c];
    const double top = *std::max_element(logit.begin(), logit.end());
    double z = 0;
    for (const double v : logit) z += std::exp(v - top);
    std::vector<Index> order(r.V);
    std::iota(order.begin(), order.end(), Index{0});
    std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return logit[a] > logit[b]; });
    LensRow row{block < 0 ? std::string("embed") : fmt::format("block {}", block), {}, {}};
    for (std::size_t i = 0; i < k; ++i) {
      row.tokens.push_back(order[i]);
      row.probabilities.push_back(std::exp(logit[order[i]] - top) / z);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

LogitAttribution direct_logit_attribution(nn::GPT<float>& model, const IndexArray& ids, std::size_t position,
                                          Index token) {
  check_position(ids, position, "direct_logit_attribution");
  if (token < 0 || static_cast<std::size_t>(token) >= model.vocab_size())
    throw std::invalid_argument(
        fmt::format("direct_logit_attribution: token {} is not in [0, {})", token, model.vocab_size()));
  const Readout r(model, as_batch(ids));
  LogitAttribution a = r.empty_attribution();
  r.attribute(0, position, token, a);
  return a;
}

LogitAttribution mean_direct_logit_attribution(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size,
                                               std::size_t max_batches) {
  const auto& batches = source.eval_batches(batch_size);
  LogitAttribution total;
  for (std::size_t i = 0; i < std::min(max_batches, batches.size()); ++i) {
    const data::Batch& batch = batches[i];
    const Readout r(model, batch.x);
    if (total.heads.empty()) total = r.empty_attribution();
    for (std::size_t b = 0; b < batch.y.shape(0); ++b)
      for (std::size_t q = 0; q < batch.y.shape(1); ++q)
        if (batch.y(b, q) != data::kIgnore) r.attribute(b, q, batch.y(b, q), total);
  }
  divide(total);
  return total;
}

}  // namespace tf::infer
