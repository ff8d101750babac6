// Whole-array loops of a training step: what each computes is in arrays.hpp.
#include "tinyformer/ops/kernels/arrays.hpp"

#include <algorithm>
#include <cmath>

#include "tinyformer/tensor/parallel.hpp"

namespace TF_KERNEL_NAMESPACE {

template <class S>
void fill_rows(std::size_t R, std::size_t C, const S* row, S* out) {
  parallel_for(R, std::max<std::size_t>(1, 4096 / std::max<std::size_t>(C, 1)), [=](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) std::copy(row, row + C, out + r * C);
  });
}

template <class S>
void add_column_sums(std::size_t R, std::size_t C, const S* x, bool accumulate, S* out) {
  if (!accumulate) std::fill(out, out + C, S(0));
  for (std::size_t r = 0; r < R; ++r) {
    const S* xr = x + r * C;
    for (std::size_t j = 0; j < C; ++j) out[j] += xr[j];
  }
}

template <class S>
void add_arrays(std::size_t n, const S* a, const S* b, S* out) {
  parallel_for(n, 1 << 14, [=](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) out[i] = a[i] + b[i];
  });
}

template <class S>
void adam_update(std::size_t n, const AdamStep<S>& step, const S* g, S* p, S* m, S* v) {
  const AdamStep<S> k = step;  // by value: the loop's constants, not reloads through a reference
  // 8192 values a piece: a block's larger weights (49k to 66k values at C 128) split over two threads
  parallel_for(n, 1 << 13, [=](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      S gi = g[i];
      if (k.decoupled) p[i] = p[i] * k.decay_factor;
      if (k.l2) gi = gi + k.wd * p[i];
      m[i] = m[i] * k.beta1 + k.one_minus_beta1 * gi;
      v[i] = v[i] * k.beta2 + k.one_minus_beta2 * gi * gi;
      const S denom = std::sqrt(v[i]) / k.bias_correction2_sqrt + k.eps;
      p[i] = p[i] + k.neg_step_size * m[i] / denom;
    }
  });
}

TF_KERNEL_INSTANTIATE(TF_ARRAY_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
