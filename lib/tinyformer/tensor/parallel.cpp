#include "tinyformer/tensor/parallel.hpp"

#include <algorithm>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace tf {

namespace {
int g_threads = 1;
}

int num_threads() { return g_threads; }

void set_num_threads(int n) {
  g_threads = std::max(1, n);
#ifndef _OPENMP
  g_threads = 1;
#endif
  openblas_set_num_threads(1);
}

bool in_parallel_region() {
#ifdef _OPENMP
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

void parallel_for(std::size_t n, std::size_t min_per_piece,
                  const std::function<void(std::size_t, std::size_t)>& body) {
  if (n == 0) return;
  const std::size_t by_size = std::max<std::size_t>(1, n / std::max<std::size_t>(1, min_per_piece));
  const std::size_t pieces = std::min<std::size_t>(static_cast<std::size_t>(g_threads), by_size);
  if (pieces <= 1 || in_parallel_region()) {
    body(0, n);
    return;
  }
  const long count = static_cast<long>(pieces);
#pragma omp parallel for num_threads(count) schedule(static, 1)
  for (long p = 0; p < count; ++p) {
    const std::size_t i = static_cast<std::size_t>(p);
    body(n * i / pieces, n * (i + 1) / pieces);
  }
}

}  // namespace tf
