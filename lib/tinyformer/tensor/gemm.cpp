// Kept apart from xtensor-blas: <cblas.h> clashes with xflens' CBLAS enums in one TU.
#include "tinyformer/tensor/gemm.hpp"

#include <cblas.h>

namespace tf {
namespace {

int as_int(std::size_t v) { return static_cast<int>(v); }

void call_blas(bool ta, bool tb, GemmShape s, float alpha, const float* a, std::size_t lda, const float* b,
               std::size_t ldb, float beta, float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, as_int(s.m), as_int(s.n),
              as_int(s.k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

void call_blas(bool ta, bool tb, GemmShape s, double alpha, const double* a, std::size_t lda, const double* b,
               std::size_t ldb, double beta, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, as_int(s.m), as_int(s.n),
              as_int(s.k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

}  // namespace

template <class S>
void gemm_strided(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, std::size_t lda, const S* b,
                  std::size_t ldb, S beta, S* c, std::size_t ldc) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) {  // C = beta * C; spelled out because BLAS implementations differ for k == 0
    for (std::size_t i = 0; i < s.m; ++i)
      for (std::size_t j = 0; j < s.n; ++j) c[i * ldc + j] = beta == S(0) ? S(0) : beta * c[i * ldc + j];
    return;
  }
  call_blas(trans_a, trans_b, s, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class S>
void gemm(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, const S* b, S beta, S* c) {
  // packed row-major: the leading dimension is the stored row length
  gemm_strided(trans_a, trans_b, s, alpha, a, trans_a ? s.m : s.k, b, trans_b ? s.k : s.n, beta, c, s.n);
}

template <class S>
void batched_gemm(std::size_t batch, bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a,
                  std::size_t stride_a, const S* b, std::size_t stride_b, S beta, S* c, std::size_t stride_c) {
  for (std::size_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, s, alpha, a + i * stride_a, b + i * stride_b, beta, c + i * stride_c);
}

int blas_threads() { return openblas_get_num_threads(); }
void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

template void gemm_strided<float>(bool, bool, GemmShape, float, const float*, std::size_t, const float*, std::size_t,
                                  float, float*, std::size_t);
template void gemm_strided<double>(bool, bool, GemmShape, double, const double*, std::size_t, const double*,
                                   std::size_t, double, double*, std::size_t);
template void gemm<float>(bool, bool, GemmShape, float, const float*, const float*, float, float*);
template void gemm<double>(bool, bool, GemmShape, double, const double*, const double*, double, double*);
template void batched_gemm<float>(std::size_t, bool, bool, GemmShape, float, const float*, std::size_t, const float*,
                                  std::size_t, float, float*, std::size_t);
template void batched_gemm<double>(std::size_t, bool, bool, GemmShape, double, const double*, std::size_t,
                                   const double*, std::size_t, double, double*, std::size_t);

}  // namespace tf
