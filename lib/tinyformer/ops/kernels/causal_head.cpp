#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/causal_head.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace TF_KERNEL_NAMESPACE::attention_head {

namespace {

// Register tiles: RI rows of the output by NC SIMD vectors of its columns (8 x 32 floats with AVX-512). The
// accumulators, the column vectors and the broadcast row value must fit the vector registers, or the compiler keeps
// some accumulators on the stack inside the inner loop: 32 registers with AVX-512 (8 x 2 + 2 + 1), 16 without
// (6 x 2 + 2 + 1). A tile's shape only groups rows; every sum still runs in the same order.
constexpr std::size_t kRegisters = XSIMD_WITH_AVX512F ? 32 : 16;
constexpr std::size_t NC = 2;
constexpr std::size_t RI = kRegisters == 32 ? 8 : 6;
// Query rows a pass takes at a time: their scores, weights and gradients ([kBlock,T] each, 96 KB at T 1024) stay in
// the L2 cache between the products that use them. A multiple of every tile's rows (8, 6, 4, 3).
constexpr std::size_t kBlock = 24;
static_assert(kBlock % RI == 0);

template <class S>
constexpr std::size_t block() {
  return NC * xsimd::batch<S>::size;
}

// lower_rows and rank_rows take a head of V vectors in groups of G of its columns (G = V when it is at most 4 with 32
// registers, 2 with 16), each tile Rows (or keys) by G vectors: the Rows x G accumulators, the G vectors of m and one
// broadcast value fit the registers, so that m's vectors are loaded once a step rather than once a row (a 3 x 4 tile
// with 16 registers loaded two of its four again for every row, and ran 15% slower than two 6 x 2 tiles, medium's
// head with AVX2 kernels). Rows divides kBlock, so lower_rows' tiles fall where they would over the whole head; the
// groups only split the columns, and every sum keeps its order.
template <std::size_t V>
constexpr std::size_t group_vectors() {
  return std::min<std::size_t>(V, kRegisters == 32 ? 4 : 2);
}
template <std::size_t G>
constexpr std::size_t tile_rows() {
  return kRegisters == 32 ? (G >= 4 ? 4 : 8) : (G == 2 ? 6 : 8);
}
static_assert(kBlock % tile_rows<1>() == 0 && kBlock % tile_rows<2>() == 0 && kBlock % tile_rows<4>() == 0);

// A head's q, k, v and dy are D values of rows (H+2Hkv)D or C values apart, a few lines a row, and the loops that copy
// them go down the rows: the hardware's prefetchers do not follow that walk, so each row's lines were waited for.
// Those loops ask for the row kAheadRows ahead (16: medium's backward with AVX2 kernels took 21.5 ms a step against
// 23.9 ms without, 8 and 32 within 0.5 ms).
constexpr std::size_t kAheadRows = 16;

// Columns of the transposed copy below: T rounded up to whole column blocks.
template <class S>
std::size_t padded(std::size_t T) {
  return (T + block<S>() - 1) / block<S>() * block<S>();
}

// src [T,D] (row stride ld) transposed into panels of block() columns: dst[j0 D + d block() + j - j0] = src[j, d] for
// the panel of columns j0 .. j0+block()-1, columns T..Tp zero. A tile's product reads one panel (D block() values)
// from start to end: rows of a [D,Tp] array would be T values apart, and at T 1024 (4 KB) every row of a block
// falls into the same L1 cache set.
template <class S>
void transpose_into(const S* src, std::size_t ld, std::size_t T, std::size_t D, S* dst) {
  constexpr std::size_t BW = block<S>();
  std::fill(dst + (T / BW) * BW * D, dst + padded<S>(T) * D, S(0));
  for (std::size_t j = 0; j < T; ++j) {
    if (j + kAheadRows < T) prefetch(src + (j + kAheadRows) * ld, D * sizeof(S));
    for (std::size_t d = 0; d < D; ++d) dst[j / BW * BW * D + d * BW + j % BW] = src[j * ld + d];
  }
}

// Rows i0 .. i0+Rows-1 of alpha a bt, columns j0 .. j0+block()-1 (out: row i0, row stride T): out[i, j] = alpha *
// sum_d a[i, d] bt[d, j], the sum in d order. a has row stride lda; bt is in panels (transpose_into).
template <class S, std::size_t Rows>
void product_tile(const S* a, std::size_t lda, const S* bt, std::size_t T, std::size_t D, S alpha, std::size_t i0,
                  std::size_t j0, S* out) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const S* panel = bt + j0 * D;
  B acc[Rows][NC];
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t c = 0; c < NC; ++c) acc[r][c] = B(S(0));
  for (std::size_t d = 0; d < D; ++d) {
    B bv[NC];
    for (std::size_t c = 0; c < NC; ++c) bv[c] = B::load_unaligned(panel + d * NC * W + c * W);
    for (std::size_t r = 0; r < Rows; ++r) {
      const B av(a[(i0 + r) * lda + d]);
      for (std::size_t c = 0; c < NC; ++c) acc[r][c] = xsimd::fma(av, bv[c], acc[r][c]);
    }
  }
  const std::size_t n = std::min(NC * W, T - j0);
  for (std::size_t r = 0; r < Rows; ++r) {
    S* o = out + r * T + j0;
    if (n == NC * W) {
      for (std::size_t c = 0; c < NC; ++c) (acc[r][c] * B(alpha)).store_unaligned(o + c * W);
    } else {
      alignas(64) S tile[NC * W];
      for (std::size_t c = 0; c < NC; ++c) (acc[r][c] * B(alpha)).store_aligned(tile + c * W);
      std::copy(tile, tile + n, o);
    }
  }
}

// Rows [i0, i1) of alpha a b^T into out (row i0 first, row stride T), in tiles of RI rows from i0, each over the
// column panels that start before its last row's diagonal: the lower triangle and the overhang of the diagonal panel,
// which the caller overwrites. A panel at a time for all the block's tiles, so that it is read from L1.
template <class S>
void product_rows(const S* a, std::size_t lda, const S* bt, std::size_t T, std::size_t D, S alpha, std::size_t i0,
                  std::size_t i1, S* out) {
  for (std::size_t j0 = 0; j0 < i1; j0 += block<S>()) {
    std::size_t i = i0;
    for (; i + RI <= i1; i += RI)
      if (j0 < i + RI) product_tile<S, RI>(a, lda, bt, T, D, alpha, i, j0, out + (i - i0) * T);
    for (; i < i1; ++i)
      if (j0 <= i) product_tile<S, 1>(a, lda, bt, T, D, alpha, i, j0, out + (i - i0) * T);
  }
}

// Rows i0 .. i0+Rows-1 of alpha w m: out[i, :] = alpha * sum_j w[i, j] m[j, :], j over [0, i0+Rows) in order. w (from
// row i0, row stride T) is zero above its diagonal, and a tile sums over the union of its rows' ranges, so those zeros
// must really be there. m and out (from row i0) have row strides ldm and ldo; D = V vectors.
template <class S, std::size_t V, std::size_t Rows>
void lower_tile(const S* w, const S* m, std::size_t ldm, std::size_t T, S alpha, std::size_t i0, S* out,
                std::size_t ldo) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc[Rows][V];
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t c = 0; c < V; ++c) acc[r][c] = B(S(0));
  for (std::size_t j = 0; j < i0 + Rows; ++j) {
    B mv[V];
    for (std::size_t c = 0; c < V; ++c) mv[c] = B::load_unaligned(m + j * ldm + c * W);
    for (std::size_t r = 0; r < Rows; ++r) {
      const B wv(w[r * T + j]);
      for (std::size_t c = 0; c < V; ++c) acc[r][c] = xsimd::fma(wv, mv[c], acc[r][c]);
    }
  }
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t c = 0; c < V; ++c) (acc[r][c] * B(alpha)).store_unaligned(out + r * ldo + c * W);
}

// out[j, :] += sum_i w[i, j] m[i, :] for the keys j = j0 .. j0+Keys-1, over the query rows i in [lo, hi) in order
// (w and m from row i0, row strides T and ldm; out rows have stride ldo; D = V vectors). The keys' sums stay in
// registers over the rows. A row before a key's diagonal adds its zero (+0: a sum that has had only zeros stays +0,
// so it does not matter where a key's sum starts).
template <class S, std::size_t V, std::size_t Keys>
void rank_tile(const S* w, const S* m, std::size_t ldm, std::size_t T, std::size_t i0, std::size_t lo, std::size_t hi,
               std::size_t j0, S* out, std::size_t ldo) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc[Keys][V];
  for (std::size_t k = 0; k < Keys; ++k)
    for (std::size_t c = 0; c < V; ++c) acc[k][c] = B::load_unaligned(out + (j0 + k) * ldo + c * W);
  for (std::size_t i = lo; i < hi; ++i) {
    B mv[V];
    for (std::size_t c = 0; c < V; ++c) mv[c] = B::load_unaligned(m + (i - i0) * ldm + c * W);
    for (std::size_t k = 0; k < Keys; ++k) {
      const B wv(w[(i - i0) * T + j0 + k]);
      for (std::size_t c = 0; c < V; ++c) acc[k][c] = xsimd::fma(wv, mv[c], acc[k][c]);
    }
  }
  for (std::size_t k = 0; k < Keys; ++k)
    for (std::size_t c = 0; c < V; ++c) acc[k][c].store_unaligned(out + (j0 + k) * ldo + c * W);
}

// f(V) for a head of V = 1, 2, 4 or 8 SIMD vectors, else f(0): plain loops
template <class S, class F>
void by_vectors(std::size_t D, F&& f) {
  constexpr std::size_t W = xsimd::batch<S>::size;
  switch (D % W == 0 ? D / W : 0) {
    case 1:
      return f(std::integral_constant<std::size_t, 1>{});
    case 2:
      return f(std::integral_constant<std::size_t, 2>{});
    case 4:
      return f(std::integral_constant<std::size_t, 4>{});
    case 8:
      return f(std::integral_constant<std::size_t, 8>{});
    default:
      return f(std::integral_constant<std::size_t, 0>{});
  }
}

// Rows [i0, i1) of out = alpha w m (w and out from row i0): row i sums j over [0, i] in order (a SIMD tile also adds
// the zeros up to its last row's diagonal).
template <class S>
void lower_rows(const S* w, const S* m, std::size_t ldm, std::size_t T, std::size_t D, S alpha, std::size_t i0,
                std::size_t i1, S* out, std::size_t ldo) {
  by_vectors<S>(D, [&](auto vectors) {
    constexpr std::size_t V = decltype(vectors)::value;
    if constexpr (V == 0) {
      for (std::size_t i = i0; i < i1; ++i) {
        const S* wi = w + (i - i0) * T;
        S* oi = out + (i - i0) * ldo;
        std::fill(oi, oi + D, S(0));
        for (std::size_t j = 0; j <= i; ++j)
          for (std::size_t d = 0; d < D; ++d) oi[d] = std::fma(wi[j], m[j * ldm + d], oi[d]);
        for (std::size_t d = 0; d < D; ++d) oi[d] *= alpha;
      }
    } else {
      constexpr std::size_t G = group_vectors<V>(), Rows = tile_rows<G>(), W = xsimd::batch<S>::size;
      std::size_t i = i0;
      for (; i + Rows <= i1; i += Rows)
        for (std::size_t g = 0; g < V; g += G)
          lower_tile<S, G, Rows>(w + (i - i0) * T, m + g * W, ldm, T, alpha, i, out + (i - i0) * ldo + g * W, ldo);
      for (; i < i1; ++i)
        for (std::size_t g = 0; g < V; g += G)
          lower_tile<S, G, 1>(w + (i - i0) * T, m + g * W, ldm, T, alpha, i, out + (i - i0) * ldo + g * W, ldo);
    }
  });
}

// out[j, :] += sum_i w[i, j] m[i, :] over the query rows i in [i0, i1), in order, for the keys j <= i (w and m from
// row i0; w zero above its diagonal up to column i1).
template <class S>
void rank_rows(const S* w, const S* m, std::size_t ldm, std::size_t T, std::size_t D, std::size_t i0, std::size_t i1,
               S* out, std::size_t ldo) {
  by_vectors<S>(D, [&](auto vectors) {
    constexpr std::size_t V = decltype(vectors)::value;
    if constexpr (V == 0) {
      for (std::size_t i = i0; i < i1; ++i) {
        const S *wi = w + (i - i0) * T, *mi = m + (i - i0) * ldm;
        for (std::size_t j = 0; j <= i; ++j)
          for (std::size_t d = 0; d < D; ++d) out[j * ldo + d] = std::fma(wi[j], mi[d], out[j * ldo + d]);
      }
    } else {
      constexpr std::size_t G = group_vectors<V>(), Keys = tile_rows<G>(), W = xsimd::batch<S>::size;
      std::size_t j = 0;
      for (; j + Keys <= i1; j += Keys)
        for (std::size_t g = 0; g < V; g += G)
          rank_tile<S, G, Keys>(w, m + g * W, ldm, T, i0, std::max(i0, j), i1, j, out + g * W, ldo);
      for (; j < i1; ++j)
        for (std::size_t g = 0; g < V; g += G)
          rank_tile<S, G, 1>(w, m + g * W, ldm, T, i0, std::max(i0, j), i1, j, out + g * W, ldo);
    }
  });
}

// A row prefix [0, n) of a row of T values in SIMD vectors: `full` values in whole vectors, then, when it fits in the
// row, one more vector whose lanes past n are masked (`tail`, `in_row`); values from `vend` on (only when the last
// vector does not fit) are taken one at a time. A masked vector reads past n, never past the row.
template <class S>
struct Prefix {
  using B = xsimd::batch<S>;
  static constexpr std::size_t W = B::size;
  std::size_t full;
  bool tail;
  std::size_t vend;
  xsimd::batch_bool<S> in_row;
  Prefix(std::size_t n, std::size_t T)
      : full(n / W * W), tail(full < n && full + W <= T), vend(tail ? full + W : full), in_row(lanes_below(n - full)) {}
  static xsimd::batch_bool<S> lanes_below(std::size_t count) {
    alignas(64) S lane_index[W];
    for (std::size_t l = 0; l < W; ++l) lane_index[l] = static_cast<S>(l);
    return B::load_aligned(lane_index) < B(static_cast<S>(count));
  }
};

// max_j row[j] over [0, n), n >= 1: whole vectors and the masked last one, then any scalar rest (exact in any order)
template <class S>
S prefix_max(const S* row, std::size_t n, const Prefix<S>& at) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  constexpr S kNegInf = -std::numeric_limits<S>::infinity();
  S mx = row[0];
  if (at.vend > 0) {
    B m(kNegInf);
    for (std::size_t j = 0; j < at.full; j += W) m = xsimd::max(m, B::load_unaligned(row + j));
    if (at.tail) m = xsimd::max(m, xsimd::select(at.in_row, B::load_unaligned(row + at.full), B(kNegInf)));
    alignas(64) S lanes[W];
    m.store_aligned(lanes);
    mx = *std::max_element(lanes, lanes + W);
  }
  for (std::size_t j = at.vend; j < n; ++j) mx = std::max(mx, row[j]);
  return mx;
}

