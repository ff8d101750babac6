#include "tinyformer/ops/kernels/causal_head.hpp"

#include <algorithm>
#include <cmath>

#include <xsimd/xsimd.hpp>

#include "tinyformer/ops/kernels/rows.hpp"

namespace tf::kernels::attention_head {

namespace {

constexpr std::size_t R = 4;  // rows per register tile

// dst [D,T] = src [T,D] (row stride ld) transposed
template <class S>
void transpose_into(const S* src, std::size_t ld, std::size_t T, std::size_t D, S* dst) {
  for (std::size_t j = 0; j < T; ++j)
    for (std::size_t d = 0; d < D; ++d) dst[d * T + j] = src[j * ld + d];
}

// out[i, j] = sum_d a[i, d] bt[d, j] for rows i in [0, T) and columns j < (end of i's row tile): the
// lower triangle and the tile's overhang, which the caller overwrites. a has row stride lda; bt is
// [D,T]; out is [T,T].
template <class S>
void rows_by_transposed(const S* a, std::size_t lda, const S* bt, std::size_t T, std::size_t D, S* out) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  for (std::size_t i0 = 0; i0 < T; i0 += R) {
    const std::size_t rows = std::min(R, T - i0);
    const std::size_t jend = i0 + rows;  // keys 0 .. i0+rows-1
    std::size_t j0 = 0;
    if (rows == R)
      for (; j0 + W <= jend || (j0 < jend && j0 + W <= T); j0 += W) {
        B acc[R] = {B(S(0)), B(S(0)), B(S(0)), B(S(0))};
        for (std::size_t d = 0; d < D; ++d) {
          const B bv = B::load_unaligned(bt + d * T + j0);
          for (std::size_t r = 0; r < R; ++r) acc[r] = xsimd::fma(B(a[(i0 + r) * lda + d]), bv, acc[r]);
        }
        for (std::size_t r = 0; r < R; ++r) acc[r].store_unaligned(out + (i0 + r) * T + j0);
      }
    for (std::size_t r = 0; r < rows; ++r)  // what is left: short last tile, or keys past the last full vector
      for (std::size_t j = j0; j < jend; ++j) {
        S s = 0;
        for (std::size_t d = 0; d < D; ++d) s = std::fma(a[(i0 + r) * lda + d], bt[d * T + j], s);
        out[(i0 + r) * T + j] = s;
      }
  }
}

// out[i, :] = alpha * sum_j w(i, j) m[j, :] with w(i, j) = w[i, j] (lower: j <= i, w zero above its
// diagonal) or w(i, j) = w[j, i] (transposed: j >= i, w zero above its diagonal); w is [T,T] row-major,
// m and out rows have strides ldm and ldo. A tile of rows sums over the union of its rows' ranges, so
// the zeros outside each row's own range must really be there.
template <class S, std::size_t V, bool Transposed>
void weights_by_rows_simd(const S* w, const S* m, std::size_t ldm, std::size_t T, S alpha, S* out, std::size_t ldo) {
  constexpr bool lower = !Transposed;
  auto weight = [w, T](std::size_t i, std::size_t j) { return Transposed ? w[j * T + i] : w[i * T + j]; };
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  std::size_t i0 = 0;
  for (; i0 + R <= T; i0 += R) {
    const std::size_t lo = lower ? 0 : i0, hi = lower ? i0 + R : T;
    B acc[R][V];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < V; ++c) acc[r][c] = B(S(0));
    for (std::size_t j = lo; j < hi; ++j) {
      B mv[V];
      for (std::size_t c = 0; c < V; ++c) mv[c] = B::load_unaligned(m + j * ldm + c * W);
      for (std::size_t r = 0; r < R; ++r) {
        const B wv(weight(i0 + r, j));
        for (std::size_t c = 0; c < V; ++c) acc[r][c] = xsimd::fma(wv, mv[c], acc[r][c]);
      }
    }
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < V; ++c) (acc[r][c] * B(alpha)).store_unaligned(out + (i0 + r) * ldo + c * W);
  }
  for (; i0 < T; ++i0) {  // last rows, one at a time
    const std::size_t lo = lower ? 0 : i0, hi = lower ? i0 + 1 : T;
    B acc[V];
    for (std::size_t c = 0; c < V; ++c) acc[c] = B(S(0));
    for (std::size_t j = lo; j < hi; ++j)
      for (std::size_t c = 0; c < V; ++c)
        acc[c] = xsimd::fma(B(weight(i0, j)), B::load_unaligned(m + j * ldm + c * W), acc[c]);
    for (std::size_t c = 0; c < V; ++c) (acc[c] * B(alpha)).store_unaligned(out + i0 * ldo + c * W);
  }
}

