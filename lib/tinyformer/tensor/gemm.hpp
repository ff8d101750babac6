#pragma once
// The one BLAS call site: C = alpha * op(A) * op(B) + beta * C on row-major data, where op(X) is X or
// X^T chosen by a flag (no transposed copies). S is float or double. Large products are cut into
// pieces (blocks of rows or columns of C, chosen by the shape alone) that the threads of
// tensor/parallel.hpp share; BLAS itself runs single-threaded, so results do not depend on threads.
#include <cstddef>

#include "tinyformer/tensor/gemm_plan.hpp"

namespace tf {

struct GemmShape {
  std::size_t m, n, k;  // op(A) is [m,k], op(B) is [k,n], C is [m,n]
};

template <class S>
void gemm(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, const S* b, S beta, S* c);

// The same as one BLAS call, never cut into pieces: for callers that run several products side by side
// on the threads (each product then takes the same path whatever the thread count).
template <class S>
void gemm_whole(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, const S* b, S beta, S* c);

// The same with explicit leading dimensions (row strides), for sub-matrices of larger arrays, e.g. one
// head's [T,D] columns inside a [T,3C] q/k/v tensor (lda = 3C).
template <class S>
void gemm_strided(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, std::size_t lda, const S* b,
                  std::size_t ldb, S beta, S* c, std::size_t ldc);

// `batch` independent products; A, B, C advance by stride_a/b/c elements (a stride of 0 reuses one
// matrix for every batch entry).
template <class S>
void batched_gemm(std::size_t batch, bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, std::size_t stride_a,
                  const S* b, std::size_t stride_b, S beta, S* c, std::size_t stride_c);

// For the choice of library (tensor/gemm_plan.hpp) and for checking it: a float A B, A^T B or A B^T of shape s on
// scratch operands (libxsmm's time of A B^T includes transposing B), timed on OpenBLAS and on libxsmm in alternation,
// at least min_pairs pairs, then more while the pairs took under budget_us in all, at most max_pairs. Medians per
// product, in microseconds; the ratio is the median of each pair's libxsmm time over its OpenBLAS time. Without libxsmm
// both run OpenBLAS.
struct GemmTimes {
  double openblas_us = 0, libxsmm_us = 0, libxsmm_over_openblas = 1;
  int pairs = 0;
};
GemmTimes time_gemm_libraries(bool trans_a, bool trans_b, GemmShape s, int min_pairs, int max_pairs, double budget_us);

// A choice of library checked again: both libraries timed on its shape now (time_gemm_libraries, 5 to 9 pairs within
// 0.3 s), and the chosen one's speed as a fraction of the faster one's from the median ratio (1 when it is the faster).
// What `bench --check-gemm` prints per product.
struct GemmCheck {
  GemmTimes times;
  double choice_speed = 1;
};
GemmCheck check_gemm_choice(const gemm_plan::Shape& shape, gemm_plan::Backend chosen);

}  // namespace tf
