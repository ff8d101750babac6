// Global gradient-norm clipping against hand values and torch.nn.utils.clip_grad_norm_.
#include <cmath>
#include <limits>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/clip.hpp"
#include "tinyformer/optim/param_groups.hpp"
#include "tinyformer/optim/sgd.hpp"

using namespace tf;
using namespace tf::optim;

namespace {
Array<float> one_by_one(float v) {  // a [1,1] array ({{v}} is ambiguous for xarray's constructors)
  Array<float> a = Array<float>::from_shape({1, 1});
  a(0, 0) = v;
  return a;
}

// a [2] with gradient (3, 4) and b [1,1] with gradient (12): total norm sqrt(9 + 16 + 144) = 13.
struct ThreeFourTwelve {
  Var<float> a{Array<float>{0.0f, 0.0f}, true};
  Var<float> b{one_by_one(0.0f), true};
  Var<float> no_grad{Array<float>{1.0f, 2.0f}, true};  // never gets a gradient
  ThreeFourTwelve() {
    a.mutable_grad() = Array<float>{3.0f, 4.0f};
    b.mutable_grad() = one_by_one(12.0f);
  }
  std::vector<Var<float>> params() const { return {a, no_grad, b}; }
};
}  // namespace

TEST_CASE("clip: returns the global 2-norm and scales gradients by max_norm/(total+1e-6) above max_norm", "[clip]") {
  ThreeFourTwelve t;
  const double total = clip_grad_norm(t.params(), 6.5);
  CHECK(total == 13.0);
  const double coef = 6.5 / (13.0 + 1e-6);
  CHECK(t.a.grad()(0) == Approx(3.0 * coef).epsilon(1e-6));
  CHECK(t.a.grad()(1) == Approx(4.0 * coef).epsilon(1e-6));
  CHECK(t.b.grad()(0, 0) == Approx(12.0 * coef).epsilon(1e-6));
  CHECK_FALSE(t.no_grad.has_grad());  // skipped, not given a zero gradient
  // torch: a.grad=(3,4), b.grad=[[12]]; torch.nn.utils.clip_grad_norm_([a, b], 6.5) -> 13, a.grad =
  // (1.49999988, 1.99999988), b.grad = [[5.99999952]] (float32, printed with %.9g).
  CHECK(t.a.grad()(0) == Approx(1.49999988).epsilon(1e-6));
  CHECK(t.a.grad()(1) == Approx(1.99999988).epsilon(1e-6));
  CHECK(t.b.grad()(0, 0) == Approx(5.99999952).epsilon(1e-6));
  // The new norm is max_norm (up to the 1e-6 guard).
  const double after = clip_grad_norm(t.params(), 100.0);
  CHECK(after == Approx(6.5).epsilon(1e-6));
}

TEST_CASE("clip: gradients below max_norm are left unchanged, and at max_norm torch's 1e-6 guard still scales",
          "[clip]") {
  {
    ThreeFourTwelve t;
    CHECK(clip_grad_norm(t.params(), 13.5) == 13.0);
    CHECK(t.a.grad() == Array<float>{3.0f, 4.0f});  // bitwise
    CHECK(t.b.grad() == one_by_one(12.0f));
  }
  {
    ThreeFourTwelve t;
    CHECK(clip_grad_norm(t.params(), 1e9) == 13.0);
    CHECK(t.a.grad() == Array<float>{3.0f, 4.0f});
  }
  {
    // total == max_norm: coef = 13/(13 + 1e-6) < 1. torch.nn.utils.clip_grad_norm_([a, b], 13.0) gives
    // a.grad = (2.99999976, 3.99999976), b.grad = [[11.999999]].
    ThreeFourTwelve t;
    CHECK(clip_grad_norm(t.params(), 13.0) == 13.0);
    CHECK(t.a.grad()(0) == Approx(2.99999976).epsilon(1e-7));
    CHECK(t.a.grad()(0) < 3.0f);
    CHECK(t.b.grad()(0, 0) == Approx(11.999999).epsilon(1e-7));
  }
}

