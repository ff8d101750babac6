// Kept apart from gemm.cpp: <libxsmm.h> declares the Fortran BLAS symbols that <cblas.h>'s neighbours also declare.
#include "tinyformer/tensor/gemm_xsmm.hpp"

#ifdef TINYFORMER_WITH_LIBXSMM

#include <algorithm>
#include <climits>
#include <vector>

#include <libxsmm.h>
#include <xsimd/memory/xsimd_aligned_allocator.hpp>

namespace tf::xsmm {

namespace {

constexpr std::size_t kTile = 128;   // rows and columns of C per kernel
constexpr std::size_t kChunk = 256;  // k per kernel for A^T B

// The kernel of one tile. libxsmm is column-major: row-major C = op(A) B is column-major C^T = B^T op(A)^T, so the
// kernel's first operand is our B (its m = the tile's columns) and its second our A (its n = the tile's rows);
// for A^T B that second operand is read transposed (LIBXSMM_GEMM_FLAG_TRANS_B). Null when libxsmm has none.
libxsmm_smmfunction kernel(bool trans_a, std::size_t rows, std::size_t cols, std::size_t depth, std::size_t lda,
                           std::size_t ldb, std::size_t ldc, float beta) {
  static const bool initialised = (libxsmm_init(), true);
  (void)initialised;
  const libxsmm_blasint l_first = static_cast<libxsmm_blasint>(ldb), l_second = static_cast<libxsmm_blasint>(lda),
                        l_c = static_cast<libxsmm_blasint>(ldc);
  const float alpha = 1;
  const int flags = trans_a ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
  const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  return libxsmm_smmdispatch(static_cast<libxsmm_blasint>(cols), static_cast<libxsmm_blasint>(rows),
                             static_cast<libxsmm_blasint>(depth), &l_first, &l_second, &l_c, &alpha, &beta, &flags,
                             &prefetch);
}

// visit(i0, rows, j0, cols, k0, depth, beta) for every kernel call of the product, in order; stops at a false.
template <class Visit>
bool for_each_call(bool trans_a, std::size_t m, std::size_t n, std::size_t k, float beta, Visit visit) {
  const std::size_t chunk = trans_a ? kChunk : k;
  for (std::size_t i0 = 0; i0 < m; i0 += kTile)
    for (std::size_t j0 = 0; j0 < n; j0 += kTile)
      for (std::size_t k0 = 0; k0 < k; k0 += chunk)
        if (!visit(i0, std::min(kTile, m - i0), j0, std::min(kTile, n - j0), k0, std::min(chunk, k - k0),
                   k0 == 0 ? beta : 1.0f))
          return false;
  return true;
}

}  // namespace

bool built_in() { return true; }

const char* target() {
  static const bool initialised = (libxsmm_init(), true);
  (void)initialised;
  return libxsmm_get_target_arch();
}

int vector_bits() {
  target();  // initialised
  const int arch = libxsmm_get_target_archid();
  return arch >= LIBXSMM_X86_AVX512 ? 512 : arch >= LIBXSMM_X86_AVX2 ? 256 : 0;
}

bool product(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
             std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  constexpr std::size_t most = INT_MAX;
  if (alpha != 1.0f || (beta != 0.0f && beta != 1.0f) || m == 0 || n == 0 || k == 0 || (trans_a && trans_b) ||
      std::max({m, n, k, lda, ldb, ldc}) > most)
    return false;
  if (trans_b) {  // B [n,k] (row stride ldb) transposed into [k,n] on this thread, then A B^T as A (B^T), which
                  // checks its kernels before it writes C
    thread_local std::vector<float, xsimd::aligned_allocator<float, 64>> transposed;
    if (transposed.size() < k * n) transposed.resize(k * n);
    // column-major: B is k x n with leading dimension ldb, its transpose n x k with leading dimension n
    libxsmm_otrans(transposed.data(), b, sizeof(float), static_cast<libxsmm_blasint>(k),
                   static_cast<libxsmm_blasint>(n), static_cast<libxsmm_blasint>(ldb), static_cast<libxsmm_blasint>(n));
    return product(false, false, m, n, k, alpha, a, lda, transposed.data(), n, beta, c, ldc);
  }
  auto have_kernel = [&](std::size_t, std::size_t rows, std::size_t, std::size_t cols, std::size_t, std::size_t depth,
                         float beta_k) { return kernel(trans_a, rows, cols, depth, lda, ldb, ldc, beta_k) != nullptr; };
  if (!for_each_call(trans_a, m, n, k, beta, have_kernel)) return false;  // before anything is written
  return for_each_call(trans_a, m, n, k, beta,
                       [&](std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, std::size_t k0,
                           std::size_t depth, float beta_k) {
                         const float* second = trans_a ? a + k0 * lda + i0 : a + i0 * lda;  // op(A)'s rows i0.., k0..
                         const float* first = trans_a ? b + k0 * ldb + j0 : b + j0;  // B's rows k0.., columns j0..
                         kernel(trans_a, rows, cols, depth, lda, ldb, ldc, beta_k)(first, second, c + i0 * ldc + j0);
                         return true;
                       });
}

}  // namespace tf::xsmm

#else  // built without libxsmm: every float product goes to OpenBLAS

namespace tf::xsmm {
bool built_in() { return false; }
const char* target() { return ""; }
int vector_bits() { return 0; }
bool product(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t, const float*,
             std::size_t, float, float*, std::size_t) {
  return false;
}
}  // namespace tf::xsmm

#endif
