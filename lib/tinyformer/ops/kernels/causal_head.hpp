// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// One head of causal self-attention, forward and backward, with register-tiled SIMD loops (8 rows by two
// vectors of columns or of the head) that skip
// the masked upper triangle (key j > query i): about half the multiply-adds of full T x T products,
// and none of the per-call overhead BLAS has on these small matrices. Every sum runs in a fixed order.
// Head sizes that are not a multiple of the SIMD width take plain loops (same maths).
//
// Shapes: q, k, v, dq, dk, dv are [T,D] with row stride `ld`; y and dy are [T,D] with row stride `ldy`;
// p (weights before dropout) and pd (after) are [T,T] row-major and exactly zero above the diagonal.
#include <cstddef>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// In namespace attention_head:
// scratch_size:   scratch values (of type S) the functions below need for one head
// softmax_row:    the row softmax of every attention path: row[0..n) = softmax(row[0..n)) (max-subtracted),
//                 row[n..T) = 0
// scores_softmax: p = softmax(mask(scale q k^T)), each row through softmax_row
// weighted_sum:   y = pd v
// backward:       from dy: dv = pd^T dy; dpd = dy v^T; dp = dpd * pd / p (dropout's mask and 1/(1-p) = `keep_scale`);
//                 ds = p * (dp - rowsum(dp * p)); dq = scale ds k; dk = scale ds^T q. dq, dk and dv are overwritten.
#define TF_CAUSAL_HEAD_KERNELS(KERNEL, S)                                                                            \
  KERNEL(std::size_t, scratch_size, (std::size_t T, std::size_t D), (T, D))                                          \
  KERNEL(void, softmax_row, (S * row, std::size_t n, std::size_t T), (row, n, T))                                    \
  KERNEL(void, scores_softmax,                                                                                       \
         (const S* q, const S* k, std::size_t ld, std::size_t T, std::size_t D, S scale, S* p, S* scratch),          \
         (q, k, ld, T, D, scale, p, scratch))                                                                        \
  KERNEL(void, weighted_sum,                                                                                         \
         (const S* pd, const S* v, std::size_t ld, std::size_t T, std::size_t D, S* y, std::size_t ldy, S* scratch), \
         (pd, v, ld, T, D, y, ldy, scratch))                                                                         \
  KERNEL(void, backward,                                                                                             \
         (const S* q, const S* k, const S* v, std::size_t ld, const S* p, const S* pd, bool dropout, S keep_scale,   \
          const S* dy, std::size_t ldy, std::size_t T, std::size_t D, S scale, S* dq, S* dk, S* dv, S* scratch),     \
         (q, k, v, ld, p, pd, dropout, keep_scale, dy, ldy, T, D, scale, dq, dk, dv, scratch))

namespace TF_KERNEL_NAMESPACE::attention_head {
TF_CAUSAL_HEAD_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE::attention_head
