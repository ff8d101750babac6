#pragma once
// OpenBLAS's SGEMM called directly, for the tests that check tf::gemm against that library alone. <cblas.h> declares
// the CBLAS enums that xtensor-blas (xflens) declares too, so the two cannot share a translation unit: the call lives
// in openblas_product.cpp, which the unity batches leave out (tests/CMakeLists.txt).
#include "tinyformer/tensor/gemm.hpp"

namespace tf::test {

// Row-major C [m,n] = op(A) op(B) + beta C with alpha 1, op(A) = A [m,k] or A^T (A stored [k,m]), op(B) = B [k,n]
// or B^T (B stored [n,k]): one cblas_sgemm call.
void openblas_sgemm(bool trans_a, bool trans_b, GemmShape s, const float* a, const float* b, float beta, float* c);

}  // namespace tf::test
