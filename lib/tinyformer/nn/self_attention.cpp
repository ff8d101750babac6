#include "tinyformer/nn/self_attention.hpp"

#include <array>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include "tinyformer/ops/kernels/rows.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::nn {

template <class S>
CausalSelfAttention<S>::CausalSelfAttention(const config::ModelConfig& cfg, Rng& init_rng, Rng& dropout_rng)
    : c_attn(cfg.d_model, 3 * cfg.d_model, cfg.bias, cfg.init, init_rng),
      c_proj(cfg.d_model, cfg.d_model, cfg.bias, cfg.init, init_rng),
      d_model_(cfg.d_model),
      n_head_(cfg.n_head),
      dropout_(static_cast<S>(cfg.dropout)),
      dropout_rng_(dropout_rng),
      impl_(cfg.attention),
      rope_(cfg.position == config::Position::rope) {
  this->register_module("c_attn", c_attn);
  this->register_module("c_proj", c_proj);
}

template <class S>
Var<S> CausalSelfAttention<S>::attend_composed(const Var<S>& qkv) {
  const std::size_t B = qkv.size(0), T = qkv.size(1), C = d_model_, H = n_head_, D = C / H;
  const auto qkv_parts = split(qkv, -1, {C, C, C});  // q, k, v [B,T,C]
  auto heads = [&](const Var<S>& t) {                // [B,T,C] -> [B,H,T,D]
    return permute(reshape(t, {long(B), long(T), long(H), long(D)}), {0, 2, 1, 3});
  };
  const Var<S> q = heads(qkv_parts[0]), k = heads(qkv_parts[1]), v = heads(qkv_parts[2]);
  Var<S> att = scale(matmul(q, k, false, true), S(1) / std::sqrt(static_cast<S>(D)));  // [B,H,T,T]
  att = softmax(causal_mask(att));
  if (record_) weights_ = att.value();
  att = dropout(att, dropout_, this->training(), dropout_rng_);
  const Var<S> y = matmul(att, v);                                        // [B,H,T,D]
  return reshape(permute(y, {0, 2, 1, 3}), {long(B), long(T), long(C)});  // [B,T,C]
}

template <class S>
Var<S> CausalSelfAttention<S>::forward(const Var<S>& x) {
  Var<S> qkv = c_attn.forward(x);            // [B,T,3C]
  if (rope_) qkv = rotary_qk(qkv, n_head_);  // q and k turned by position
  Var<S> y;
  if (impl_ == config::AttentionImpl::fused)
    y = causal_self_attention(qkv, n_head_, dropout_, this->training(), dropout_rng_, record_ ? &weights_ : nullptr);
  else
    y = attend_composed(qkv);
  if (record_) head_outputs_ = y.value();
  if (!ablated_.empty()) y = apply_ablation(y);
  return dropout(c_proj.forward(y), dropout_, this->training(), dropout_rng_);  // residual dropout
}

template <class S>
KVCache<S> CausalSelfAttention<S>::make_cache(std::size_t capacity) const {
  const std::size_t H = n_head_, D = d_model_ / n_head_;
  // A std::array shape: from a braced list, GCC 12 with -march=native on AVX2 warns (maybe-uninitialized, a false
  // positive inside xtensor's svector) and -Werror stops the build.
  const std::array<std::size_t, 3> shape{H, capacity, D};
  return {Array<S>::from_shape(shape), Array<S>::from_shape(shape), 0};
}

