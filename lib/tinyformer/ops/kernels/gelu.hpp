// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// The GELU loops (tanh approximation), shared by the gelu op and the linear op's fused GELU:
//   u = k (x + c x^3),  t = tanh(u),  gelu(x) = 0.5 x (1 + t),    k = sqrt(2/pi), c = 0.044715
//   gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
// (product rule, tanh' = 1 - tanh^2, du/dx = k (1 + 3 c x^2)). The backward recomputes t from x.
// SIMD (xsimd's tanh), split over the threads by kernels::map_blocks.
#include <cstddef>

#include "tinyformer/ops/kernels/isa.hpp"

namespace TF_KERNEL_NAMESPACE {

// out[i] = gelu(x[i])
template <class S>
void gelu_forward(std::size_t n, const S* x, S* out);

// out[i] = g[i] * gelu'(x[i])          (accumulate: out[i] += g[i] * gelu'(x[i]))
// out may be g itself (in place).
template <class S>
void gelu_backward(std::size_t n, const S* x, const S* g, S* out, bool accumulate);

}  // namespace TF_KERNEL_NAMESPACE
