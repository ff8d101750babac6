// Matrix-vector kernels for decoding: the layouts and formulas are in matvec.hpp.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/matvec.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace TF_KERNEL_NAMESPACE {

namespace {

constexpr std::size_t kRowsAtOnce = 4;  // independent row streams in flight (measured: 4 and 8 tie, 1-2 are slower)

// y[r] = acc (+ bias[r]) (+ y[r])
template <class S>
inline void finish_row(S acc, std::size_t r, const S* bias, S* y, bool accumulate) {
  if (bias) acc += bias[r];
  y[r] = accumulate ? y[r] + acc : acc;
}

}  // namespace

template <class S>
void matvec(std::size_t r0, std::size_t r1, std::size_t ld, const S* w, const S* x, const S* bias, S* y,
            bool accumulate) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  static_assert(kMatvecAlign % W == 0, "a row's padded width must hold whole SIMD registers");
  std::size_t r = r0;
  for (; r + kRowsAtOnce <= r1; r += kRowsAtOnce) {
    const S* w0 = w + r * ld;
    // No software prefetch: the hardware's keeps four float rows in flight. On an AMD Zen 5, prefetching the next
    // block's rows made decoding 7-17% slower (docs/performance.md, "Round four on an AMD Zen 5"); the int8 rows below,
    // with more work per byte, gain from it.
    B a0(S(0)), a1(S(0)), a2(S(0)), a3(S(0));
    for (std::size_t j = 0; j < ld; j += W) {
      const B xv = B::load_aligned(x + j);
      a0 = xsimd::fma(B::load_aligned(w0 + j), xv, a0);
      a1 = xsimd::fma(B::load_aligned(w0 + ld + j), xv, a1);
      a2 = xsimd::fma(B::load_aligned(w0 + 2 * ld + j), xv, a2);
      a3 = xsimd::fma(B::load_aligned(w0 + 3 * ld + j), xv, a3);
    }
    finish_row(xsimd::hadd(a0), r, bias, y, accumulate);
    finish_row(xsimd::hadd(a1), r + 1, bias, y, accumulate);
    finish_row(xsimd::hadd(a2), r + 2, bias, y, accumulate);
    finish_row(xsimd::hadd(a3), r + 3, bias, y, accumulate);
  }
  for (; r < r1; ++r) {
    const S* wr = w + r * ld;
    B a(S(0));
    for (std::size_t j = 0; j < ld; j += W) a = xsimd::fma(B::load_aligned(wr + j), B::load_aligned(x + j), a);
    finish_row(xsimd::hadd(a), r, bias, y, accumulate);
  }
}

template <class S>
void quantize_q8(std::size_t n, const S* x, std::int8_t* q, S* s) {
  const std::size_t groups = (n + kQ8Group - 1) / kQ8Group;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t j0 = g * kQ8Group, j1 = std::min(n, j0 + kQ8Group);
    S amax = 0;
    for (std::size_t j = j0; j < j1; ++j) amax = std::max(amax, std::fabs(x[j]));
    const S scale = amax / S(127);
    s[g] = scale;
    for (std::size_t j = j0; j < j0 + kQ8Group; ++j)  // an all-zero group (scale 0) stays 0
      q[j] = j < j1 && scale > 0 ? static_cast<std::int8_t>(std::round(x[j] / scale)) : std::int8_t{0};
  }
}

namespace {

// The int32 sum of one group's products, exact.
inline std::int32_t group_dot_scalar(const std::int8_t* w, const std::int8_t* x) {
  std::int32_t sum = 0;
  for (std::size_t k = 0; k < kQ8Group; ++k) sum += static_cast<std::int32_t>(w[k]) * static_cast<std::int32_t>(x[k]);
  return sum;
}

// Rows [r0, r1) in plain loops: the SIMD paths' remainder rows, double, and CPUs without AVX2.
template <class S>
void matvec_q8_plain(std::size_t r0, std::size_t r1, std::size_t groups, const std::int8_t* wq, const S* ws,
                     const std::int8_t* xq, const S* xs, const S* bias, S* y, bool accumulate) {
  const std::size_t ld = groups * kQ8Group;
  for (std::size_t r = r0; r < r1; ++r) {
    S total = 0;
    for (std::size_t g = 0; g < groups; ++g)
      total += static_cast<S>(group_dot_scalar(wq + r * ld + g * kQ8Group, xq + g * kQ8Group)) *
               (xs[g] * ws[r * groups + g]);
    finish_row(total, r, bias, y, accumulate);
  }
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// The scales of groups g and g + 1 spread over the int32 lanes that sum them: [s[g] x8, s[g+1] x8]; with `one`, the
// last group alone: [s[g] x8, 0 x8].
inline __m512 group_scales(const float* s, bool one) {
  const __m512i spread = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m128 pair = one ? _mm_load_ss(s) : _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(s)));
  return _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(pair));
}

