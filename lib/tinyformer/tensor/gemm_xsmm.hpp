#pragma once
// Float products on libxsmm's JIT kernels, for the shapes tensor/gemm_plan.hpp gives them (in a build with libxsmm,
// TINYFORMER_LIBXSMM): on this project's AVX-512 machine they ran at 104-117 GFLOP/s on one core where OpenBLAS's
// SGEMM ran at 84-102, for the backward's product shapes of every benchmark model, and fell behind on large ones.
//
// Row-major C [m,n] (row stride ldc) = op(A) op(B) + beta C, alpha 1, beta 0 or 1, with op(A) = A [m,k] or A^T
// (A stored [k,m]). C is computed in tiles of at most 128 x 128, each tile one JIT kernel over all of k for
// A B, or over k in chunks of 256 (the first with beta, the rest adding) for A^T B. The tiles, the chunks and
// so the rounding depend on the shape alone. A B^T (a linear layer's forward) has no kernel in libxsmm 1.17: B is
// first transposed (libxsmm_otrans) into a buffer of the calling thread, then multiplied as A B; the plan's timing of
// an A B^T shape includes that copy. A^T B^T is not taken.
#include <cstddef>

namespace tf::xsmm {

// Whether the library was built with libxsmm.
bool built_in();
// The instruction set libxsmm's JIT generates code for on this CPU (libxsmm_get_target_arch: "hsw", "skx", "clx",
// "cpx", "spr", ...), or "" without libxsmm.
const char* target();
// The width of the vectors that code uses: 512 (AVX-512), 256 (AVX2), or 0 (older x86 levels, or no libxsmm), for
// gemm_plan::rule.
int vector_bits();

// Computes the product and returns true, or returns false having written nothing (no libxsmm, a value of
// alpha or beta without a kernel, or a dimension past int).
bool product(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
             std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

}  // namespace tf::xsmm
