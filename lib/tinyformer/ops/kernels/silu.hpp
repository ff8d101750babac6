// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// The SiLU loops, shared by the silu op and the fused SwiGLU (and by any later gated MLP):
//   s = sigmoid(a) = 1 / (1 + e^-a),   silu(a) = a s,   silu'(a) = s (1 + a (1 - s))
// (product rule, sigmoid' = s (1 - s)). SwiGLU on rows of [gate | up], each half H wide:
//   out_j = silu(gate_j) up_j      d_gate_j = dy_j up_j silu'(gate_j)      d_up_j = dy_j silu(gate_j)
// The backwards recompute s from the input. SIMD (xsimd's exp); the elementwise maps split over the threads
// by kernels::map_blocks, the SwiGLU rows by whole rows, so every element takes the same path (SIMD lane or
// scalar tail, fixed by its position) whatever the thread count.
#include <cstddef>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// silu_forward:    out[i] = silu(x[i])
// silu_backward:   out[i] = g[i] * silu'(x[i])          (accumulate: out[i] += g[i] * silu'(x[i]))
//                  out may be g itself (in place).
// swiglu_forward:  x [R, 2H] (row r: gate = x[r, :H], up = x[r, H:]) -> out [R, H], out = silu(gate) * up
// swiglu_backward: x [R, 2H], dy [R, H] -> dx [R, 2H] = [d_gate | d_up]   (accumulate: dx += ...)
#define TF_SILU_KERNELS(KERNEL, S)                                                                               \
  KERNEL(void, silu_forward, (std::size_t n, const S* x, S* out), (n, x, out))                                   \
  KERNEL(void, silu_backward, (std::size_t n, const S* x, const S* g, S* out, bool accumulate),                  \
         (n, x, g, out, accumulate))                                                                             \
  KERNEL(void, swiglu_forward, (std::size_t R, std::size_t H, const S* x, S* out), (R, H, x, out))               \
  KERNEL(void, swiglu_backward, (std::size_t R, std::size_t H, const S* x, const S* dy, S* dx, bool accumulate), \
         (R, H, x, dy, dx, accumulate))

namespace TF_KERNEL_NAMESPACE {
TF_SILU_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE
