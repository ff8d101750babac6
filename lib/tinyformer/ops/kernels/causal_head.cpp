#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/causal_head.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/ops/kernels/rows.hpp"

namespace TF_KERNEL_NAMESPACE::attention_head {

namespace {

// Register tiles: RI rows of the output by NC SIMD vectors of its columns (8 x 32 floats with AVX-512). The
// accumulators, the column vectors and the broadcast row value must fit the vector registers, or the compiler keeps
// some accumulators on the stack inside the inner loop: 32 registers with AVX-512 (8 x 2 + 2 + 1), 16 without
// (6 x 2 + 2 + 1). A tile's shape only groups rows; every sum still runs in the same order.
constexpr std::size_t kRegisters = XSIMD_WITH_AVX512F ? 32 : 16;
constexpr std::size_t NC = 2;
constexpr std::size_t RI = kRegisters == 32 ? 8 : 6;

template <class S>
constexpr std::size_t block() {
  return NC * xsimd::batch<S>::size;
}

// Columns of the transposed copy below: T rounded up to whole column blocks.
template <class S>
std::size_t padded(std::size_t T) {
  return (T + block<S>() - 1) / block<S>() * block<S>();
}

// dst [D,Tp] = src [T,D] (row stride ld) transposed, columns T..Tp zero
template <class S>
void transpose_into(const S* src, std::size_t ld, std::size_t T, std::size_t D, S* dst) {
  const std::size_t Tp = padded<S>(T);
  for (std::size_t d = 0; d < D; ++d) std::fill(dst + d * Tp + T, dst + (d + 1) * Tp, S(0));
  for (std::size_t j = 0; j < T; ++j)
    for (std::size_t d = 0; d < D; ++d) dst[d * Tp + j] = src[j * ld + d];
}

// Rows i0 .. i0+Rows-1 of out [T,T]: out[i, j] = alpha * sum_d a[i, d] bt[d, j] (the sum in d order) for the
// columns of every block that starts before the tile's last key i0+Rows-1: the lower triangle and the
// overhang of the diagonal block, which the caller overwrites. a has row stride lda; bt is [D,Tp].
template <class S, std::size_t Rows>
void product_tile(const S* a, std::size_t lda, const S* bt, std::size_t T, std::size_t D, S alpha, std::size_t i0,
                  S* out) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const std::size_t Tp = padded<S>(T);
  for (std::size_t j0 = 0; j0 < i0 + Rows; j0 += NC * W) {
    B acc[Rows][NC];
    for (std::size_t r = 0; r < Rows; ++r)
      for (std::size_t c = 0; c < NC; ++c) acc[r][c] = B(S(0));
    for (std::size_t d = 0; d < D; ++d) {
      B bv[NC];
      for (std::size_t c = 0; c < NC; ++c) bv[c] = B::load_unaligned(bt + d * Tp + j0 + c * W);
      for (std::size_t r = 0; r < Rows; ++r) {
        const B av(a[(i0 + r) * lda + d]);
        for (std::size_t c = 0; c < NC; ++c) acc[r][c] = xsimd::fma(av, bv[c], acc[r][c]);
      }
    }
    const std::size_t n = std::min(NC * W, T - j0);
    for (std::size_t r = 0; r < Rows; ++r) {
      S* o = out + (i0 + r) * T + j0;
      if (n == NC * W) {
        for (std::size_t c = 0; c < NC; ++c) (acc[r][c] * B(alpha)).store_unaligned(o + c * W);
      } else {
        alignas(64) S tile[NC * W];
        for (std::size_t c = 0; c < NC; ++c) (acc[r][c] * B(alpha)).store_aligned(tile + c * W);
        std::copy(tile, tile + n, o);
      }
    }
  }
}

template <class S>
void rows_by_transposed(const S* a, std::size_t lda, const S* bt, std::size_t T, std::size_t D, S alpha, S* out) {
  std::size_t i0 = 0;
  for (; i0 + RI <= T; i0 += RI) product_tile<S, RI>(a, lda, bt, T, D, alpha, i0, out);
  for (; i0 < T; ++i0) product_tile<S, 1>(a, lda, bt, T, D, alpha, i0, out);
}

// Rows i0 .. i0+Rows-1 of out: out[i, :] = alpha * sum_j w(i, j) m[j, :] with w(i, j) = w[i, j] (lower:
// j <= i, w zero above its diagonal) or w(i, j) = w[j, i] (transposed: j >= i, w zero above its diagonal);
// w is [T,T] row-major, m and out rows have strides ldm and ldo, D = V vectors. A tile sums over the union of
// its rows' ranges, so the zeros outside each row's own range must really be there.
template <class S, std::size_t V, std::size_t Rows, bool Transposed>
void weights_tile(const S* w, const S* m, std::size_t ldm, std::size_t T, S alpha, std::size_t i0, S* out,
                  std::size_t ldo) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const std::size_t lo = Transposed ? i0 : 0, hi = Transposed ? T : i0 + Rows;
  B acc[Rows][V];
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t c = 0; c < V; ++c) acc[r][c] = B(S(0));
  for (std::size_t j = lo; j < hi; ++j) {
    B mv[V];
    for (std::size_t c = 0; c < V; ++c) mv[c] = B::load_unaligned(m + j * ldm + c * W);
    for (std::size_t r = 0; r < Rows; ++r) {
      const B wv(Transposed ? w[j * T + i0 + r] : w[(i0 + r) * T + j]);
      for (std::size_t c = 0; c < V; ++c) acc[r][c] = xsimd::fma(wv, mv[c], acc[r][c]);
    }
  }
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t c = 0; c < V; ++c) (acc[r][c] * B(alpha)).store_unaligned(out + (i0 + r) * ldo + c * W);
}

template <class S, std::size_t V, bool Transposed>
void weights_by_rows_simd(const S* w, const S* m, std::size_t ldm, std::size_t T, S alpha, S* out, std::size_t ldo) {
  // Rows x V accumulators, V column vectors (or loads folded into the multiply-adds) and one broadcast value
  constexpr std::size_t Rows = kRegisters == 32 ? (V >= 4 ? 4 : 8) : (V >= 4 ? 3 : V == 2 ? 6 : 8);
  std::size_t i0 = 0;
  for (; i0 + Rows <= T; i0 += Rows) weights_tile<S, V, Rows, Transposed>(w, m, ldm, T, alpha, i0, out, ldo);
  for (; i0 < T; ++i0) weights_tile<S, V, 1, Transposed>(w, m, ldm, T, alpha, i0, out, ldo);
}

template <class S, bool Transposed>
void weights_by_rows(const S* w, const S* m, std::size_t ldm, std::size_t T, std::size_t D, S alpha, S* out,
                     std::size_t ldo) {
  constexpr std::size_t W = xsimd::batch<S>::size;
  switch (D % W == 0 ? D / W : 0) {
    case 1:
      return weights_by_rows_simd<S, 1, Transposed>(w, m, ldm, T, alpha, out, ldo);
    case 2:
      return weights_by_rows_simd<S, 2, Transposed>(w, m, ldm, T, alpha, out, ldo);
    case 4:
      return weights_by_rows_simd<S, 4, Transposed>(w, m, ldm, T, alpha, out, ldo);
    default:
      break;
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

// row[0..n) = exp(row - max) / sum, row[n..T) = 0. A row's last partial vector is taken whole when it fits in
// the row (its lanes past n masked to zero): no scalar exp.
template <class S>
void softmax_prefix(S* row, std::size_t n, std::size_t T) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const std::size_t full = n / W * W;
  const bool tail = full < n && full + W <= T;  // else the rest is done one value at a time
  const std::size_t vend = tail ? full + W : full;
  alignas(64) S lane_index[W];
  for (std::size_t l = 0; l < W; ++l) lane_index[l] = static_cast<S>(l);
  const auto in_row = B::load_aligned(lane_index) < B(static_cast<S>(n - full));
  S mx = row_max(row, n);
  B sum(S(0));
  for (std::size_t j = 0; j < full; j += W) {
    const B e = xsimd::exp(B::load_unaligned(row + j) - B(mx));
    e.store_unaligned(row + j);
    sum += e;
  }
  if (tail) {
    const B e = xsimd::select(in_row, xsimd::exp(B::load_unaligned(row + full) - B(mx)), B(S(0)));
    e.store_unaligned(row + full);
    sum += e;
  }
  S total = xsimd::hadd(sum);
  for (std::size_t j = vend; j < n; ++j) {
    row[j] = std::exp(row[j] - mx);
    total += row[j];
  }
  const B inv(S(1) / total);
  for (std::size_t j = 0; j < vend; j += W) (B::load_unaligned(row + j) * inv).store_unaligned(row + j);
  for (std::size_t j = vend; j < n; ++j) row[j] *= inv.get(0);
  std::fill(row + std::max(n, vend), row + T, S(0));
}

}  // namespace

