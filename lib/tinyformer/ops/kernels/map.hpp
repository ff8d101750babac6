#pragma once
// Elementwise SIMD maps, split over the thread pool in blocks whose boundaries depend only on the element
// count, so every element takes the same path (SIMD or the array's last partial batch) at any thread count.
// Used by the activation kernels (GELU, SiLU) and their derivatives.
#include <algorithm>
#include <cstddef>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "tinyformer/tensor/parallel.hpp"

namespace tf::kernels {

// How map_blocks combines f(x[i]) with the gradient g and what out held.
enum class Combine {
  value,                 // out[i] = f(x[i])
  times_grad,            // out[i] = g[i] * f(x[i])
  accumulate_times_grad  // out[i] += g[i] * f(x[i])
};

// Calls body(V(), i) for the elements [i, i + V's width) of [0, n): V = xsimd::batch<S> for each whole batch, then
// V = S for each element of the array's last partial batch, in blocks of 64 batches over the thread pool.
template <class S, class Body>
void for_batches(std::size_t n, Body body) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  constexpr std::size_t block = 64 * W;  // elements per work item
  const std::size_t full = n / W * W;    // elements in whole batches
  parallel_for((n + block - 1) / block, 4, [&](std::size_t b0, std::size_t b1) {
    const std::size_t i0 = b0 * block, i1 = std::min(n, b1 * block);
    std::size_t i = i0;
    for (; i < std::min(i1, full); i += W) body(B(), i);
    for (; i < i1; ++i) body(S(), i);  // the array's last partial batch, the same scalar code for any split
  });
}

// A batch (V = xsimd::batch<S>) or one value (V = S) at p
template <class V, class S>
V load_as(const S* p) {
  if constexpr (std::is_same_v<V, S>)
    return *p;
  else
    return V::load_unaligned(p);
}
template <class V, class S>
void store_as(const V& v, S* p) {
  if constexpr (std::is_same_v<V, S>)
    *p = v;
  else
    v.store_unaligned(p);
}

// f is called with xsimd::batch<S> and with S (a generic lambda). out may be g itself (in place).
template <class S, class F>
void map_blocks(std::size_t n, const S* x, const S* g, S* out, Combine how, F f) {
  for_batches<S>(n, [&](auto tag, std::size_t i) {
    using V = decltype(tag);
    V r = f(load_as<V>(x + i));
    if (how != Combine::value) r = r * load_as<V>(g + i);
    if (how == Combine::accumulate_times_grad) r = r + load_as<V>(out + i);
    store_as(r, out + i);
  });
}

}  // namespace tf::kernels
