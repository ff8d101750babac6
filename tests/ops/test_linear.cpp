// linear: the fused x W^T + b against matmul + add, float64 gradchecks (with and without bias, leading
// batch dims, a weight used twice), and the same bits at 1 and 2 threads.
#include <catch2/catch.hpp>
#include <xtensor-blas/xlinalg.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

}  // namespace

TEST_CASE("ops: linear equals matmul with the transposed weight plus the bias", "[ops]") {
  const Var<double> x(random_array({2, 3, 4}, 1)), w(random_array({5, 4}, 2)), b(random_array({5}, 3));
  const Array<double> want = add(matmul(x, w, false, true), b).value();
  CHECK(xt::allclose(linear(x, w, b).value(), want, 1e-12, 1e-12));
  CHECK(xt::allclose(linear(x, w, Var<double>()).value(), matmul(x, w, false, true).value(), 1e-12, 1e-12));
  CHECK_THROWS_WITH(linear(x, Var<double>(random_array({5, 3}, 4)), b), Catch::Contains("weight must be [out, in]"));
  CHECK_THROWS_WITH(linear(x, w, Var<double>(random_array({4}, 5))), Catch::Contains("bias [4] must be [out] = [5]"));
}

TEST_CASE("gradcheck: linear with bias, without bias, and 3-D input", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return linear(in[0], in[1], in[2]); },
                              {random_array({3, 4}, 6), random_array({5, 4}, 7), random_array({5}, 8)}, {},
                              {"x", "weight", "bias"}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return linear(in[0], in[1], Var<double>()); },
                              {random_array({3, 4}, 9), random_array({2, 4}, 10)}, {}, {"x", "weight"}));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return linear(in[0], in[1], in[2]); },
                              {random_array({2, 3, 4}, 11), random_array({5, 4}, 12), random_array({5}, 13)}, {},
                              {"x", "weight", "bias"}));
}

TEST_CASE("gradcheck: linear accumulates into gradients that already hold a contribution", "[gradcheck][ops]") {
  // the weight, the bias and x each get two contributions: the second backward write accumulates (beta 1)
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        const Var<double> h = linear(in[0], in[1], in[2]);  // [3,4] -> [3,4]
        return linear(h, in[1], in[2]);
      },
      {random_array({3, 4}, 14), random_array({4, 4}, 15), random_array({4}, 16)}, {}, {"x", "weight", "bias"}));
}

TEST_CASE("ops: linear forward and gradients are bit-identical at 1 and 2 threads", "[ops][threads]") {
  test::ThreadsGuard guard;
  // big enough that gemm splits the products and the bias sum is split over columns
  const auto xv = test::random_array_f({4, 96, 64}, 17), wv = test::random_array_f({192, 64}, 18);
  const auto bv = test::random_array_f({192}, 19), gv = test::random_array_f({4, 96, 192}, 20);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Var<float> x(xv, true), w(wv, true), b(bv, true);
    const Var<float> y = linear(x, w, b);
    y.backward(gv);
    return std::vector<Array<float>>{y.value(), x.grad(), w.grad(), b.grad()};
  };
  const auto one = run(1), two = run(2);
  for (std::size_t i = 0; i < one.size(); ++i) {
    INFO("array " << i << " (y, dx, dW, db)");
    CHECK(one[i] == two[i]);
  }
}

TEST_CASE("ops: linear_gelu equals gelu of linear, and its gradients pass gradcheck", "[gradcheck][ops]") {
  const Var<double> x(random_array({2, 3, 4}, 21)), w(random_array({6, 4}, 22)), b(random_array({6}, 23));
  CHECK(xt::allclose(linear_gelu(x, w, b).value(), gelu(linear(x, w, b)).value(), 1e-14, 1e-14));
  REQUIRE_GRADCHECK(gradcheck([](const Inputs& in) { return linear_gelu(in[0], in[1], in[2]); },
                              {random_array({2, 3, 4}, 24, -2, 2), random_array({6, 4}, 25), random_array({6}, 26)}, {},
                              {"x", "weight", "bias"}));
  // the output gradient is kept intact when the caller asked to retain it
  Var<double> xv(random_array({3, 4}, 27), true), wv(random_array({5, 4}, 28), true);
  Var<double> y = linear_gelu(xv, wv, Var<double>());
  y.retain_grad();
  const Array<double> seed = random_array({3, 5}, 29);
  y.backward(seed);
  CHECK(y.grad() == seed);
}

