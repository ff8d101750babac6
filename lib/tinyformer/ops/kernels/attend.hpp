// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// One query's attention over the cached keys and values of its head, for decoding (infer/decoder.hpp). The keys are
// stored transposed, kt [D, ldk] (column t the key of position t), so that the scores of many positions come out of
// one SIMD register per step of d without a horizontal sum; the values as rows, v [positions, D]. The cached
// positions come in up to two segments (a ring buffer's window wraps around its end): n1 columns of kt1 and rows of
// v1, then n2 of kt2 and v2:
//   w_t = scale q . k_t        p = softmax(w)        out = sum_t p_t v_t
// over the positions of the first segment, then the second's, in that order (the softmax is
// kernels::attention_head::softmax_row, every attention path's). Single-threaded: the decoder runs heads side by side.
#include <cstddef>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// attend_query: q [D], out [D]; w [n1 + n2] scratch (the weights p on return)
// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, which may not be parenthesised
#define TF_ATTEND_KERNELS(KERNEL, S)                                                                      \
  KERNEL(void, attend_query,                                                                              \
         (const S* q, std::size_t D, S scale, std::size_t ldk, const S* kt1, const S* v1, std::size_t n1, \
          const S* kt2, const S* v2, std::size_t n2, S* w, S* out),                                       \
         (q, D, scale, ldk, kt1, v1, n1, kt2, v2, n2, w, out))
// NOLINTEND(bugprone-macro-parentheses)

namespace TF_KERNEL_NAMESPACE {
TF_ATTEND_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE
