// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// The row loops of layer norm and RMSNorm (ops/layer_norm.cpp, ops/rms_norm.cpp hold the formulas of both
// directions). x, y, dy and dx are R contiguous rows of C; weight, bias, dweight and dbias are [C]; mean and rstd [R]
// (kept from the forward, xhat is recomputed from x). Rows are split over the threads; the parameter gradients are
// summed in fixed chunks of rows (kernels::rows_with_column_sums), so no result depends on the thread count.
#include <cstddef>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// layer_norm_forward:  y = (x - mean) rstd weight + bias; mean [R] and rstd [R] are written
// layer_norm_backward: dx (+)= rstd (g - mean(g) - xhat mean(g xhat)), g = dy weight (skipped when dx is null; added
//                      to what dx holds when accumulate_dx, else written);
//                      dweight = sum over rows of dy xhat, dbias = sum of dy (both skipped when dweight is null, else
//                      both overwritten)
// rms_norm_forward:    y = x rstd weight, rstd = 1 / sqrt(mean(x^2) + eps); rstd [R] is written
// rms_norm_backward:   dx (+)= rstd (g - xhat mean(g xhat)), g = dy weight (as layer_norm_backward's);
//                      dweight = sum over rows of dy xhat (skipped when dweight is null, else overwritten)
// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, KERNEL a macro's name
#define TF_NORM_KERNELS(KERNEL, S)                                                                                     \
  KERNEL(void, layer_norm_forward,                                                                                     \
         (std::size_t R, std::size_t C, const S* x, const S* weight, const S* bias, S eps, S* y, S* mean, S* rstd),    \
         (R, C, x, weight, bias, eps, y, mean, rstd))                                                                  \
  KERNEL(void, layer_norm_backward,                                                                                    \
         (std::size_t R, std::size_t C, const S* x, const S* weight, const S* dy, const S* mean, const S* rstd, S* dx, \
          bool accumulate_dx, S* dweight, S* dbias),                                                                   \
         (R, C, x, weight, dy, mean, rstd, dx, accumulate_dx, dweight, dbias))                                         \
  KERNEL(void, rms_norm_forward, (std::size_t R, std::size_t C, const S* x, const S* weight, S eps, S* y, S* rstd),    \
         (R, C, x, weight, eps, y, rstd))                                                                              \
  KERNEL(void, rms_norm_backward,                                                                                      \
         (std::size_t R, std::size_t C, const S* x, const S* weight, const S* dy, const S* rstd, S* dx,                \
          bool accumulate_dx, S* dweight),                                                                             \
         (R, C, x, weight, dy, rstd, dx, accumulate_dx, dweight))
// NOLINTEND(bugprone-macro-parentheses)

namespace TF_KERNEL_NAMESPACE {
TF_NORM_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE
