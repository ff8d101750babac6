#pragma once
// Row kernels shared by the code that works on the last axis (kernels/norms.cpp, kernels/softmax_rows.cpp,
// kernels/causal_head.cpp, ops/cached_attention.cpp): sums and dot products in SIMD lanes, then the lanes and the
// scalar tail in a fixed order, so a row's result never depends on how threads share the rows. A row is n contiguous
// values.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "tinyformer/tensor/parallel.hpp"

namespace tf::kernels {

// sum_j a[j]
template <class S>
S row_sum(const S* a, std::size_t n) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc(S(0));
  std::size_t j = 0;
  for (; j + W <= n; j += W) acc += B::load_unaligned(a + j);
  S total = xsimd::hadd(acc);
  for (; j < n; ++j) total += a[j];
  return total;
}

// sum_j a[j] b[j]
template <class S>
S row_dot(const S* a, const S* b, std::size_t n) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc(S(0));
  std::size_t j = 0;
  for (; j + W <= n; j += W) acc = xsimd::fma(B::load_unaligned(a + j), B::load_unaligned(b + j), acc);
  S total = xsimd::hadd(acc);
  for (; j < n; ++j) total = std::fma(a[j], b[j], total);
  return total;
}

// sum_j a[j] b[j] c[j]
template <class S>
S row_dot(const S* a, const S* b, const S* c, std::size_t n) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc(S(0));
  std::size_t j = 0;
  for (; j + W <= n; j += W)
    acc = xsimd::fma(B::load_unaligned(a + j) * B::load_unaligned(b + j), B::load_unaligned(c + j), acc);
  S total = xsimd::hadd(acc);
  for (; j < n; ++j) total = std::fma(a[j] * b[j], c[j], total);
  return total;
}

// sum_j (a[j] - mu)^2
template <class S>
S row_squared_deviation(const S* a, S mu, std::size_t n) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc(S(0));
  const B m(mu);
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    const B d = B::load_unaligned(a + j) - m;
    acc = xsimd::fma(d, d, acc);
  }
  S total = xsimd::hadd(acc);
  for (; j < n; ++j) total = std::fma(a[j] - mu, a[j] - mu, total);
  return total;
}

// The largest of a[0..n), n >= 1 (exact in any order, so SIMD lanes may take it).
template <class S>
S row_max(const S* a, std::size_t n) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  std::size_t j = 0;
  S mx = a[0];
  if (n >= W) {
    B m = B::load_unaligned(a);
    for (j = W; j + W <= n; j += W) m = xsimd::max(m, B::load_unaligned(a + j));
    alignas(64) S lanes[W];
    m.store_aligned(lanes);
    mx = *std::max_element(lanes, lanes + W);
  }
  for (; j < n; ++j) mx = std::max(mx, a[j]);
  return mx;
}

// Whether a[0..n) holds a NaN (SIMD lanes, then the scalar tail)
template <class S>
bool row_has_nan(const S* a, std::size_t n) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  xsimd::batch_bool<S> lanes(false);
  std::size_t j = 0;
  for (; j + W <= n; j += W) lanes = lanes || xsimd::isnan(B::load_unaligned(a + j));
  bool nan = xsimd::any(lanes);
  for (; j < n; ++j) nan = nan || std::isnan(a[j]);
  return nan;
}

// out[j] = x[j] - max_k x[k], the first step of a stable softmax: -inf entries stay -inf (exp gives 0).
// A row with a NaN, or with nothing above -inf, has no softmax (0/0): the whole row becomes NaN, as PyTorch
// gives, so that the loss and the trainer's non-finite check see it. Returns false for such a row.
template <class S>
bool shift_by_row_max(const S* x, S* out, std::size_t n) {
  constexpr S kNegInf = -std::numeric_limits<S>::infinity();
  const S m = n == 0 ? kNegInf : row_max(x, n);  // with a NaN in the row, whatever it is: the row is undefined
  const bool defined = !row_has_nan(x, n) && m != kNegInf;
  for (std::size_t j = 0; j < n; ++j) out[j] = defined ? x[j] - m : std::numeric_limits<S>::quiet_NaN();
  return defined;
}

// Walks R rows in parallel and sums K row-shaped terms over them: the parameter gradients of a row-wise op
// (a norm's dweight and dbias). Rows are cut into fixed chunks of 64; each chunk adds into partial rows of its
// own, and the partials are added in chunk order, so the sums do not depend on how threads share the chunks.
// body(r, partial) handles row r: it adds row r's terms into partial[k][0..C) (null when `sums` are null:
// no parameter gradient is wanted) and may write anything else of its own row, e.g. the input's gradient.
// sums[k] [C] are overwritten.
template <class S, std::size_t K, class Body>
void rows_with_column_sums(std::size_t R, std::size_t C, const std::array<S*, K>& sums, Body body) {
  constexpr std::size_t chunk = 64;
  const std::size_t chunks = (R + chunk - 1) / chunk;
  const bool want = sums[0] != nullptr;
  std::vector<S> partial(want ? K * chunks * C : 0, S(0));  // [K][chunks][C]
  parallel_for(chunks, 1, [&](std::size_t c0, std::size_t c1) {
    std::array<S*, K> part{};
    for (std::size_t r = c0 * chunk; r < std::min(R, c1 * chunk); ++r) {
      if (want)
        for (std::size_t k = 0; k < K; ++k) part[k] = partial.data() + (k * chunks + r / chunk) * C;
      body(r, part);
    }
  });
  if (!want) return;
  for (std::size_t k = 0; k < K; ++k) {
    std::fill(sums[k], sums[k] + C, S(0));
    for (std::size_t c = 0; c < chunks; ++c)
      for (std::size_t j = 0; j < C; ++j) sums[k][j] += partial[(k * chunks + c) * C + j];
  }
}

}  // namespace tf::kernels
