#pragma once
// Elementwise SIMD maps, split over the thread pool in blocks whose boundaries depend only on the element
// count, so every element takes the same path (SIMD or the array's last partial batch) at any thread count.
// Used by the activation kernels (GELU, SiLU) and their derivatives.
#include <algorithm>
#include <cstddef>

#include <xsimd/xsimd.hpp>

#include "tinyformer/tensor/parallel.hpp"

namespace tf::kernels {

// How map_blocks combines f(x[i]) with the gradient g and what out held.
enum class Combine {
  value,                 // out[i] = f(x[i])
  times_grad,            // out[i] = g[i] * f(x[i])
  accumulate_times_grad  // out[i] += g[i] * f(x[i])
};

// f is called with xsimd::batch<S> and with S (a generic lambda). out may be g itself (in place).
template <class S, class F>
void map_blocks(std::size_t n, const S* x, const S* g, S* out, Combine how, F f) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  constexpr std::size_t block = 64 * W;  // elements per work item
  const std::size_t full = n / W * W;    // elements in whole batches
  parallel_for((n + block - 1) / block, 4, [&](std::size_t b0, std::size_t b1) {
    const std::size_t i0 = b0 * block, i1 = std::min(n, b1 * block);
    std::size_t i = i0;
    for (; i < std::min(i1, full); i += W) {
      B r = f(B::load_unaligned(x + i));
      if (how != Combine::value) r = r * B::load_unaligned(g + i);
      if (how == Combine::accumulate_times_grad) r = r + B::load_unaligned(out + i);
      r.store_unaligned(out + i);
    }
    for (; i < i1; ++i) {  // the array's last partial batch, the same scalar code for any split
      S r = f(x[i]);
      if (how != Combine::value) r = r * g[i];
      if (how == Combine::accumulate_times_grad) r = r + out[i];
      out[i] = r;
    }
  });
}

}  // namespace tf::kernels
