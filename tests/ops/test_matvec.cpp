// The decoder's matrix-vector kernels (ops/kernels/matvec.hpp): float32 rows against a float64 reference, the int8
// quantisation against its formula (llama2.c's runq.c), and the int8 product against the exact group sums, over
// shapes that cover the 4-row blocks, their remainders, odd group counts, bias and accumulation.
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "tinyformer/ops/kernels/matvec.hpp"
#include "tinyformer/tensor/random.hpp"

using namespace tf;
using kernels::kMatvecAlign;
using kernels::kQ8Group;

namespace {

std::size_t padded_width(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

std::vector<float> uniform_values(std::size_t n, Rng& rng, double scale = 1.0) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>((2 * rng.uniform() - 1) * scale);
  return v;
}

// A float buffer of n values whose data starts on a 64-byte boundary, zero-filled.
struct AlignedFloats {
  explicit AlignedFloats(std::size_t n) : storage(n + 16, 0.f) {
    auto p = reinterpret_cast<std::uintptr_t>(storage.data());
    data = storage.data() + (64 - p % 64) % 64 / sizeof(float);
  }
  std::vector<float> storage;
  float* data;
};

}  // namespace

TEST_CASE("kernels: matvec gives the float64 product of every row, with bias and a residual added", "[kernels]") {
  Rng rng(3);
  for (std::size_t rows : {1, 3, 4, 5, 9, 64})
    for (std::size_t cols : {1, 15, 16, 17, 48, 100})
      for (int variant = 0; variant < 4; ++variant) {
        const bool with_bias = variant & 1, accumulate = variant & 2;
        INFO(rows << " x " << cols << " bias " << with_bias << " accumulate " << accumulate);
        const std::size_t ld = padded_width(cols, kMatvecAlign);
        const std::vector<float> w = uniform_values(rows * cols, rng), x = uniform_values(cols, rng),
                                 bias = uniform_values(rows, rng);
        AlignedFloats packed(rows * ld), xp(ld);
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t j = 0; j < cols; ++j) packed.data[r * ld + j] = w[r * cols + j];
        for (std::size_t j = 0; j < cols; ++j) xp.data[j] = x[j];
        std::vector<float> y = uniform_values(rows, rng), before = y;
        // two calls on parts of the rows, as the decoder's threads make them
        const std::size_t cut = rows / 2;
        kernels::matvec<float>(0, cut, ld, packed.data, xp.data, with_bias ? bias.data() : nullptr, y.data(),
                               accumulate);
        kernels::matvec<float>(cut, rows, ld, packed.data, xp.data, with_bias ? bias.data() : nullptr, y.data(),
                               accumulate);
        for (std::size_t r = 0; r < rows; ++r) {
          double ref = (with_bias ? bias[r] : 0.0) + (accumulate ? before[r] : 0.0);
          double magnitude = std::fabs(ref);
          for (std::size_t j = 0; j < cols; ++j) {
            ref += double(w[r * cols + j]) * x[j];
            magnitude += std::fabs(double(w[r * cols + j]) * x[j]);
          }
          CHECK(std::fabs(y[r] - ref) <= 1e-6 * magnitude + 1e-30);
        }
      }
}

TEST_CASE("kernels: quantize_q8 scales each group of 32 by its largest magnitude over 127 and rounds half away from "
          "zero, as runq.c",
          "[kernels]") {
  Rng rng(5);
  for (std::size_t n : {1, 31, 32, 33, 64, 100}) {
    INFO("n " << n);
    std::vector<float> x = uniform_values(n, rng, 3.0);
    if (n >= 40)
      for (std::size_t j = 32; j < 40; ++j) x[j] = 0.f;  // part of a group zero
    if (n == 64)
      for (std::size_t j = 32; j < 64; ++j) x[j] = 0.f;  // a whole group zero: scale 0, every value 0
    const std::size_t groups = (n + kQ8Group - 1) / kQ8Group;
    std::vector<std::int8_t> q(groups * kQ8Group, 99);
    std::vector<float> s(groups);
    kernels::quantize_q8<float>(n, x.data(), q.data(), s.data());
    for (std::size_t g = 0; g < groups; ++g) {
      float amax = 0;
      for (std::size_t j = g * kQ8Group; j < std::min(n, (g + 1) * kQ8Group); ++j)
        amax = std::max(amax, std::fabs(x[j]));
      CHECK(s[g] == amax / 127.f);
      for (std::size_t j = g * kQ8Group; j < (g + 1) * kQ8Group; ++j) {
        const long expected = j < n && amax > 0 ? std::lround(x[j] / s[g]) : 0;
        CHECK(q[j] == expected);
        CHECK(std::abs(q[j]) <= 127);
      }
    }
  }
  // a group whose largest magnitude is 127: scale 1, and the halves round away from zero (not to even)
  std::vector<float> x{127.f, 63.5f, -63.5f, 0.5f, -0.5f, 1.5f, 2.5f};
  std::vector<std::int8_t> q(kQ8Group);
  float s = 0;
  kernels::quantize_q8<float>(x.size(), x.data(), q.data(), &s);
  CHECK(s == 1.f);
  CHECK(std::vector<int>(q.begin(), q.begin() + 7) == std::vector<int>{127, 64, -64, 1, -1, 2, 3});
}

TEST_CASE("kernels: matvec_q8 sums each group's int8 products exactly and scales them, for odd and even group counts",
          "[kernels]") {
  Rng rng(7);
  for (std::size_t rows : {1, 4, 5, 11})
    for (std::size_t cols : {1, 32, 40, 64, 96, 288, 300})
      for (int variant = 0; variant < 4; ++variant) {
        const bool with_bias = variant & 1, accumulate = variant & 2;
        INFO(rows << " x " << cols << " bias " << with_bias << " accumulate " << accumulate);
        const std::size_t groups = (cols + kQ8Group - 1) / kQ8Group;
        std::vector<float> w = uniform_values(rows * cols, rng), x = uniform_values(cols, rng, 2.0),
                           bias = uniform_values(rows, rng);
        if (cols >= 2) w[0] = -1.f, x[0] = -2.f, w[1] = 1.f, x[1] = 2.f;  // +-127 times +-127: the largest products
        std::vector<std::int8_t> wq(rows * groups * kQ8Group), xq(groups * kQ8Group);
        std::vector<float> ws(rows * groups), xs(groups);
        for (std::size_t r = 0; r < rows; ++r)
          kernels::quantize_q8<float>(cols, w.data() + r * cols, wq.data() + r * groups * kQ8Group,
                                      ws.data() + r * groups);
        kernels::quantize_q8<float>(cols, x.data(), xq.data(), xs.data());
        std::vector<float> y = uniform_values(rows, rng), before = y;
        const std::size_t cut = rows / 2;
        for (auto [r0, r1] : {std::pair<std::size_t, std::size_t>{0, cut}, {cut, rows}})
          kernels::matvec_q8<float>(r0, r1, groups, wq.data(), ws.data(), xq.data(), xs.data(),
                                    with_bias ? bias.data() : nullptr, y.data(), accumulate);
        for (std::size_t r = 0; r < rows; ++r) {
          double ref = (with_bias ? bias[r] : 0.0) + (accumulate ? before[r] : 0.0), magnitude = std::fabs(ref);
          for (std::size_t g = 0; g < groups; ++g) {
            long sum = 0;  // exact
            for (std::size_t j = g * kQ8Group; j < (g + 1) * kQ8Group; ++j)
              sum += long(wq[r * groups * kQ8Group + j]) * long(xq[j]);
            const double term = double(sum) * double(ws[r * groups + g] * xs[g]);
            ref += term;
            magnitude += std::fabs(term);
          }
          CHECK(std::fabs(y[r] - ref) <= 1e-6 * magnitude + 1e-30);
        }
      }
}
