// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// The GELU loops (tanh approximation), shared by the gelu op and the linear op's fused GELU:
//   u = k (x + c x^3),  gelu(x) = 0.5 x (1 + tanh u),    k = sqrt(2/pi), c = 0.044715
// computed as 0.5 (1 + tanh u) = s = 1 / (1 + exp(-2u)) (the logistic function at 2u), so gelu(x) = x s and
//   gelu'(x) = s + x 2 s (1 - s) k (1 + 3 c x^2)
// (product rule, d/du sigma(2u) = 2 s (1 - s), du/dx = k (1 + 3 c x^2); 2 s (1 - s) = 0.5 (1 - tanh^2 u), the
// tanh form's term). One exp and one division an element. The backward recomputes s from x, or takes the slope
// gelu'(x) that gelu_forward_slope left in place of x (the linear op's fused GELU: no exp in its backward).
// SIMD (xsimd's exp), split over the threads by kernels::map_blocks.
#include <cstddef>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// gelu_forward:  out[i] = gelu(x[i])
// gelu_backward: out[i] = g[i] * gelu'(x[i])          (accumulate: out[i] += g[i] * gelu'(x[i]))
//                out may be g itself (in place).
// gelu_forward_slope: out[i] = gelu(x[i]), then x[i] = gelu'(x[i]): the same values as gelu_forward and
//                gelu_backward's gelu', with one exp for both
// gelu_backward_slope: out[i] = g[i] * slope[i] (slope from gelu_forward_slope: gelu_backward's values, bit for
//                bit); out may be g itself.
// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, KERNEL a macro's name
#define TF_GELU_KERNELS(KERNEL, S)                                                              \
  KERNEL(void, gelu_forward, (std::size_t n, const S* x, S* out), (n, x, out))                  \
  KERNEL(void, gelu_backward, (std::size_t n, const S* x, const S* g, S* out, bool accumulate), \
         (n, x, g, out, accumulate))                                                            \
  KERNEL(void, gelu_forward_slope, (std::size_t n, S * x, S * out), (n, x, out))                \
  KERNEL(void, gelu_backward_slope, (std::size_t n, const S* slope, const S* g, S* out), (n, slope, g, out))
// NOLINTEND(bugprone-macro-parentheses)

namespace TF_KERNEL_NAMESPACE {
TF_GELU_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE
