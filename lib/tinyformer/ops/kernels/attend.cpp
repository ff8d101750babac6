// One query's attention for decoding: the formulas are in attend.hpp.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/attend.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/ops/kernels/causal_head.hpp"

namespace TF_KERNEL_NAMESPACE {

namespace {

// w[t] = scale sum_d q[d] kt[d, t] for t < n: SIMD over positions, d in order (the same sum order in every lane and
// in the scalar tail)
template <class S>
void scores(const S* q, std::size_t D, S scale, const S* kt, std::size_t ldk, std::size_t n, S* w) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  std::size_t t = 0;
  for (; t + 2 * W <= n; t += 2 * W) {  // two registers of positions: two independent chains
    B a(S(0)), b(S(0));
    for (std::size_t d = 0; d < D; ++d) {
      const B qd(q[d]);
      a = xsimd::fma(qd, B::load_unaligned(kt + d * ldk + t), a);
      b = xsimd::fma(qd, B::load_unaligned(kt + d * ldk + t + W), b);
    }
    (a * B(scale)).store_unaligned(w + t);
    (b * B(scale)).store_unaligned(w + t + W);
  }
  for (; t < n; ++t) {
    S a = 0;
    for (std::size_t d = 0; d < D; ++d) a = std::fma(q[d], kt[d * ldk + t], a);
    w[t] = a * scale;
  }
}

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
void attend_query(const S* q, std::size_t D, S scale, std::size_t ldk, const S* kt1, const S* v1, std::size_t n1,
                  const S* kt2, const S* v2, std::size_t n2, S* w, S* out) {
  scores(q, D, scale, kt1, ldk, n1, w);
  scores(q, D, scale, kt2, ldk, n2, w + n1);
  attention_head::softmax_row(w, n1 + n2, n1 + n2);
  std::fill(out, out + D, S(0));
  add_weighted_rows(w, v1, n1, D, out);
  add_weighted_rows(w + n1, v2, n2, D, out);
}

TF_KERNEL_INSTANTIATE(TF_ATTEND_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