// Two groups (64 bytes) per register, int32 lanes 0-7 summing the first group, 8-15 the second; a last odd group is
// read with a masked load (the other half zero). x is split once per pair into |x| (unsigned) and its sign mask, and
// each row's bytes are negated where x is negative, so vpdpbusd(|x|, w * sign x) sums w x exactly (|x|, |w| <= 127).
void matvec_q8_rows(std::size_t r0, std::size_t r1, std::size_t groups, const std::int8_t* wq, const float* ws,
                    const std::int8_t* xq, const float* xs, const float* bias, float* y, bool accumulate) {
  const std::size_t ld = groups * kQ8Group, pairs = (groups + 1) / 2;
  auto load = [](const std::int8_t* p, __mmask64 bytes) { return _mm512_maskz_loadu_epi8(bytes, p); };
  std::size_t r = r0;
  for (; r + kRowsAtOnce <= r1; r += kRowsAtOnce) {
    const std::int8_t* w0 = wq + r * ld;
    const std::int8_t* next = r + 2 * kRowsAtOnce <= r1 ? w0 + kRowsAtOnce * ld : nullptr;
    __m512 acc[kRowsAtOnce];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (std::size_t p = 0; p < pairs; ++p) {
      const bool one = 2 * p + 1 == groups;
      const __mmask64 bytes = one ? 0xffffffffULL : ~0ULL;
      const __m512i xv = load(xq + p * 64, bytes);
      const __m512i xabs = _mm512_abs_epi8(xv);
      const __mmask64 negative = _mm512_movepi8_mask(xv);
      const __m512 xscale = group_scales(xs + 2 * p, one);
      for (std::size_t i = 0; i < kRowsAtOnce; ++i) {
        const std::int8_t* wr = w0 + i * ld + p * 64;
        if (next) prefetch(next + i * ld + p * 64);
        __m512i wv = load(wr, bytes);
        wv = _mm512_mask_sub_epi8(wv, negative, _mm512_setzero_si512(), wv);
        const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), xabs, wv);
        const __m512 scale = _mm512_mul_ps(xscale, group_scales(ws + (r + i) * groups + 2 * p, one));
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, acc[i]);
      }
    }
    for (std::size_t i = 0; i < kRowsAtOnce; ++i) finish_row(_mm512_reduce_add_ps(acc[i]), r + i, bias, y, accumulate);
  }
  matvec_q8_plain(r, r1, groups, wq, ws, xq, xs, bias, y, accumulate);
}
#elif defined(__AVX2__)
// One group (32 bytes) per register: vpmaddubsw(|x|, w * sign x) gives exact int16 pair sums (at most
// 2 * 127 * 127 < 32767), vpmaddwd with ones widens them to int32.
void matvec_q8_rows(std::size_t r0, std::size_t r1, std::size_t groups, const std::int8_t* wq, const float* ws,
                    const std::int8_t* xq, const float* xs, const float* bias, float* y, bool accumulate) {
  const std::size_t ld = groups * kQ8Group;
  const __m256i ones = _mm256_set1_epi16(1);
  std::size_t r = r0;
  for (; r + kRowsAtOnce <= r1; r += kRowsAtOnce) {
    const std::int8_t* w0 = wq + r * ld;
    const std::int8_t* next = r + 2 * kRowsAtOnce <= r1 ? w0 + kRowsAtOnce * ld : nullptr;
    __m256 acc[kRowsAtOnce];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (std::size_t g = 0; g < groups; ++g) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + g * kQ8Group));
      const __m256i xabs = _mm256_sign_epi8(xv, xv);
      for (std::size_t i = 0; i < kRowsAtOnce; ++i) {
        const std::int8_t* wr = w0 + i * ld + g * kQ8Group;
        if (next && g % 2 == 0) prefetch(next + i * ld + g * kQ8Group);
        const __m256i wv = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr)), xv);
        const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(xabs, wv), ones);
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(xs[g] * ws[(r + i) * groups + g]), acc[i]);
      }
    }
    for (std::size_t i = 0; i < kRowsAtOnce; ++i) {
      const __m128 half = _mm_add_ps(_mm256_castps256_ps128(acc[i]), _mm256_extractf128_ps(acc[i], 1));
      const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
      finish_row(_mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter))), r + i, bias, y, accumulate);
    }
  }
  matvec_q8_plain(r, r1, groups, wq, ws, xq, xs, bias, y, accumulate);
}
#endif

}  // namespace

template <class S>
void matvec_q8(std::size_t r0, std::size_t r1, std::size_t groups, const std::int8_t* wq, const S* ws,
               const std::int8_t* xq, const S* xs, const S* bias, S* y, bool accumulate) {
#if defined(__AVX2__)
  if constexpr (std::is_same_v<S, float>) {
    matvec_q8_rows(r0, r1, groups, wq, ws, xq, xs, bias, y, accumulate);
    return;
  }
#endif
  matvec_q8_plain(r0, r1, groups, wq, ws, xq, xs, bias, y, accumulate);
}

TF_KERNEL_INSTANTIATE(TF_MATVEC_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
