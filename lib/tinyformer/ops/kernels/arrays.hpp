// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// Plain loops over whole arrays that a training step runs on every parameter or activation: a linear layer's bias
// copied into each output row and its gradient's column sums, the sum of two arrays, and Adam's update. In a portable
// build they are compiled per ISA level like the other kernels, so that they run with AVX-512 where the CPU has it
// (compiled for x86-64-v2, they were where a profile of the portable build's tiny step differed most from the native
// build's). Each result depends only on its own elements, or sums rows in their order, so no result depends on the
// thread count.
#include <cstddef>

#include "tinyformer/ops/kernels/adam_step.hpp"
#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// fill_rows:        out [R,C]: every row = row [C]                                      (rows split over the threads)
// add_column_sums:  out [C] (+)= sum over the R rows of x [R,C], in row order; overwrites out unless accumulate
//                   (on the calling thread: a linear layer's backward runs it beside the weight's product)
// add_arrays:       out [n] = a + b                                                  (out may be a or b)
// adam_update:      Adam's or AdamW's step on p, m, v [n] with gradient g (kernels/adam_step.hpp)
// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, KERNEL a macro's name
#define TF_ARRAY_KERNELS(KERNEL, S)                                                                  \
  KERNEL(void, fill_rows, (std::size_t R, std::size_t C, const S* row, S* out), (R, C, row, out))    \
  KERNEL(void, add_column_sums, (std::size_t R, std::size_t C, const S* x, bool accumulate, S* out), \
         (R, C, x, accumulate, out))                                                                 \
  KERNEL(void, add_arrays, (std::size_t n, const S* a, const S* b, S* out), (n, a, b, out))          \
  KERNEL(void, adam_update, (std::size_t n, const AdamStep<S>& step, const S* g, S* p, S* m, S* v),  \
         (n, step, g, p, m, v))
// NOLINTEND(bugprone-macro-parentheses)

namespace TF_KERNEL_NAMESPACE {
TF_ARRAY_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE
