// The one BLAS call site: every transpose combination against a plain triple loop, the one-row (GEMV) path, strided
// sub-matrices, products large enough to be cut into pieces equal at 1 and 2 threads, and the empty cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "support/helpers.hpp"
#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/gemm_xsmm.hpp"
#include "tinyformer/tensor/parallel.hpp"

using namespace tf;

namespace {

// C = alpha op(A) op(B) + beta C in double, row-major, A stored [m,k] or [k,m], B [k,n] or [n,k].
std::vector<double> reference(bool ta, bool tb, GemmShape s, double alpha, const std::vector<double>& a,
                              const std::vector<double>& b, double beta, std::vector<double> c) {
  for (std::size_t i = 0; i < s.m; ++i)
    for (std::size_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (std::size_t p = 0; p < s.k; ++p)
        sum += (ta ? a[p * s.m + i] : a[i * s.k + p]) * (tb ? b[j * s.k + p] : b[p * s.n + j]);
      c[i * s.n + j] = alpha * sum + beta * c[i * s.n + j];
    }
  return c;
}

std::vector<double> values(std::size_t n, std::uint64_t seed) {
  const Array<double> a = test::random_array({n}, seed);
  return {a.begin(), a.end()};
}

}  // namespace

TEST_CASE("tensor: gemm matches a triple loop for every transpose pair, one-row products included", "[tensor]") {
  for (GemmShape s : {GemmShape{5, 7, 3}, GemmShape{1, 9, 4}, GemmShape{1, 1, 6}, GemmShape{6, 1, 5}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO("m " << s.m << " n " << s.n << " k " << s.k << " ta " << ta << " tb " << tb);
        const auto a = values(s.m * s.k, 1), b = values(s.k * s.n, 2), c0 = values(s.m * s.n, 3);
        std::vector<double> c = c0;
        gemm<double>(ta, tb, s, 0.5, a.data(), b.data(), 2.0, c.data());
        const auto want = reference(ta, tb, s, 0.5, a, b, 2.0, c0);
        for (std::size_t i = 0; i < c.size(); ++i) CHECK(c[i] == Approx(want[i]).epsilon(1e-12));
        std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(c0.begin(), c0.end());
        gemm<float>(ta, tb, s, 0.5f, af.data(), bf.data(), 2.0f, cf.data());
        for (std::size_t i = 0; i < c.size(); ++i) CHECK(cf[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
      }
}

TEST_CASE("tensor: gemm_strided reads and writes sub-matrices through their row strides", "[tensor]") {
  // A is columns 2..4 of a [4,8] array, B columns 1..3 of [3,5], C columns 0..2 of [4,6]
  const auto big_a = values(32, 4), big_b = values(15, 5);
  std::vector<double> big_c(24, 7.0), a(12), b(9);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 3; ++j) a[i * 3 + j] = big_a[i * 8 + 2 + j];
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) b[i * 3 + j] = big_b[i * 5 + 1 + j];
  gemm_strided<double>(false, false, {4, 3, 3}, 1.0, big_a.data() + 2, 8, big_b.data() + 1, 5, 0.0, big_c.data(), 6);
  const auto want = reference(false, false, {4, 3, 3}, 1.0, a, b, 0.0, std::vector<double>(12));
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 3; ++j) CHECK(big_c[i * 6 + j] == Approx(want[i * 3 + j]).epsilon(1e-12));
    for (std::size_t j = 3; j < 6; ++j) CHECK(big_c[i * 6 + j] == 7.0);  // outside the sub-matrix: untouched
  }
}

TEST_CASE("tensor: a product cut into pieces gives the same bits at 1 and 2 threads", "[tensor]") {
  test::ThreadsGuard guard;
  const GemmShape s{512, 384, 256};  // 50M multiply-adds: cut into pieces
  const auto a64 = values(s.m * s.k, 6), b64 = values(s.k * s.n, 7);
  const std::vector<float> a(a64.begin(), a64.end()), b(b64.begin(), b64.end());
  std::vector<float> one(s.m * s.n), two(s.m * s.n);
  set_num_threads(1);
  gemm<float>(false, true, {s.m, s.n, s.k}, 1.f, a.data(), b.data(), 0.f, one.data());
  set_num_threads(2);
  gemm<float>(false, true, {s.m, s.n, s.k}, 1.f, a.data(), b.data(), 0.f, two.data());
  CHECK(one == two);
}

TEST_CASE("tensor: gemm with k = 0 scales C by beta, and an empty C is left alone", "[tensor]") {
  std::vector<double> c{1, 2, 3, 4};
  gemm<double>(false, false, {2, 2, 0}, 1.0, nullptr, nullptr, 0.5, c.data());
  CHECK(c == std::vector<double>{0.5, 1, 1.5, 2});
  gemm<double>(false, false, {2, 2, 0}, 1.0, nullptr, nullptr, 0.0, c.data());
  CHECK(c == std::vector<double>{0, 0, 0, 0});
  gemm<double>(false, false, {0, 2, 3}, 1.0, nullptr, nullptr, 0.0, nullptr);  // nothing to write
}

TEST_CASE("tensor: float A B and A^T B on libxsmm's tiles match a double loop across partial tiles, k chunks and beta",
          "[tensor]") {
  // 128 x 128 tiles of C with partial ones at the edges, k whole for A B and in chunks of 256 for A^T B (600 = 2 x 256
  // + 88), beta 0 and 1, and alpha 0.5, which libxsmm has no kernel for (OpenBLAS then takes the product). libxsmm is
  // forced (tensor/gemm_plan.hpp), else the measured choice might give every shape to OpenBLAS.
  const gemm_plan::Policy saved = gemm_plan::policy();
  if (xsmm::built_in()) gemm_plan::set_policy(gemm_plan::Policy::libxsmm);
  for (GemmShape s : {GemmShape{300, 170, 70}, GemmShape{130, 260, 600}, GemmShape{2, 3, 513}})
    for (bool ta : {false, true})
      for (float alpha : {1.0f, 0.5f})
        for (float beta : {0.0f, 1.0f}) {
          INFO("m " << s.m << " n " << s.n << " k " << s.k << " ta " << ta << " alpha " << alpha << " beta " << beta);
          const auto a = values(s.m * s.k, 11), b = values(s.k * s.n, 12), c0 = values(s.m * s.n, 13);
          const auto want = reference(ta, false, s, alpha, a, b, beta, c0);
          std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(c0.begin(), c0.end());
          gemm<float>(ta, false, s, alpha, af.data(), bf.data(), beta, cf.data());
          double worst = 0;
          for (std::size_t i = 0; i < cf.size(); ++i) worst = std::max(worst, std::abs(cf[i] - want[i]));
          CHECK(worst < 1e-4);  // float sums of up to 600 products of values in [-1, 1]
        }
  gemm_plan::set_policy(saved);
}