// sum_j a[j] b[j] over [0, n): SIMD lanes over the whole vectors and the masked last one, then the lanes, then any
// scalar rest, in that order
template <class S>
S prefix_dot(const S* a, const S* b, std::size_t n, const Prefix<S>& at) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc(S(0));
  for (std::size_t j = 0; j < at.full; j += W)
    acc = xsimd::fma(B::load_unaligned(a + j), B::load_unaligned(b + j), acc);
  if (at.tail)
    acc = xsimd::fma(xsimd::select(at.in_row, B::load_unaligned(a + at.full), B(S(0))),
                     xsimd::select(at.in_row, B::load_unaligned(b + at.full), B(S(0))), acc);
  S total = xsimd::hadd(acc);
  for (std::size_t j = at.vend; j < n; ++j) total = std::fma(a[j], b[j], total);
  return total;
}

// row[0..n) = exp(row - max) / sum, row[n..zeros) = 0 (the row holds T values). A row's last partial vector is taken
// whole when it fits in the row (its lanes past n masked to zero): no scalar exp.
template <class S>
void softmax_prefix(S* row, std::size_t n, std::size_t T, std::size_t zeros) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const Prefix<S> at(n, T);
  const S mx = prefix_max(row, n, at);
  B sum(S(0));
  for (std::size_t j = 0; j < at.full; j += W) {
    const B e = xsimd::exp(B::load_unaligned(row + j) - B(mx));
    e.store_unaligned(row + j);
    sum += e;
  }
  if (at.tail) {
    const B e = xsimd::select(at.in_row, xsimd::exp(B::load_unaligned(row + at.full) - B(mx)), B(S(0)));
    e.store_unaligned(row + at.full);
    sum += e;
  }
  S total = xsimd::hadd(sum);
  for (std::size_t j = at.vend; j < n; ++j) {
    row[j] = std::exp(row[j] - mx);
    total += row[j];
  }
  const B inv(S(1) / total);
  for (std::size_t j = 0; j < at.vend; j += W) (B::load_unaligned(row + j) * inv).store_unaligned(row + j);
  for (std::size_t j = at.vend; j < n; ++j) row[j] *= inv.get(0);
  std::fill(row + std::max(n, at.vend), row + std::max({n, at.vend, zeros}), S(0));
}

// The softmax backward of one row of the block, in place over the row's gradient g (row stride T):
// g[j] = p[j] (g[j] - sum_k g[k] p[k]) for j < n, and zeros on to `zeros`. With dropout, g first becomes the gradient
// before the mask: g[j] keep_scale where the dropped weight pd[j] is not 0, else 0.
template <class S>
void softmax_backward_prefix(S* g, const S* p, const S* pd, bool dropout, S keep_scale, std::size_t n, std::size_t T,
                             std::size_t zeros) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const Prefix<S> at(n, T);
  if (dropout)  // pd/p is M/(1-p) where p > 0; where p == 0 the softmax backward gives 0
    for (std::size_t j = 0; j < n; ++j) g[j] = pd[j] == S(0) ? S(0) : g[j] * keep_scale;
  const S gp = prefix_dot(g, p, n, at);
  const B gpv(gp);
  for (std::size_t j = 0; j < at.full; j += W)
    (B::load_unaligned(p + j) * (B::load_unaligned(g + j) - gpv)).store_unaligned(g + j);
  if (at.tail)
    xsimd::select(at.in_row, B::load_unaligned(p + at.full) * (B::load_unaligned(g + at.full) - gpv), B(S(0)))
        .store_unaligned(g + at.full);
  for (std::size_t j = at.vend; j < n; ++j) g[j] = p[j] * (g[j] - gp);
  std::fill(g + std::max(n, at.vend), g + std::max({n, at.vend, zeros}), S(0));
}

