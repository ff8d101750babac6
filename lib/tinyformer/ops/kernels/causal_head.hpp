// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// One head of causal self-attention, forward and backward, with register-tiled SIMD loops (4 to 8 rows by two to
// four vectors of columns or of the head) that skip the masked upper triangle (key j > query i): about half the
// multiply-adds of full T x T products, and none of the per-call overhead BLAS has on these small matrices.
// Both passes go through the queries a block of rows at a time (kBlock in causal_head.cpp): a block's scores,
// weights and gradients stay in the cache while every product that needs them runs, and only the caller's choice
// (keep P for the backward, or not) decides whether all of P is ever written. dK and dV gather over the blocks, in
// query order. Every sum runs in a fixed order, the same as over the whole head at once: results do not depend on
// the block, nor on whether P was kept. In the products with P and dS, heads of other than 1, 2, 4 or 8 SIMD
// vectors take plain loops (same maths, same order).
//
// Shapes: q, k, v, dq, dk, dv are [T,D] with row stride `ld`; y and dy are [T,D] with row stride `ldy`;
// p (weights before dropout) and pd (after) are [T,T] row-major: row i holds its weights in columns 0..i and zeros
// after them to the last row of its block (kBlock rows), which is as far as the backward reads; forward leaves the
// rest of the row as it was (a caller that shows P calls zero_above_diagonal);
// keep is dropout's mask, [T,T] bytes (1: kept), and keep_scale 1/(1-p).
#include <cstddef>
#include <cstdint>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"

// In namespace attention_head:
// scratch_size: scratch values (of type S) the functions below need for one head
// softmax_row:  the row softmax of every attention path: row[0..n) = softmax(row[0..n)) (max-subtracted),
//               row[n..T) = 0
// forward:      P = softmax(mask(scale q k^T)), each row through softmax_row; Pd = P * keep * keep_scale (keep may be
//               null: no dropout, Pd = P); y = Pd v. P is written to p and Pd to pd when they are not null.
// backward:     from dy: dv = pd^T dy; dpd = dy v^T; dp = dpd * pd / p (dropout's mask and 1/(1-p));
//               ds = p * (dp - rowsum(dp * p)); dq = scale ds k; dk = scale ds^T q. dq, dk and dv are overwritten.
//               P and Pd as forward kept them (pd null without dropout), or p null: computed again as forward does,
//               with keep (null without dropout).
// zero_above_diagonal: p[i, j] = 0 for j > i, [T,T]: P as a caller shows it
// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, KERNEL a macro's name
#define TF_CAUSAL_HEAD_KERNELS(KERNEL, S)                                                                         \
  KERNEL(std::size_t, scratch_size, (std::size_t T, std::size_t D), (T, D))                                       \
  KERNEL(void, softmax_row, (S * row, std::size_t n, std::size_t T), (row, n, T))                                 \
  KERNEL(void, forward,                                                                                           \
         (const S* q, const S* k, const S* v, std::size_t ld, std::size_t T, std::size_t D, S scale,              \
          const std::uint8_t* keep, S keep_scale, S* p, S* pd, S* y, std::size_t ldy, S* scratch),                \
         (q, k, v, ld, T, D, scale, keep, keep_scale, p, pd, y, ldy, scratch))                                    \
  KERNEL(void, backward,                                                                                          \
         (const S* q, const S* k, const S* v, std::size_t ld, const S* p, const S* pd, const std::uint8_t* keep,  \
          S keep_scale, const S* dy, std::size_t ldy, std::size_t T, std::size_t D, S scale, S* dq, S* dk, S* dv, \
          S* scratch),                                                                                            \
         (q, k, v, ld, p, pd, keep, keep_scale, dy, ldy, T, D, scale, dq, dk, dv, scratch))                       \
  KERNEL(void, zero_above_diagonal, (S * p, std::size_t T), (p, T))
// NOLINTEND(bugprone-macro-parentheses)

namespace TF_KERNEL_NAMESPACE::attention_head {
TF_CAUSAL_HEAD_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE::attention_head