// K or V transposed into [D,Tp] (Tp: T padded to whole column blocks), then a T x T block, then a [T,D] copy
template <class S>
std::size_t scratch_size(std::size_t T, std::size_t D) {
  return D * padded<S>(T) + T * T + T * D;
}

namespace {
// m's T rows of D (row stride ld) as one contiguous [T,D] block in buf, so that the loops over rows j read
// consecutive memory rather than one row every 3C values (a new page every few rows).
template <class S>
const S* contiguous(const S* m, std::size_t ld, std::size_t T, std::size_t D, S* buf) {
  if (ld == D) return m;
  for (std::size_t j = 0; j < T; ++j) std::copy(m + j * ld, m + j * ld + D, buf + j * D);
  return buf;
}

// Where scratch_size's three parts start: [D,Tp] a transposed copy, [T,T] ds, [T,D] a contiguous copy.
template <class S>
struct Scratch {
  S *transposed, *square, *rows;
  Scratch(S* s, std::size_t T, std::size_t D) : transposed(s), square(s + D * padded<S>(T)), rows(square + T * T) {}
};
}  // namespace

template <class S>
void softmax_row(S* row, std::size_t n, std::size_t T) {
  softmax_prefix(row, n, T);
}

template <class S>
void scores_softmax(const S* q, const S* k, std::size_t ld, std::size_t T, std::size_t D, S scale, S* p, S* scratch) {
  S* kt = Scratch<S>(scratch, T, D).transposed;  // [D,Tp]
  transpose_into(k, ld, T, D, kt);
  rows_by_transposed(q, ld, kt, T, D, scale, p);
  for (std::size_t i = 0; i < T; ++i) softmax_prefix(p + i * T, i + 1, T);
}

template <class S>
void weighted_sum(const S* pd, const S* v, std::size_t ld, std::size_t T, std::size_t D, S* y, std::size_t ldy,
                  S* scratch) {
  const S* vc = contiguous(v, ld, T, D, Scratch<S>(scratch, T, D).rows);
  weights_by_rows<S, false>(pd, vc, D, T, D, S(1), y, ldy);
}

template <class S>
void backward(const S* q, const S* k, const S* v, std::size_t ld, const S* p, const S* pd, bool dropout, S keep_scale,
              const S* dy, std::size_t ldy, std::size_t T, std::size_t D, S scale, S* dq, S* dk, S* dv, S* scratch) {
  const Scratch<S> buf(scratch, T, D);
  S* bt = buf.transposed;  // [D,Tp]: v transposed
  S* ds = buf.square;      // [T,T]: dp, then ds
  const S* dyc = contiguous(dy, ldy, T, D, buf.rows);
  // dv = pd^T dy: rows j of dv sum over queries i >= j
  weights_by_rows<S, true>(pd, dyc, D, T, D, S(1), dv, ld);
  // dpd = dy v^T (lower triangle)
  transpose_into(v, ld, T, D, bt);
  rows_by_transposed(dyc, D, bt, T, D, S(1), ds);
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
  weights_by_rows<S, false>(ds, contiguous(k, ld, T, D, buf.rows), D, T, D, scale, dq, ld);
  weights_by_rows<S, true>(ds, contiguous(q, ld, T, D, buf.rows), D, T, D, scale, dk, ld);
}

TF_KERNEL_INSTANTIATE(TF_CAUSAL_HEAD_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE::attention_head