// Where scratch_size's parts start: k and v transposed (D Tp values each, Tp: T padded to whole column blocks);
// contiguous copies of k, q, v and dy and the sums dk and dv ([T,D] each); three blocks of rows ([kBlock,T] each).
template <class S>
struct Scratch {
  S *kt, *vt, *kc, *qc, *vc, *dyc, *dk, *dv, *p, *pd, *ds;
  Scratch(S* s, std::size_t T, std::size_t D) {
    const std::size_t transposed = D * padded<S>(T), rows = T * D, block = kBlock * T;
    for (S** part : {&kt, &vt}) *part = std::exchange(s, s + transposed);
    for (S** part : {&kc, &qc, &vc, &dyc, &dk, &dv}) *part = std::exchange(s, s + rows);
    for (S** part : {&p, &pd, &ds}) *part = std::exchange(s, s + block);
  }
};

// dst[0..n) = alpha src[0..n), whole vectors then one value at a time (alpha 1: an exact copy)
template <class S>
void copy_scaled(const S* src, std::size_t n, S alpha, S* dst) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  std::size_t d = 0;
  for (; d + W <= n; d += W) (B::load_unaligned(src + d) * B(alpha)).store_unaligned(dst + d);
  for (; d < n; ++d) dst[d] = src[d] * alpha;
}

// m's T rows of D (row stride ld) as one contiguous [T,D] block in buf, so that the loops over rows j read
// consecutive memory rather than one row every 3C values (a new page every few rows).
// Rows of a few vectors are copied in registers: std::copy would call memmove once a row (T calls a head).
template <class S>
const S* contiguous(const S* m, std::size_t ld, std::size_t T, std::size_t D, S* buf) {
  if (ld == D) return m;
  for (std::size_t j = 0; j < T; ++j) {
    if (j + kAheadRows < T) prefetch(m + (j + kAheadRows) * ld, D * sizeof(S));
    copy_scaled(m + j * ld, D, S(1), buf + j * D);
  }
  return buf;
}

// Rows [i0, i1) of P = softmax(mask(scale q k^T)) into p (row i0 first, row stride T); kt is k transposed. Columns
// [i1, T) are left as they are, kept P or not: the loops of a block never read past its last row's diagonal, and
// zeros to the row's end would double what a kept P writes to memory (medium's layer: 8 of 17 MB; the forward took
// 11% longer with them, one thread, AVX2 kernels).
template <class S>
void weights_rows(const S* q, std::size_t ld, const S* kt, std::size_t T, std::size_t D, S scale, std::size_t i0,
                  std::size_t i1, S* p) {
  product_rows(q, ld, kt, T, D, scale, i0, i1, p);
  for (std::size_t i = i0; i < i1; ++i) softmax_prefix(p + (i - i0) * T, i + 1, T, i1);
}

// Rows [i0, i1) of Pd = P * keep * keep_scale into pd (p, keep and pd from row i0), columns [0, i1)
template <class S>
void dropped_rows(const S* p, const std::uint8_t* keep, S keep_scale, std::size_t T, std::size_t i0, std::size_t i1,
                  S* pd) {
  for (std::size_t r = 0; r < i1 - i0; ++r)
    for (std::size_t j = 0; j < i1; ++j) pd[r * T + j] = keep[r * T + j] ? p[r * T + j] * keep_scale : S(0);
}
}  // namespace

template <class S>
std::size_t scratch_size(std::size_t T, std::size_t D) {
  return 2 * D * padded<S>(T) + 6 * T * D + 3 * kBlock * T;
}

template <class S>
void softmax_row(S* row, std::size_t n, std::size_t T) {
  softmax_prefix(row, n, T, T);
}