TEST_CASE("ops: linear_gelu's gradients in float are those of gelu of linear, bit for bit", "[ops]") {
  // The fused op keeps gelu' from its forward instead of recomputing it: the same values. 7 x 37 outputs: whole SIMD
  // batches and a scalar tail.
  const Array<float> x0 = xt::cast<float>(random_array({7, 9}, 31, -3, 3)),
                     w0 = xt::cast<float>(random_array({37, 9}, 32));
  const Array<float> b0 = xt::cast<float>(random_array({37}, 33)), seed = xt::cast<float>(random_array({7, 37}, 34));
  auto grads = [&](bool fused) {
    Var<float> x(x0, true), w(w0, true), b(b0, true);
    Var<float> y = fused ? linear_gelu(x, w, b) : gelu(linear(x, w, b));
    y.backward(seed);
    return std::vector<Array<float>>{y.value(), x.grad(), w.grad(), b.grad()};
  };
  const auto fused = grads(true), apart = grads(false);
  for (std::size_t i = 0; i < fused.size(); ++i) {
    INFO("array " << i << " (y, dx, dW, db)");
    CHECK(fused[i] == apart[i]);
  }
}

TEST_CASE("ops: a linear whose backward runs in halves gives a float64 reference's gradients, the same at 1 and 2 "
          "threads",
          "[ops][threads]") {
  // 1040 x 136 x 120 multiply-adds: past the size (and the rows) where dx is cut into halves of rows and dW into
  // halves of its sum over rows (the cut, 512, leaves halves of 512 and 528 rows). Each of x and W alone may require
  // grad, and a second backward through the kept graph adds to the gradients the first one left (beta 1 in both).
  test::ThreadsGuard guard;
  const std::size_t R = 1040, in = 136, out = 120;
  const auto xv = test::random_array_f({R, in}, 51), wv = test::random_array_f({out, in}, 52);
  const auto bv = test::random_array_f({out}, 53), gv = test::random_array_f({R, out}, 54);
  // The reference in float64 through BLAS's dgemm: the same sums as loops, and a second rather than half a minute
  // under qemu-aarch64, where this file's -O0 loops ran.
  const Array<double> xd = xt::cast<double>(xv), wd = xt::cast<double>(wv), gd = xt::cast<double>(gv);
  const Array<double> dx_ref = xt::linalg::dot(gd, wd);                                // [R, out] [out, in]
  const Array<double> dw_ref = xt::linalg::dot(Array<double>(xt::transpose(gd)), xd);  // [out, R] [R, in]
  const Array<double> db_ref = xt::sum(gd, {0});                                       // [out]
  auto close = [](const Array<float>& got, const Array<double>& want, int times) {
    const Array<double> scaled = want * static_cast<double>(times);
    return xt::allclose(xt::cast<double>(got), scaled, 1e-4, 1e-4);
  };
  for (const bool x_grad : {true, false})
    for (const bool w_grad : {true, false}) {
      if (!x_grad && !w_grad) continue;
      for (const int backwards : {1, 2}) {
        std::vector<std::vector<Array<float>>> by_threads;
        for (const int threads : {1, 2}) {
          set_num_threads(threads);
          Var<float> x(xv, x_grad), w(wv, w_grad), b(bv, true);
          Var<float> y = linear(x, w, b);
          for (int k = 0; k < backwards; ++k) y.backward(gv, BackwardOptions{k + 1 < backwards});
          INFO("x grad " << x_grad << ", W grad " << w_grad << ", backwards " << backwards << ", threads " << threads);
          CHECK(close(b.grad(), db_ref, backwards));
          if (x_grad) CHECK(close(x.grad(), dx_ref, backwards));
          if (w_grad) CHECK(close(w.grad(), dw_ref, backwards));
          CHECK(x.has_grad() == x_grad);
          CHECK(w.has_grad() == w_grad);
          by_threads.push_back({b.grad(), x_grad ? x.grad() : Array<float>(), w_grad ? w.grad() : Array<float>()});
        }
        for (std::size_t i = 0; i < by_threads[0].size(); ++i) {
          const bool same = by_threads[0][i] == by_threads[1][i];
          CHECK(same);
        }
      }
    }
}
