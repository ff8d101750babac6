// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// Matrix-vector products for decoding one token (infer/decoder.hpp). Each weight is read once per token and the
// vector stays in the L1 cache, so these are bound by how fast the weights stream in from memory: several rows are
// read side by side (independent streams); the int8 kernels also prefetch the next rows while the current ones are
// summed (the float kernel does not: on an AMD Zen 5 that made it slower, see matvec.cpp).
//
// float: w [rows, ld] row-major, ld a multiple of kMatvecAlign values; columns past the matrix's width hold zeros
// and so does x past it, so no row has a tail.
//   y[r] = sum_j w[r, j] x[j]  (+ bias[r])  (+ y[r] when accumulating: a residual add in the same pass)
//
// int8 (Q8_0, as llama2.c's runq.c): the weights and the vector are quantised per group of kQ8Group values:
//   s = max |v| / 127 over the group, q = round(v / s) in [-127, 127] (halves away from zero), v ~ q s.
// A row holds `groups` groups (its width padded with zeros to a whole group); w [rows, groups * kQ8Group] int8, its
// scales ws [rows, groups]; x likewise xq [groups * kQ8Group], xs [groups]. The products of a group are summed
// exactly in int32 and scaled in float:
//   y[r] = sum_g ws[r, g] xs[g] sum_{j in g} wq[r, j] xq[j]   (+ bias[r])  (+ y[r])
// On AVX-512 VNNI the int8 sums are vpdpbusd (|x| unsigned times w with x's sign), on AVX2 vpmaddubsw + vpmaddwd;
// elsewhere a scalar loop. The group sums are exact on every path; only the order of the float sum of the groups
// differs between paths (a few ulp).
#include <cstddef>
#include <cstdint>

#include "tinyformer/ops/kernels/declare.hpp"
#include "tinyformer/ops/kernels/isa.hpp"
#include "tinyformer/ops/kernels/matvec_layout.hpp"

// matvec:      rows [r0, r1) of y = w x (+ bias) (+ y when accumulate); bias may be null
// quantize_q8: x [n] -> q [groups * kQ8Group], s [groups], groups = ceil(n / kQ8Group); q past n is 0
// matvec_q8:   rows [r0, r1) of the int8 product above; bias may be null
// S is float (the decoder's) or double (a reference: the same arithmetic on plain loops).
// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, which may not be parenthesised
#define TF_MATVEC_KERNELS(KERNEL, S)                                                                                  \
  KERNEL(                                                                                                             \
      void, matvec,                                                                                                   \
      (std::size_t r0, std::size_t r1, std::size_t ld, const S* w, const S* x, const S* bias, S* y, bool accumulate), \
      (r0, r1, ld, w, x, bias, y, accumulate))                                                                        \
  KERNEL(void, quantize_q8, (std::size_t n, const S* x, std::int8_t* q, S* s), (n, x, q, s))                          \
  KERNEL(void, matvec_q8,                                                                                             \
         (std::size_t r0, std::size_t r1, std::size_t groups, const std::int8_t* wq, const S* ws,                     \
          const std::int8_t* xq, const S* xs, const S* bias, S* y, bool accumulate),                                  \
         (r0, r1, groups, wq, ws, xq, xs, bias, y, accumulate))
// NOLINTEND(bugprone-macro-parentheses)

namespace TF_KERNEL_NAMESPACE {
TF_MATVEC_KERNELS(TF_KERNEL_DECLARE, S)
}  // namespace TF_KERNEL_NAMESPACE
