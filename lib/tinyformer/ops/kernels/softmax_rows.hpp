// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// The row loops of softmax, log_softmax (ops/softmax.cpp) and cross-entropy's softmax (ops/cross_entropy.cpp), whose
// files hold the formulas of both directions. x, y, dy and dx are R (or N) contiguous rows of C (or V); each row is
// shifted by its maximum (kernels::shift_by_row_max: -inf stays -inf, a row with a NaN or nothing above -inf becomes
// NaN), and the exponentials run as one vectorised pass (kernels::exp_with_floor). The rows run in order on the
// calling thread, except cross-entropy's forward: chunks of rows fixed by the shape, over the thread pool.
#include <cstddef>
#include <cstdint>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// softmax_forward:        y = softmax(x) row by row
// softmax_backward:       dx = y (dy - rowsum(dy y))
// log_softmax_forward:    y = x - max - log(sum exp(x - max)) row by row
// log_softmax_backward:   dx = dy - exp(y) rowsum(dy)
// cross_entropy_forward:  probs = softmax(x) row by row, x [N, V]; returns the sum over rows whose target is not
//                         ignore_index of log(sum_k exp(x_k - m)) - (x_t - m), in double (the caller divides by the
//                         rows kept). Targets are checked by the caller (in 0..V-1 or ignore_index); they are
//                         tf::Index values.
// cross_entropy_backward: dx = coef (probs - onehot(target)) on rows whose target is not ignore_index, 0 on the others
// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, KERNEL a macro's name
#define TF_SOFTMAX_KERNELS(KERNEL, S)                                                                                  \
  KERNEL(void, softmax_forward, (std::size_t R, std::size_t C, const S* x, S* y), (R, C, x, y))                        \
  KERNEL(void, softmax_backward, (std::size_t R, std::size_t C, const S* y, const S* dy, S* dx), (R, C, y, dy, dx))    \
  KERNEL(void, log_softmax_forward, (std::size_t R, std::size_t C, const S* x, S* y), (R, C, x, y))                    \
  KERNEL(void, log_softmax_backward, (std::size_t R, std::size_t C, const S* y, const S* dy, S* dx),                   \
         (R, C, y, dy, dx))                                                                                            \
  KERNEL(double, cross_entropy_forward,                                                                                \
         (std::size_t N, std::size_t V, const S* x, const std::int32_t* targets, std::int32_t ignore_index, S* probs), \
         (N, V, x, targets, ignore_index, probs))                                                                      \
  KERNEL(void, cross_entropy_backward,                                                                                 \
         (std::size_t N, std::size_t V, const S* probs, const std::int32_t* targets, std::int32_t ignore_index,        \
          S coef, S* dx),                                                                                              \
         (N, V, probs, targets, ignore_index, coef, dx))
// NOLINTEND(bugprone-macro-parentheses)

namespace TF_KERNEL_NAMESPACE {
TF_SOFTMAX_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE
