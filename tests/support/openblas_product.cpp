#include "support/openblas_product.hpp"

#include <cblas.h>

namespace tf::test {

void openblas_sgemm(bool trans_a, bool trans_b, GemmShape s, const float* a, const float* b, float beta, float* c) {
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
              trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
}

}  // namespace tf::test
