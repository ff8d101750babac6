// One query's attention for decoding: the formulas are in attend.hpp.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/attend.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/ops/kernels/causal_head.hpp"

namespace TF_KERNEL_NAMESPACE {

namespace {

// Positions [t, t + K W) of scores: K registers of positions, K independent chains over d.
template <std::size_t K, class S>
void score_registers(const S* q, std::size_t D, S scale, const S* kt, std::size_t ldk, std::size_t t, S* w) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B a[K];
  for (auto& r : a) r = B(S(0));
  for (std::size_t d = 0; d < D; ++d) {
    const B qd(q[d]);
    for (std::size_t k = 0; k < K; ++k) a[k] = xsimd::fma(qd, B::load_unaligned(kt + d * ldk + t + k * W), a[k]);
  }
  for (std::size_t k = 0; k < K; ++k) (a[k] * B(scale)).store_unaligned(w + t + k * W);
}

// w[t] = scale sum_d q[d] kt[d, t] for t < n: SIMD over positions, d in order (the same fma chain in every lane and
// in the tail, so a position's score has the same bits wherever it falls)
template <class S>
void scores(const S* q, std::size_t D, S scale, const S* kt, std::size_t ldk, std::size_t n, S* w) {
  constexpr std::size_t W = xsimd::batch<S>::size;
  std::size_t t = 0;
  for (; t + 4 * W <= n; t += 4 * W) score_registers<4>(q, D, scale, kt, ldk, t, w);
  for (; t + W <= n; t += W) score_registers<1>(q, D, scale, kt, ldk, t, w);
  // the last n - t < W positions: one chain each, side by side (d outside, so the chains run in parallel)
  const std::size_t r = n - t;
  if (r == 0) return;
  S a[W] = {};
  for (std::size_t d = 0; d < D; ++d)
    for (std::size_t i = 0; i < r; ++i) a[i] = std::fma(q[d], kt[d * ldk + t + i], a[i]);
  for (std::size_t i = 0; i < r; ++i) w[t + i] = a[i] * scale;
}

// out[d0, d0 + K W) += sum_t p_t v_t over n rows of v [n, D], in K registers across all the rows
template <std::size_t K, class S>
void add_weighted_registers(const S* p, const S* v, std::size_t n, std::size_t D, std::size_t d0, S* out) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B o[K];
  for (std::size_t k = 0; k < K; ++k) o[k] = B::load_unaligned(out + d0 + k * W);
  for (std::size_t t = 0; t < n; ++t) {
    const B pt(p[t]);
    for (std::size_t k = 0; k < K; ++k) o[k] = xsimd::fma(pt, B::load_unaligned(v + t * D + d0 + k * W), o[k]);
  }
  for (std::size_t k = 0; k < K; ++k) o[k].store_unaligned(out + d0 + k * W);
}

// out += sum_t p_t v_t over n rows of v [n, D], t in order for every d
template <class S>
void add_weighted_rows(const S* p, const S* v, std::size_t n, std::size_t D, S* out) {
  constexpr std::size_t W = xsimd::batch<S>::size;
  std::size_t d = 0;
  for (; d + 4 * W <= D; d += 4 * W) add_weighted_registers<4>(p, v, n, D, d, out);
  switch ((D - d) / W) {
    case 3:
      add_weighted_registers<3>(p, v, n, D, d, out);
      break;
    case 2:
      add_weighted_registers<2>(p, v, n, D, d, out);
      break;
    case 1:
      add_weighted_registers<1>(p, v, n, D, d, out);
      break;
    default:
      break;
  }
  d += (D - d) / W * W;
  for (; d < D; ++d)
    for (std::size_t t = 0; t < n; ++t) out[d] += p[t] * v[t * D + d];
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
