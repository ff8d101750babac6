// Kept apart from xtensor-blas: <cblas.h> clashes with xflens' CBLAS enums in one TU.
#include "tinyformer/tensor/gemm.hpp"

#include <algorithm>
#include <ctime>
#include <mutex>
#include <vector>

#include <cblas.h>
#include <xsimd/config/xsimd_config.hpp>
#include <xsimd/memory/xsimd_aligned_allocator.hpp>

#include "tinyformer/tensor/blas_core.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/gemm_xsmm.hpp"
#include "tinyformer/tensor/median.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {
namespace {

int as_int(std::size_t v) { return static_cast<int>(v); }

// One row of C (m == 1: decoding one token) is a matrix-vector product: GEMM would pack all of op(B) for it.
//   c [1,n] = alpha a [1,k] op(B) + beta c   ==   c^T = alpha op(B)^T a^T + beta c^T
// a's k values are a row (stride 1) or, transposed, a column (stride lda).
void call_openblas(bool ta, bool tb, GemmShape s, float alpha, const float* a, std::size_t lda, const float* b,
                   std::size_t ldb, float beta, float* c, std::size_t ldc) {
  static const bool best_core = !blas::core_choice().running.empty();  // chosen before the first product (blas_core)
  (void)best_core;
  if (s.m == 1) {
    const int inc_a = ta ? as_int(lda) : 1;
    if (tb)  // op(B)^T = B [n,k]
      cblas_sgemv(CblasRowMajor, CblasNoTrans, as_int(s.n), as_int(s.k), alpha, b, as_int(ldb), a, inc_a, beta, c, 1);
    else  // op(B)^T = B^T, B [k,n]
      cblas_sgemv(CblasRowMajor, CblasTrans, as_int(s.k), as_int(s.n), alpha, b, as_int(ldb), a, inc_a, beta, c, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, as_int(s.m), as_int(s.n),
              as_int(s.k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

// Whether libxsmm can take the product at all (tensor/gemm_xsmm.hpp): A B, A^T B and A B^T (B transposed first),
// alpha 1, beta 0 or 1, more than one row.
bool xsmm_applies(bool ta, bool tb, GemmShape s, float alpha, float beta) {
  return xsmm::built_in() && !(ta && tb) && s.m > 1 && alpha == 1.0f && (beta == 0.0f || beta == 1.0f);
}

using Buffer = std::vector<float, xsimd::aligned_allocator<float, 64>>;

// Scratch operands of a float product (packed, 64-byte aligned as tf::Array's are).
struct Scratch {
  Buffer a, b, c;
  explicit Scratch(GemmShape s) : a(s.m * s.k), b(s.k * s.n), c(s.m * s.n) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 13) * 0.125f - 0.75f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  }
};

void run_on(gemm_plan::Backend backend, bool ta, bool tb, GemmShape s, Scratch& x) {
  const std::size_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
  if (backend == gemm_plan::Backend::openblas ||
      !xsmm::product(ta, tb, s.m, s.n, s.k, 1.0f, x.a.data(), lda, x.b.data(), ldb, 0.0f, x.c.data(), s.n))
    call_openblas(ta, tb, s, 1.0f, x.a.data(), lda, x.b.data(), ldb, 0.0f, x.c.data(), s.n);
}

// The CPU time of the calling thread, in us: unlike wall-clock time it leaves out the time that other processes held
// the core, which on a shared machine swung single timings by 2-5x.
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

}  // namespace

// Both libraries in pairs, one sample each, so that the load of a shared machine, which comes and goes, falls on
// both alike, and each sample in the thread's CPU time, not wall-clock time; a sample repeats the product until it
// lasts 200 us (tiny products take a few us). Timing each library alone by its fastest wall-clock run, as before,
// picked the slower library on a loaded machine: a burst of load during one library's runs swung a shape's
// comparison by up to 4x.
GemmTimes time_gemm_libraries(bool trans_a, bool trans_b, GemmShape s, int min_pairs, int max_pairs, double budget_us) {
  using gemm_plan::Backend;
  Scratch x(s);
  auto time_us = [&](Backend backend, int reps) {
    const double t0 = thread_cpu_us();
    for (int r = 0; r < reps; ++r) run_on(backend, trans_a, trans_b, s, x);
    return (thread_cpu_us() - t0) / reps;
  };
  time_us(Backend::libxsmm, 1);  // untimed: generates libxsmm's kernels, touches the buffers
  const double first = time_us(Backend::openblas, 1);
  const int reps = static_cast<int>(std::clamp(200.0 / std::max(first, 1e-3), 1.0, 1000.0));
  std::vector<double> openblas, libxsmm, ratios;
  double spent = 0;
  for (int pair = 0; pair < max_pairs && (pair < min_pairs || spent < budget_us); ++pair) {
    const bool xsmm_first = pair % 2 == 1;  // in turns, so that neither always runs on the other's warm caches
    const double t1 = time_us(xsmm_first ? Backend::libxsmm : Backend::openblas, reps);
    const double t2 = time_us(xsmm_first ? Backend::openblas : Backend::libxsmm, reps);
    openblas.push_back(xsmm_first ? t2 : t1);
    libxsmm.push_back(xsmm_first ? t1 : t2);
    ratios.push_back(libxsmm.back() / openblas.back());
    spent += (t1 + t2) * reps;
  }
  return {median(openblas), median(libxsmm), median(ratios), static_cast<int>(ratios.size())};
}

GemmCheck check_gemm_choice(const gemm_plan::Shape& shape, gemm_plan::Backend chosen) {
  GemmCheck c;
  c.times = time_gemm_libraries(shape.trans_a, shape.trans_b, {shape.m, shape.n, shape.k}, 5, 9, 3e5);
  const double r = c.times.libxsmm_over_openblas;  // the median of paired ratios
  c.choice_speed = chosen == gemm_plan::Backend::libxsmm ? std::min(1.0, 1.0 / r) : std::min(1.0, r);
  return c;
}

namespace {

// The library of a float product that libxsmm could take: the plan's, or else the policy's (tensor/gemm_plan.hpp):
// auto's rule, a forced library, or under measure the faster of the two measured now (once per shape and process;
// one shape is measured at a time): libxsmm when the median of its paired times over OpenBLAS's is below 1. At least
// 5 pairs, then more while the measurement has taken under 0.2 s, at most 15 pairs.
gemm_plan::Backend choose(bool ta, bool tb, GemmShape s) {
  const gemm_plan::Shape shape{ta, tb, s.m, s.n, s.k};
  gemm_plan::Backend backend = gemm_plan::Backend::openblas;
  if (gemm_plan::find(shape, backend)) return backend;
  gemm_plan::Choice choice;
  choice.shape = shape;
  switch (gemm_plan::policy()) {
    case gemm_plan::Policy::automatic:
      choice.backend = gemm_plan::rule(shape);
      return gemm_plan::record(choice);
    case gemm_plan::Policy::libxsmm:
      choice.backend = gemm_plan::Backend::libxsmm;
      return gemm_plan::record(choice);
    case gemm_plan::Policy::openblas:
      choice.backend = gemm_plan::Backend::openblas;
      return gemm_plan::record(choice);
    case gemm_plan::Policy::measure:
      break;
  }
  static std::mutex measuring;
  std::lock_guard<std::mutex> lock(measuring);
  if (gemm_plan::find(shape, backend)) return backend;  // another thread measured it meanwhile
  const GemmTimes t = time_gemm_libraries(ta, tb, s, 5, 15, 2e5);
  choice.openblas_us = t.openblas_us;
  choice.libxsmm_us = t.libxsmm_us;
  choice.backend = t.libxsmm_over_openblas < 1 ? gemm_plan::Backend::libxsmm : gemm_plan::Backend::openblas;
  return gemm_plan::record(choice);
}

// One product in float, on the library that tensor/gemm_plan.hpp chose for its shape.
void call_blas(bool ta, bool tb, GemmShape s, float alpha, const float* a, std::size_t lda, const float* b,
               std::size_t ldb, float beta, float* c, std::size_t ldc) {
  if (xsmm_applies(ta, tb, s, alpha, beta) && choose(ta, tb, s) == gemm_plan::Backend::libxsmm &&
      xsmm::product(ta, tb, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
  call_openblas(ta, tb, s, alpha, a, lda, b, ldb, beta, c, ldc);
}

void call_blas(bool ta, bool tb, GemmShape s, double alpha, const double* a, std::size_t lda, const double* b,
               std::size_t ldb, double beta, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, as_int(s.m), as_int(s.n),
              as_int(s.k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

// One BLAS call, with the empty cases spelled out.
template <class S>
bool trivial_product(GemmShape s, S beta, S* c, std::size_t ldc) {
  if (s.m == 0 || s.n == 0) return true;
  if (s.k == 0) {  // C = beta * C; spelled out because BLAS implementations differ for k == 0
    for (std::size_t i = 0; i < s.m; ++i)
      for (std::size_t j = 0; j < s.n; ++j) c[i * ldc + j] = beta == S(0) ? S(0) : beta * c[i * ldc + j];
    return true;
  }
  return false;
}

}  // namespace

template <class S>
void gemm_whole(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, const S* b, S beta, S* c) {
  const std::size_t lda = trans_a ? s.m : s.k, ldb = trans_b ? s.k : s.n;
  if (!trivial_product(s, beta, c, s.n)) call_blas(trans_a, trans_b, s, alpha, a, lda, b, ldb, beta, c, s.n);
}

template <class S>
void gemm_strided(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, std::size_t lda, const S* b,
                  std::size_t ldb, S beta, S* c, std::size_t ldc) {
  if (trivial_product(s, beta, c, ldc)) return;
  // C is cut into pieces of whole rows (or whole columns when C is wide and short), and the pieces are
  // shared out over the threads. The cut depends on the shape only, never on the thread count: BLAS
  // picks its kernel (and so its rounding) by the size of each call, so one thread computes exactly the
  // same pieces in turn, and the result is bit-identical whatever the thread count.
  constexpr std::size_t block = 16;  // rows or columns: pieces are multiples of this
  // Each piece packs the shared operand again, so few pieces: enough for two cores, four for big products.
  const std::size_t max_pieces = s.m * s.n * s.k >= (std::size_t{1} << 30) ? 4 : 2;
  const std::size_t macs = s.m * s.n * s.k;
  const bool by_rows = s.m >= s.n;
  const std::size_t extent = by_rows ? s.m : s.n;
  const std::size_t blocks = (extent + block - 1) / block;
  std::size_t pieces = 1;
  while (pieces * 2 <= max_pieces && pieces * 2 <= blocks && macs / (pieces * 2) >= kMinPieceMacs) pieces *= 2;
  if (pieces == 1) {
    call_blas(trans_a, trans_b, s, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  parallel_for(pieces, 1, [&](std::size_t first, std::size_t last) {
    for (std::size_t piece = first; piece < last; ++piece) {
      const std::size_t i0 = blocks * piece / pieces * block;
      const std::size_t i1 = std::min(extent, blocks * (piece + 1) / pieces * block);
      if (by_rows) {  // rows i0..i1 of C = rows of op(A) times op(B)
        const S* ai = trans_a ? a + i0 : a + i0 * lda;
        call_blas(trans_a, trans_b, {i1 - i0, s.n, s.k}, alpha, ai, lda, b, ldb, beta, c + i0 * ldc, ldc);
      } else {  // columns i0..i1 of C = op(A) times columns of op(B)
        const S* bj = trans_b ? b + i0 * ldb : b + i0;
        call_blas(trans_a, trans_b, {s.m, i1 - i0, s.k}, alpha, a, lda, bj, ldb, beta, c + i0, ldc);
      }
    }
  });
}

template <class S>
void gemm(bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, const S* b, S beta, S* c) {
  // packed row-major: the leading dimension is the stored row length
  gemm_strided(trans_a, trans_b, s, alpha, a, trans_a ? s.m : s.k, b, trans_b ? s.k : s.n, beta, c, s.n);
}

template <class S>
void batched_gemm(std::size_t batch, bool trans_a, bool trans_b, GemmShape s, S alpha, const S* a, std::size_t stride_a,
                  const S* b, std::size_t stride_b, S beta, S* c, std::size_t stride_c) {
  for (std::size_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, s, alpha, a + i * stride_a, b + i * stride_b, beta, c + i * stride_c);
}

template void gemm_strided<float>(bool, bool, GemmShape, float, const float*, std::size_t, const float*, std::size_t,
                                  float, float*, std::size_t);
template void gemm_strided<double>(bool, bool, GemmShape, double, const double*, std::size_t, const double*,
                                   std::size_t, double, double*, std::size_t);
template void gemm_whole<float>(bool, bool, GemmShape, float, const float*, const float*, float, float*);
template void gemm_whole<double>(bool, bool, GemmShape, double, const double*, const double*, double, double*);
template void gemm<float>(bool, bool, GemmShape, float, const float*, const float*, float, float*);
template void gemm<double>(bool, bool, GemmShape, double, const double*, const double*, double, double*);
template void batched_gemm<float>(std::size_t, bool, bool, GemmShape, float, const float*, std::size_t, const float*,
                                  std::size_t, float, float*, std::size_t);
template void batched_gemm<double>(std::size_t, bool, bool, GemmShape, double, const double*, std::size_t,
                                   const double*, std::size_t, double, double*, std::size_t);

}  // namespace tf
