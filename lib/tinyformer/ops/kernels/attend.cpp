// One query's attention for decoding: the formulas are in attend.hpp.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/attend.hpp"

#include <algorithm>

#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/rows.hpp"

namespace TF_KERNEL_NAMESPACE {

namespace {

// out += sum_t p_t v_t over n rows of v [n, D]
template <class S>
void add_weighted_rows(const S* p, const S* v, std::size_t n, std::size_t D, S* out) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  for (std::size_t t = 0; t < n; ++t) {
    const S* vt = v + t * D;
    const B pt(p[t]);
    std::size_t d = 0;
    for (; d + W <= D; d += W)
      xsimd::fma(pt, B::load_unaligned(vt + d), B::load_unaligned(out + d)).store_unaligned(out + d);
    for (; d < D; ++d) out[d] += p[t] * vt[d];
  }
}

}  // namespace

template <class S>
void attend_query(const S* q, std::size_t D, S scale, const S* k1, const S* v1, std::size_t n1, const S* k2,
                  const S* v2, std::size_t n2, S* w, S* out) {
  for (std::size_t t = 0; t < n1; ++t) w[t] = tf::kernels::row_dot(q, k1 + t * D, D) * scale;
  for (std::size_t t = 0; t < n2; ++t) w[n1 + t] = tf::kernels::row_dot(q, k2 + t * D, D) * scale;
  attention_head::softmax_row(w, n1 + n2, n1 + n2);
  std::fill(out, out + D, S(0));
  add_weighted_rows(w, v1, n1, D, out);
  add_weighted_rows(w + n1, v2, n2, D, out);
}

TF_KERNEL_INSTANTIATE(TF_ATTEND_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