template <class S, bool Transposed>
void weights_by_rows(const S* w, const S* m, std::size_t ldm, std::size_t T, std::size_t D, S alpha, S* out,
                     std::size_t ldo) {
  constexpr std::size_t W = xsimd::batch<S>::size;
  switch (D % W == 0 ? D / W : 0) {
    case 1: return weights_by_rows_simd<S, 1, Transposed>(w, m, ldm, T, alpha, out, ldo);
    case 2: return weights_by_rows_simd<S, 2, Transposed>(w, m, ldm, T, alpha, out, ldo);
    case 4: return weights_by_rows_simd<S, 4, Transposed>(w, m, ldm, T, alpha, out, ldo);
    default: break;
  }
  for (std::size_t i = 0; i < T; ++i) {
    S* oi = out + i * ldo;
    std::fill(oi, oi + D, S(0));
    const std::size_t lo = Transposed ? i : 0, hi = Transposed ? T : i + 1;
    for (std::size_t j = lo; j < hi; ++j) {
      const S wij = Transposed ? w[j * T + i] : w[i * T + j];
      for (std::size_t d = 0; d < D; ++d) oi[d] = std::fma(wij, m[j * ldm + d], oi[d]);
    }
    for (std::size_t d = 0; d < D; ++d) oi[d] *= alpha;
  }
}

// row[0..n) = exp(row - max) / sum, row[n..T) = 0
template <class S>
void softmax_prefix(S* row, std::size_t n, std::size_t T) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const S mx = row_max(row, n);
  std::size_t j = 0;
  B sum(S(0));
  for (j = 0; j + W <= n; j += W) {
    const B e = xsimd::exp(B::load_unaligned(row + j) - B(mx));
    e.store_unaligned(row + j);
    sum += e;
  }
  S total = xsimd::hadd(sum);
  for (; j < n; ++j) {
    row[j] = std::exp(row[j] - mx);
    total += row[j];
  }
  const S inv = S(1) / total;
  for (j = 0; j < n; ++j) row[j] *= inv;
  std::fill(row + n, row + T, S(0));
}

}  // namespace

std::size_t scratch_size(std::size_t T, std::size_t D) { return D * T + T * T; }

template <class S>
void scores_softmax(const S* q, const S* k, std::size_t ld, std::size_t T, std::size_t D, S scale, S* p, S* scratch) {
  S* kt = scratch;  // [D,T]
  transpose_into(k, ld, T, D, kt);
  rows_by_transposed(q, ld, kt, T, D, p);
  for (std::size_t i = 0; i < T; ++i) {
    S* row = p + i * T;
    for (std::size_t j = 0; j <= i; ++j) row[j] *= scale;
    softmax_prefix(row, i + 1, T);
  }
}

template <class S>
void weighted_sum(const S* pd, const S* v, std::size_t ld, std::size_t T, std::size_t D, S* y, std::size_t ldy) {
  weights_by_rows<S, false>(pd, v, ld, T, D, S(1), y, ldy);
}

template <class S>
void backward(const S* q, const S* k, const S* v, std::size_t ld, const S* p, const S* pd, bool dropout, S keep_scale,
              const S* dy, std::size_t ldy, std::size_t T, std::size_t D, S scale, S* dq, S* dk, S* dv, S* scratch) {
  S* bt = scratch;         // [D,T]: v transposed
  S* ds = bt + D * T;      // [T,T]: dp, then ds
  // dv = pd^T dy: rows j of dv sum over queries i >= j
  weights_by_rows<S, true>(pd, dy, ldy, T, D, S(1), dv, ld);
  // dpd = dy v^T (lower triangle)
  transpose_into(v, ld, T, D, bt);
  rows_by_transposed(dy, ldy, bt, T, D, ds);
  for (std::size_t i = 0; i < T; ++i) {
    S* g = ds + i * T;
    const S* pr = p + i * T;
    const std::size_t n = i + 1;
    if (dropout) {  // dp = dpd * M/(1-p): pd/p is M/(1-p) where p > 0; where p == 0 the softmax backward gives 0
      const S* pdr = pd + i * T;
      for (std::size_t j = 0; j < n; ++j) g[j] = pdr[j] == S(0) ? S(0) : g[j] * keep_scale;
    }
    const S gp = row_dot(g, pr, n);  // ds = p * (dp - sum_j dp_j p_j)
    for (std::size_t j = 0; j < n; ++j) g[j] = pr[j] * (g[j] - gp);
    std::fill(g + n, g + T, S(0));
  }
  // dq = scale ds k;  dk = scale ds^T q
  weights_by_rows<S, false>(ds, k, ld, T, D, scale, dq, ld);
  weights_by_rows<S, true>(ds, q, ld, T, D, scale, dk, ld);
}

#define TF_INSTANTIATE(S)                                                                                          \
  template void scores_softmax<S>(const S*, const S*, std::size_t, std::size_t, std::size_t, S, S*, S*);          \
  template void weighted_sum<S>(const S*, const S*, std::size_t, std::size_t, std::size_t, S*, std::size_t);      \
  template void backward<S>(const S*, const S*, const S*, std::size_t, const S*, const S*, bool, S, const S*,     \
                            std::size_t, std::size_t, std::size_t, S, S*, S*, S*, S*);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf::kernels::attention_head
