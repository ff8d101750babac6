// One query's attention for decoding: the formulas are in attend.hpp.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/attend.hpp"

#include <algorithm>

#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/rows.hpp"

namespace TF_KERNEL_NAMESPACE {

void attend_query(const float* q, std::size_t D, float scale, const KeyValueRows& first, const KeyValueRows& second,
                  float* w, float* out) {
  const std::size_t n = first.n + second.n;
  for (std::size_t t = 0; t < first.n; ++t) w[t] = tf::kernels::row_dot(q, first.k + t * D, D) * scale;
  for (std::size_t t = 0; t < second.n; ++t) w[first.n + t] = tf::kernels::row_dot(q, second.k + t * D, D) * scale;
  attention_head::softmax_row(w, n, n);
  using B = xsimd::batch<float>;
  constexpr std::size_t W = B::size;
  std::fill(out, out + D, 0.f);
  auto add_rows = [&](const KeyValueRows& rows, const float* p) {  // out += sum_t p_t v_t
    for (std::size_t t = 0; t < rows.n; ++t) {
      const float* v = rows.v + t * D;
      const B pt(p[t]);
      std::size_t d = 0;
      for (; d + W <= D; d += W)
        xsimd::fma(pt, B::load_unaligned(v + d), B::load_unaligned(out + d)).store_unaligned(out + d);
      for (; d < D; ++d) out[d] += p[t] * v[d];
    }
  };
  add_rows(first, w);
  add_rows(second, w + first.n);
}

}  // namespace TF_KERNEL_NAMESPACE
