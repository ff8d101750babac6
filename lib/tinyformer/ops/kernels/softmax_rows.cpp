// Softmax, log_softmax and cross-entropy row kernels: the formulas are in ops/softmax.cpp and ops/cross_entropy.cpp.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/softmax_rows.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "tinyformer/ops/kernels/rows.hpp"

namespace TF_KERNEL_NAMESPACE {

namespace {

// Size of the scratch block log_softmax computes exp() into (values): small enough to stay in L1/L2.
constexpr std::size_t kScratchElems = 4096;

// out[i] = exp(x[i]) for i < n with kernels::exp_with_floor's clamp (exp_floor.hpp says why), computed as xtensor
// assigns that expression, so that the bits are those of the ops before these loops moved here: SIMD batches from the
// first element where `out` is aligned for a batch, std::exp on the elements before and after. out may be x.
template <class S>
void exp_with_floor_into(const S* x, S* out, std::size_t n) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const std::size_t begin = xsimd::get_alignment_offset(out, n, W);
  const std::size_t end = begin + ((n - begin) & ~(W - 1));
  auto scalar = [](S v) {
    return std::isnan(v) ? v : std::exp(v >= S(-1000) ? (v <= S(1000) ? v : S(1000)) : S(-1000));
  };
  for (std::size_t i = 0; i < begin; ++i) out[i] = scalar(x[i]);
  for (std::size_t i = begin; i < end; i += W) {
    const B v = B::load_unaligned(x + i);
    const B clamped = xsimd::select(v >= B(S(-1000)), xsimd::select(v <= B(S(1000)), v, B(S(1000))), B(S(-1000)));
    xsimd::select(xsimd::isnan(v), v, xsimd::exp(clamped)).store_unaligned(out + i);
  }
  for (std::size_t i = end; i < n; ++i) out[i] = scalar(x[i]);
}

// out = x - rowmax(x), row by row, x and out [R, C]
template <class S>
void subtract_row_max(const S* x, S* out, std::size_t R, std::size_t C) {
  for (std::size_t r = 0; r < R; ++r) shift_by_row_max(x + r * C, out + r * C, C);
}

}  // namespace

// x [R, C] -> y [R, C]
template <class S>
void softmax_forward(std::size_t R, std::size_t C, const S* x, S* y) {
  subtract_row_max(x, y, R, C);
  exp_with_floor_into(y, y, R * C);  // exp(-inf) = 0
  for (std::size_t r = 0; r < R; ++r) {
    S* yr = y + r * C;
    S total = 0;
    for (std::size_t j = 0; j < C; ++j) total += yr[j];
    const S inv = S(1) / total;  // total >= 1: the max entry contributes exp(0)
    for (std::size_t j = 0; j < C; ++j) yr[j] *= inv;
  }
}

// y, dy [R, C] -> dx [R, C]
template <class S>
void softmax_backward(std::size_t R, std::size_t C, const S* y, const S* dy, S* dx) {
  for (std::size_t r = 0; r < R; ++r) {
    const S* yr = y + r * C;
    const S* dyr = dy + r * C;
    S* gr = dx + r * C;
    S dot = 0;
    for (std::size_t j = 0; j < C; ++j) dot += dyr[j] * yr[j];
    for (std::size_t j = 0; j < C; ++j) gr[j] = yr[j] * (dyr[j] - dot);
  }
}

// x [R, C] -> y [R, C]
template <class S>
void log_softmax_forward(std::size_t R, std::size_t C, const S* x, S* y) {
  subtract_row_max(x, y, R, C);
  // exp(x - m) is needed only for the row sums: it goes through a small scratch block of whole rows (about
  // kScratchElems values, reused), not a second array as large as x.
  const std::size_t block_rows = C == 0 ? 1 : std::max<std::size_t>(1, std::min(R, kScratchElems / C));
  std::vector<S, xsimd::aligned_allocator<S, 64>> scratch(block_rows * C);  // aligned as tf::Array's values
  for (std::size_t r0 = 0; r0 < R; r0 += block_rows) {
    const std::size_t nr = std::min(block_rows, R - r0), n = nr * C;
    exp_with_floor_into(y + r0 * C, scratch.data(), n);
    for (std::size_t r = 0; r < nr; ++r) {
      const S* er = scratch.data() + r * C;
      S total = 0;
      for (std::size_t j = 0; j < C; ++j) total += er[j];
      const S log_total = std::log(total);  // total >= 1, so log_total >= 0 and finite
      S* yr = y + (r0 + r) * C;
      for (std::size_t j = 0; j < C; ++j) yr[j] -= log_total;
    }
  }
}

// y, dy [R, C] -> dx [R, C]
template <class S>
void log_softmax_backward(std::size_t R, std::size_t C, const S* y, const S* dy, S* dx) {
  exp_with_floor_into(y, dx, R * C);  // softmax, recomputed instead of stored
  for (std::size_t r = 0; r < R; ++r) {
    const S* dyr = dy + r * C;
    S* gr = dx + r * C;
    S total = 0;
    for (std::size_t j = 0; j < C; ++j) total += dyr[j];
    for (std::size_t j = 0; j < C; ++j) gr[j] = dyr[j] - gr[j] * total;
  }
}

// x [N, V], targets [N] -> probs [N, V], the loss summed over kept rows. The rows go in chunks of about kScratchElems
// values, whose bounds depend on the shape alone (so does where exp_with_floor_into's SIMD batches fall), the chunks
// over the thread pool; each row's loss is kept and the kept rows' losses are added in row order at the end: the same
// bits at any thread count.
template <class S>
double cross_entropy_forward(std::size_t N, std::size_t V, const S* x, const std::int32_t* targets,
                             std::int32_t ignore_index, S* probs) {
  std::vector<double> row_loss(N, 0.0);
  const std::size_t chunk = std::max<std::size_t>(1, kScratchElems / std::max<std::size_t>(V, 1));  // rows
  const std::size_t chunks = (N + chunk - 1) / chunk;
  const std::size_t min_chunks =
      std::max<std::size_t>(1, (std::size_t{1} << 15) / (chunk * std::max<std::size_t>(V, 1)));
  parallel_for(chunks, min_chunks, [&](std::size_t c0, std::size_t c1) {
    for (std::size_t c = c0; c < c1; ++c) {
      const std::size_t r0 = c * chunk, r1 = std::min(N, r0 + chunk);
      subtract_row_max(x + r0 * V, probs + r0 * V, r1 - r0, V);
      // loss of a kept row from the shifted logits s = x - m: log(sum_k exp(s_k)) - s_t
      for (std::size_t r = r0; r < r1; ++r)
        if (targets[r] != ignore_index)
          row_loss[r] = -static_cast<double>(probs[r * V + static_cast<std::size_t>(targets[r])]);
      exp_with_floor_into(probs + r0 * V, probs + r0 * V, (r1 - r0) * V);  // masked (-inf) logits give 0
      for (std::size_t r = r0; r < r1; ++r) {
        S* pr = probs + r * V;
        const S sum = row_sum(pr, V);
        const S inv = S(1) / sum;  // sum >= 1: the max entry contributes exp(0)
        for (std::size_t j = 0; j < V; ++j) pr[j] *= inv;
        if (targets[r] != ignore_index) row_loss[r] += static_cast<double>(std::log(sum));
      }
    }
  });
  double total = 0;  // accumulated in double: N can be large
  for (std::size_t r = 0; r < N; ++r)
    if (targets[r] != ignore_index) total += row_loss[r];
  return total;
}

// probs [N, V], targets [N] -> dx [N, V]
template <class S>
void cross_entropy_backward(std::size_t N, std::size_t V, const S* probs, const std::int32_t* targets,
                            std::int32_t ignore_index, S coef, S* dx) {
  for (std::size_t r = 0; r < N; ++r) {
    const S* pr = probs + r * V;
    S* dr = dx + r * V;
    if (targets[r] == ignore_index) {
      std::fill(dr, dr + V, S(0));
      continue;
    }
    for (std::size_t j = 0; j < V; ++j) dr[j] = pr[j] * coef;
    dr[static_cast<std::size_t>(targets[r])] -= coef;
  }
}

TF_KERNEL_INSTANTIATE(TF_SOFTMAX_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