template <class S>
void forward(const S* q, const S* k, const S* v, std::size_t ld, std::size_t T, std::size_t D, S scale,
             const std::uint8_t* keep, S keep_scale, S* p, S* pd, S* y, std::size_t ldy, S* scratch) {
  const Scratch<S> buf(scratch, T, D);
  transpose_into(k, ld, T, D, buf.kt);
  const S* vc = contiguous(v, ld, T, D, buf.vc);
  for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
    const std::size_t i1 = std::min(T, i0 + kBlock);
    S* pr = p ? p + i0 * T : buf.p;
    weights_rows(q, ld, buf.kt, T, D, scale, i0, i1, pr);  // P
    const S* w = pr;
    if (keep) {  // Pd
      S* dr = pd ? pd + i0 * T : buf.pd;
      dropped_rows(pr, keep + i0 * T, keep_scale, T, i0, i1, dr);
      w = dr;
    }
    lower_rows(w, vc, D, T, D, S(1), i0, i1, y + i0 * ldy, ldy);  // y = Pd v
  }
}

template <class S>
void backward(const S* q, const S* k, const S* v, std::size_t ld, const S* p, const S* pd, const std::uint8_t* keep,
              S keep_scale, const S* dy, std::size_t ldy, std::size_t T, std::size_t D, S scale, S* dq, S* dk, S* dv,
              S* scratch) {
  const Scratch<S> buf(scratch, T, D);
  const bool dropout = pd || keep;
  if (!p) transpose_into(k, ld, T, D, buf.kt);
  transpose_into(v, ld, T, D, buf.vt);
  const S *kc = contiguous(k, ld, T, D, buf.kc), *qc = contiguous(q, ld, T, D, buf.qc);
  const S* dyc = contiguous(dy, ldy, T, D, buf.dyc);
  std::fill(buf.dk, buf.dk + T * D, S(0));
  std::fill(buf.dv, buf.dv + T * D, S(0));
  for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
    const std::size_t i1 = std::min(T, i0 + kBlock);
    const S* pr = p ? p + i0 * T : buf.p;
    const std::size_t next_end = std::min(T, i1 + kBlock);
    for (const S* kept : {p, pd})  // the next block's rows of a kept P and Pd, as far as that block reads them
      if (kept)
        for (std::size_t i = i1; i < next_end; ++i) prefetch(kept + i * T, next_end * sizeof(S));
    if (!p) weights_rows(q, ld, buf.kt, T, D, scale, i0, i1, buf.p);
    const S* pdr = pd ? pd + i0 * T : pr;
    if (!pd && keep) {
      dropped_rows(pr, keep + i0 * T, keep_scale, T, i0, i1, buf.pd);
      pdr = buf.pd;
    }
    S* ds = buf.ds;
    product_rows(dyc, D, buf.vt, T, D, S(1), i0, i1, ds);  // dpd = dy v^T (lower triangle)
    for (std::size_t i = i0; i < i1; ++i)  // ds = p * (dp - sum_j dp_j p_j), zeros as far as this block reads
      softmax_backward_prefix(ds + (i - i0) * T, pr + (i - i0) * T, pdr + (i - i0) * T, dropout, keep_scale, i + 1, T,
                              i1);
    // dv += pd^T dy (these queries), after the loop above has read the block's rows of P in order: a kept P comes
    // from memory, and the column walk would wait on it a line at a time
    rank_rows(pdr, dyc + i0 * D, D, T, D, i0, i1, buf.dv, D);
    lower_rows(ds, kc, D, T, D, scale, i0, i1, dq + i0 * ld, ld);  // dq = scale ds k
    rank_rows(ds, qc + i0 * D, D, T, D, i0, i1, buf.dk, D);        // dk += ds^T q (these queries), scaled below
  }
  for (std::size_t j = 0; j < T; ++j) {
    copy_scaled(buf.dk + j * D, D, scale, dk + j * ld);
    copy_scaled(buf.dv + j * D, D, S(1), dv + j * ld);
  }
}

template <class S>
void zero_above_diagonal(S* p, std::size_t T) {
  for (std::size_t i = 0; i + 1 < T; ++i) std::fill(p + i * T + i + 1, p + (i + 1) * T, S(0));
}

TF_KERNEL_INSTANTIATE(TF_CAUSAL_HEAD_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE::attention_head