namespace {

// y [n,C] for new rows at positions p0.. : per head h, softmax(scale q k^T) over cached keys 0..p, times v.
// qkv [n,3C]; cache k, v [H, capacity, D] already holding positions 0 .. p0+n-1.
template <class S>
void attend_cached(const S* qkv, std::size_t n, std::size_t C, std::size_t H, const KVCache<S>& cache, std::size_t p0,
                   S* y) {
  const std::size_t D = C / H, cap = cache.k.shape()[1];
  const S scale = S(1) / std::sqrt(static_cast<S>(D));
  std::vector<S> w(p0 + n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t h = 0; h < H; ++h) {
      const S* q = qkv + i * 3 * C + h * D;
      const S* k = cache.k.data() + h * cap * D;
      const S* v = cache.v.data() + h * cap * D;
      const std::size_t keys = p0 + i + 1;
      for (std::size_t j = 0; j < keys; ++j) w[j] = kernels::row_dot(q, k + j * D, D) * scale;
      const S mx = kernels::row_max(w.data(), keys);
      S total = 0;
      for (std::size_t j = 0; j < keys; ++j) total += (w[j] = std::exp(w[j] - mx));
      const S inv = S(1) / total;
      S* yi = y + i * C + h * D;
      std::fill(yi, yi + D, S(0));
      for (std::size_t j = 0; j < keys; ++j) {
        const S wj = w[j] * inv;
        const S* vj = v + j * D;
        for (std::size_t d = 0; d < D; ++d) yi[d] += wj * vj[d];
      }
    }
}

}  // namespace

template <class S>
Var<S> CausalSelfAttention<S>::forward_cached(const Var<S>& x, KVCache<S>& cache) {
  const std::size_t n = x.size(1), C = d_model_, H = n_head_, D = C / H, p0 = cache.length;
  if (x.shape().size() != 3 || x.size(0) != 1 || x.size(2) != C)
    throw std::invalid_argument(fmt::format("forward_cached: x must be [1,n,{}], got {}", C, shape_str(x.shape())));
  if (p0 + n > cache.k.shape()[1])
    throw std::length_error(
        fmt::format("forward_cached: {} positions do not fit a cache of {}", p0 + n, cache.k.shape()[1]));
  Var<S> qkv = c_attn.forward(x);  // [1,n,3C]
  if (rope_) qkv = rotary_qk(qkv, H, 10000.0, p0);
  const S* a = qkv.value().data();
  const std::size_t cap = cache.k.shape()[1];
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t h = 0; h < H; ++h) {
      std::copy_n(a + i * 3 * C + C + h * D, D, cache.k.data() + (h * cap + p0 + i) * D);
      std::copy_n(a + i * 3 * C + 2 * C + h * D, D, cache.v.data() + (h * cap + p0 + i) * D);
    }
  cache.length = p0 + n;
  Array<S> y = Array<S>::from_shape({1, n, C});
  attend_cached(a, n, C, H, cache, p0, y.data());
  return c_proj.forward(Var<S>(std::move(y)));
}

template <class S>
void CausalSelfAttention<S>::ablate_head(std::size_t h, std::optional<Array<S>> replacement) {
  const std::size_t D = d_model_ / n_head_;
  if (h >= n_head_)
    throw std::invalid_argument(fmt::format("ablate_head: head {} of a layer with {} heads", h, n_head_));
  if (replacement && (replacement->dimension() != 2 || replacement->shape()[1] != D))
    throw std::invalid_argument(fmt::format("ablate_head: the replacement must be [T,D] with D = {}, got {}", D,
                                            shape_str(to_shape(replacement->shape()))));
  ablated_.emplace_back(h, std::move(replacement));
}

template <class S>
void CausalSelfAttention<S>::clear_ablation() {
  ablated_.clear();
}

// y [B,T,C] -> y * keep + fill: keep [C] is 0 on the ablated heads' columns and 1 elsewhere; fill [T,C] holds the
// replacements there (zeros for a zero ablation).
template <class S>
Var<S> CausalSelfAttention<S>::apply_ablation(const Var<S>& y) const {
  const std::size_t T = y.size(1), C = d_model_, D = C / n_head_;
  Array<S> keep = xt::ones<S>({C});
  Array<S> fill = xt::zeros<S>({T, C});
  for (const auto& [h, r] : ablated_) {
    if (r && r->shape()[0] < T)
      throw std::invalid_argument(
          fmt::format("ablation of head {}: the replacement has {} rows, the input {}", h, r->shape()[0], T));
    for (std::size_t d = 0; d < D; ++d) {
      keep(h * D + d) = S(0);
      if (r)
        for (std::size_t t = 0; t < T; ++t) fill(t, h * D + d) = (*r)(t, d);
    }
  }
  return add(mul(y, Var<S>(keep)), Var<S>(fill));
}

template class CausalSelfAttention<float>;
template class CausalSelfAttention<double>;

}  // namespace tf::nn