TEST_CASE("clip: the norm is accumulated in float64 (a float32 sum would drop the small terms)", "[clip]") {
  // 4096^2 = 2^24, plus 4096 terms (1/64)^2 = 2^-12 that sum to exactly 1. In float32 each small term is
  // below half an ulp of 2^24 and would vanish; in float64 the sum 2^24 + 1 is exact.
  Var<float> big(Array<float>{0.0f}, true);
  big.mutable_grad() = Array<float>{4096.0f};
  Array<float> small_grad = Array<float>::from_shape({64, 64});
  for (auto& v : small_grad) v = 1.0f / 64.0f;
  Var<float> small(Array<float>::from_shape({64, 64}), true);
  small.mutable_grad() = small_grad;
  const double total = clip_grad_norm(std::vector<Var<float>>{big, small}, 1e9);
  CHECK(total == std::sqrt(16777217.0));
  CHECK(total != 4096.0);
  // The named overload and the double instantiation give the same.
  Var<double> d(Array<double>{0.0, 0.0}, true);
  d.mutable_grad() = Array<double>{6.0, 8.0};
  CHECK(clip_grad_norm(NamedVars<double>{{"d", d}}, 5.0) == 10.0);
  CHECK(d.grad()(0) == Approx(6.0 * 5.0 / (10.0 + 1e-6)).epsilon(1e-14));
}

TEST_CASE("clip: no gradients gives 0, a non-finite norm leaves gradients as they are, bad max_norm throws", "[clip]") {
  Var<float> p(Array<float>{1.0f, 2.0f}, true);
  CHECK(clip_grad_norm(std::vector<Var<float>>{p}, 1.0) == 0.0);
  CHECK(clip_grad_norm(std::vector<Var<float>>{}, 1.0) == 0.0);

  p.mutable_grad() = Array<float>{std::numeric_limits<float>::infinity(), 1.0f};
  CHECK(std::isinf(clip_grad_norm(std::vector<Var<float>>{p}, 1.0)));
  CHECK(p.grad()(1) == 1.0f);
  p.mutable_grad() = Array<float>{std::nanf(""), 1.0f};
  CHECK(std::isnan(clip_grad_norm(std::vector<Var<float>>{p}, 1.0)));
  CHECK(p.grad()(1) == 1.0f);

  // A Var listed twice counts once.
  p.mutable_grad() = Array<float>{3.0f, 4.0f};
  CHECK(clip_grad_norm(std::vector<Var<float>>{p, p}, 100.0) == 5.0);

  CHECK_THROWS_WITH(clip_grad_norm(std::vector<Var<float>>{p}, 0.0), Catch::Contains("max_norm must be"));
  CHECK_THROWS_AS(clip_grad_norm(std::vector<Var<float>>{p}, -1.0), std::invalid_argument);
  CHECK_THROWS_AS(clip_grad_norm(std::vector<Var<float>>{p}, std::nan("")), std::invalid_argument);
}

TEST_CASE("clip: first_nonfinite_grad and first_nonfinite_value name the first parameter holding a NaN or inf",
          "[clip]") {
  Var<float> a(Array<float>{1.0f, 2.0f}, true), b(Array<float>{3.0f}, true), c(Array<float>{4.0f}, true);
  const NamedVars<float> params{{"a", a}, {"b", b}, {"c", c}};
  CHECK(first_nonfinite_grad(params).empty());  // no gradients yet
  CHECK(first_nonfinite_value(params).empty());
  a.mutable_grad() = Array<float>{0.5f, 0.5f};
  b.mutable_grad() = Array<float>{std::numeric_limits<float>::infinity()};
  c.mutable_grad() = Array<float>{std::nanf("")};
  CHECK(first_nonfinite_grad(params) == "b");
  c.mutable_value() = Array<float>{-std::numeric_limits<float>::infinity()};
  CHECK(first_nonfinite_value(params) == "c");
}

TEST_CASE(
    "clip: the norms of arrays of many blocks are their float64 sums of squares, the same bits at 1 and 2 threads",
    "[clip][threads]") {
  test::ThreadsGuard guard;
  // 150 blocks of 2^14 values and 13 more: the pool splits the blocks over threads (64 blocks a piece at least), and
  // the last 13 values go through the lanes' remainder
  const std::size_t n = 150 * (std::size_t{1} << 14) + 13;
  Var<float> p(test::random_array_f({n}, 411, -2.0, 2.0), true);
  p.mutable_grad() = test::random_array_f({n}, 412, -3.0, 3.0);
  const auto reference = [](const Array<float>& a) {
    long double sum = 0;
    for (const float v : a) sum += static_cast<long double>(v) * v;
    return static_cast<double>(std::sqrt(sum));
  };
  const NamedVars<float> named{{"p", p}};
  set_num_threads(1);
  const double grad_one = grad_norm(named), weight_one = weight_norm(named);
  set_num_threads(2);
  const double grad_two = grad_norm(named), weight_two = weight_norm(named);
  CHECK(grad_one == grad_two);
  CHECK(weight_one == weight_two);
  CHECK(std::abs(grad_one - reference(p.grad())) <= 1e-13 * reference(p.grad()));
  CHECK(std::abs(weight_one - reference(p.value())) <= 1e-13 * reference(p.value()));
}
