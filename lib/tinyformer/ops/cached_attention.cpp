// Causal self-attention for decoding: the n new rows of qkv attend to every cached position up to their own.
// Inference only (no backward: the result is a constant). It computes the rows the fused op
// (ops/fused_attention.cpp) gives for these positions without dropout, with the same row softmax
// (kernels::attention_head::softmax_row), so the two agree up to the order of the sums.
//
// New row i (position p = p0 + i), query head h, with K, V [p+1, D] the cached keys and values 0..p of its key/value
// head g = h / (H / Hkv) (grouped-query attention; g = h when Hkv = H), scale = 1/sqrt(D):
//   forward   w = softmax(scale q_i K^T)   [p+1]      y_i,h = w V   [D]
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/rows.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

template <class S>
KVCache<S> make_kv_cache(std::size_t n_head, std::size_t capacity, std::size_t head_size) {
  const Shape shape{n_head, capacity, head_size};
  KVCache<S> cache;
  cache.k = Array<S>::from_shape(shape);
  cache.v = Array<S>::from_shape(shape);
  return cache;
}

template <class S>
Var<S> causal_self_attention_cached(const Var<S>& qkv, KVCache<S>& cache, const AttentionOptions& options) {
  const Shape shape = qkv.shape();
  const std::size_t H = options.n_head, Hkv = options.n_kv_head == 0 ? H : options.n_kv_head;
  if (H == 0 || H % Hkv != 0 || shape.size() != 3 || shape[0] != 1 || shape[2] == 0 || shape[2] % (H + 2 * Hkv) != 0)
    throw std::invalid_argument(fmt::format("causal_self_attention_cached: qkv must be [1,n,(n_head + 2 n_kv_head) D] "
                                            "with n_kv_head dividing n_head, got n_head = {}, n_kv_head = {}, qkv {}",
                                            H, Hkv, shape_str(shape)));
  const std::size_t n = shape[1], D = shape[2] / (H + 2 * Hkv), C = H * D, ld = shape[2], G = H / Hkv;
  const std::size_t p0 = cache.length, cap = cache.k.dimension() == 3 ? cache.k.shape()[1] : 0;
  if (cache.k.dimension() != 3 || cache.k.shape()[0] != Hkv || cache.k.shape()[2] != D ||
      cache.v.shape() != cache.k.shape())
    throw std::invalid_argument(
        fmt::format("causal_self_attention_cached: the cache must be [{}, capacity, {}], got {}", Hkv, D,
                    shape_str(to_shape(cache.k.shape()))));
  if (p0 + n > cap)
    throw std::length_error(
        fmt::format("causal_self_attention_cached: {} positions do not fit a cache of {}", p0 + n, cap));
  const S* a = qkv.value().data();
  for (std::size_t i = 0; i < n; ++i)  // append the new keys and values: cache [Hkv, capacity, D]
    for (std::size_t g = 0; g < Hkv; ++g) {
      std::copy_n(a + i * ld + C + g * D, D, cache.k.data() + (g * cap + p0 + i) * D);
      std::copy_n(a + i * ld + C + (Hkv + g) * D, D, cache.v.data() + (g * cap + p0 + i) * D);
    }
  cache.length = p0 + n;

  const S scale = S(1) / std::sqrt(static_cast<S>(D));
  Array<S> y = Array<S>::from_shape({1, n, C});
  std::vector<S> w(p0 + n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t h = 0; h < H; ++h) {
      const S* q = a + i * ld + h * D;
      const S* k = cache.k.data() + h / G * cap * D;
      const S* v = cache.v.data() + h / G * cap * D;
      const std::size_t keys = p0 + i + 1;
      for (std::size_t j = 0; j < keys; ++j) w[j] = kernels::row_dot(q, k + j * D, D) * scale;
      kernels::attention_head::softmax_row(w.data(), keys, keys);
      S* yi = y.data() + i * C + h * D;  // y_i,h = w V
      std::fill(yi, yi + D, S(0));
      for (std::size_t j = 0; j < keys; ++j)
        for (std::size_t d = 0; d < D; ++d) yi[d] += w[j] * v[j * D + d];
    }
  return Var<S>(std::move(y));
}

template KVCache<float> make_kv_cache<float>(std::size_t, std::size_t, std::size_t);
template KVCache<double> make_kv_cache<double>(std::size_t, std::size_t, std::size_t);
template Var<float> causal_self_attention_cached<float>(const Var<float>&, KVCache<float>&, const AttentionOptions&);
template Var<double> causal_self_attention_cached<double>(const Var<double>&, KVCache<double>&,
                                                          const AttentionOptions&);

}  // namespace tf
