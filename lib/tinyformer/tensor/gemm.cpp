// Kept apart from xtensor-blas: <cblas.h> clashes with xflens' CBLAS enums in one TU.
#include "tinyformer/tensor/gemm.hpp"

#include <cblas.h>

namespace tf {
namespace {

void call_blas(bool ta, bool tb, GemmShape s, float alpha, const float* a, const float* b, float beta, float* c) {
  const int lda = static_cast<int>(ta ? s.m : s.k), ldb = static_cast<int>(tb ? s.k : s.n);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(s.m),
              static_cast<int>(s.n), static_cast<int>(s.k), alpha, a, lda, b, ldb, beta, c, static_cast<int>(s.n));
}

void call_blas(bool ta, bool tb, GemmShape s, double alpha, const double* a, const double* b, double beta, double* c) {
  const int lda = static_cast<int>(ta ? s.m : s.k), ldb = static_cast<int>(tb ? s.k : s.n);
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(s.m),
              static_cast<int>(s.n), static_cast<int>(s.k), alpha, a, lda, b, ldb, beta, c, static_cast<int>(s.n));
}

}  // namespace

template <class S>
void gemm(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, const S* b, S beta, S* c) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) {  // BLAS leaves C untouched for k == 0 only when beta == 1
    for (std::size_t i = 0; i < s.m * s.n; ++i) c[i] = beta == S(0) ? S(0) : beta * c[i];
    return;
  }
  call_blas(trans_a, trans_b, s, alpha, a, b, beta, c);
}

template <class S>
void batched_gemm(std::size_t batch, bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a,
                  std::size_t stride_a, const S* b, std::size_t stride_b, S beta, S* c, std::size_t stride_c) {
  for (std::size_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, s, alpha, a + i * stride_a, b + i * stride_b, beta, c + i * stride_c);
}

int blas_threads() { return openblas_get_num_threads(); }
void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

template void gemm<float>(bool, bool, GemmShape, float, const float*, const float*, float, float*);
template void gemm<double>(bool, bool, GemmShape, double, const double*, const double*, double, double*);
template void batched_gemm<float>(std::size_t, bool, bool, GemmShape, float, const float*, std::size_t, const float*,
                                  std::size_t, float, float*, std::size_t);
template void batched_gemm<double>(std::size_t, bool, bool, GemmShape, double, const double*, std::size_t,
                                   const double*, std::size_t, double, double*, std::size_t);

}  // namespace tf
