// cross_entropy: hand cases and PyTorch values, stability, ignore_index, agreement with the composed
// log_softmax + one-hot NLL, validation messages, float64 gradcheck.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// -log softmax([1, 2, 3])_k for k = 0, 1, 2 (= log(e + e^2 + e^3) - (k + 1); torch.log_softmax in float64).
const double kNll123[3] = {2.4076059644443806, 1.4076059644443804, 0.4076059644443804};

// The composed reference: loss = -(1/n) sum_rows sum_v onehot[row, v] log_softmax(logits)[row, v].
Var<double> composed_cross_entropy(const Var<double>& logits, const IndexArray& targets, Index ignore_index) {
  const std::size_t V = logits.shape().back();
  Array<double> onehot = Array<double>::from_shape(logits.shape());
  onehot.fill(0.0);
  std::size_t kept = 0;
  for (std::size_t r = 0; r < targets.size(); ++r)
    if (targets.data()[r] != ignore_index) {
      onehot.data()[r * V + static_cast<std::size_t>(targets.data()[r])] = 1.0;
      ++kept;
    }
  return scale(sum(log_softmax(logits) * Var<double>(onehot)), -1.0 / static_cast<double>(kept));
}
}  // namespace

TEST_CASE("ops: cross-entropy of a hand case equals -log softmax of the target", "[ops]") {
  Var<double> one(Array<double>{{1.0, 2.0, 3.0}});
  for (Index t = 0; t < 3; ++t) CHECK(cross_entropy(one, IndexArray{t}).item() == Approx(kNll123[t]).epsilon(1e-14));
  // Two rows: the mean of the two row losses. Row 1 is [3, 1, 2] with target 0 (value 3): -log softmax = kNll123[2].
  Var<double> two(Array<double>{{1.0, 2.0, 3.0}, {3.0, 1.0, 2.0}});
  CHECK(cross_entropy(two, IndexArray{1, 0}).item() == Approx((kNll123[1] + kNll123[2]) / 2).epsilon(1e-14));
  // [B=1, T=2, V=3] logits with [B, T] targets: the same numbers.
  Var<double> btv(Array<double>{{{1.0, 2.0, 3.0}, {3.0, 1.0, 2.0}}});
  CHECK(cross_entropy(btv, IndexArray{{1, 0}}).item() == Approx((kNll123[1] + kNll123[2]) / 2).epsilon(1e-14));
}

TEST_CASE("ops: cross-entropy with ignore_index matches torch.nn.functional.cross_entropy", "[ops]") {
  Var<double> logits(Array<double>{{2.0, -1.0, 0.5, 0.0}, {0.3, 0.3, 0.3, 0.3}, {-1.5, 4.0, 1.0, 2.5}});
  // torch.nn.functional.cross_entropy(logits, torch.tensor([3, -1, 0]), ignore_index=-1) in float64.
  CHECK(cross_entropy(logits, IndexArray{3, -1, 0}).item() == Approx(4.043433145870658).epsilon(1e-14));
  // A different ignore_index value: -100 ignored, -1 would now be out of range.
  CHECK(cross_entropy(logits, IndexArray{3, -100, 0}, -100).item() == Approx(4.043433145870658).epsilon(1e-14));
  CHECK_THROWS_AS(cross_entropy(logits, IndexArray{3, -1, 0}, -100), std::invalid_argument);
}

TEST_CASE("ops: cross-entropy is stable for logits around +-1000", "[ops]") {
  Var<double> logits(Array<double>{{1000.0, 1001.0, 1002.0}, {-1000.0, -1001.0, -1002.0}});
  // Row 0 target 0: kNll123[0]; row 1 target 2 (the smallest, -1002): also kNll123[0]. torch
  // agrees: 2.4076059644443806.
  const double loss = cross_entropy(logits, IndexArray{0, 2}).item();
  CHECK(std::isfinite(loss));
  CHECK(loss == Approx(kNll123[0]).epsilon(1e-12));
  Var<float> logits_f(Array<float>{{1000.0f, 1001.0f, 1002.0f}, {-1000.0f, -1001.0f, -1002.0f}}, true);
  Var<float> loss_f = cross_entropy(logits_f, IndexArray{0, 2});
  CHECK(loss_f.item() == Approx(kNll123[0]).epsilon(1e-6));
  loss_f.backward();
  for (float g : logits_f.grad()) CHECK(std::isfinite(g));
}

TEST_CASE("ops: cross-entropy backward is (softmax - onehot) / n on kept rows and 0 on ignored rows", "[ops]") {
  Var<double> logits(Array<double>{{1.0, 2.0, 3.0}, {0.5, 0.5, 0.5}, {3.0, 1.0, 2.0}}, true);
  cross_entropy(logits, IndexArray{2, -1, 0}).backward();
  const double n = 2;
  const double s[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219};  // softmax([1, 2, 3])
  const Array<double>& g = logits.grad();
  CHECK(g(0, 0) == Approx(s[0] / n).epsilon(1e-14));
  CHECK(g(0, 1) == Approx(s[1] / n).epsilon(1e-14));
  CHECK(g(0, 2) == Approx((s[2] - 1) / n).epsilon(1e-14));
  for (std::size_t j = 0; j < 3; ++j) CHECK(g(1, j) == 0.0);  // ignored row: exactly 0
  CHECK(g(2, 0) == Approx((s[2] - 1) / n).epsilon(1e-14));    // row [3, 1, 2] is [1, 2, 3] rotated
  CHECK(g(2, 1) == Approx(s[0] / n).epsilon(1e-14));
  CHECK(g(2, 2) == Approx(s[1] / n).epsilon(1e-14));
}

TEST_CASE("ops: cross-entropy with every target ignored is 0 with a zero gradient", "[ops]") {
  Var<double> logits(random_array({2, 3, 4}, 401), true);
  Var<double> loss = cross_entropy(logits, IndexArray{{-1, -1, -1}, {-1, -1, -1}});
  CHECK(loss.item() == 0.0);
  loss.backward();
  for (double g : logits.grad()) CHECK(g == 0.0);
}

TEST_CASE("ops: cross-entropy agrees with the composed log_softmax + one-hot NLL, value and gradient", "[ops]") {
  const auto x = random_array({2, 3, 6}, 402, -4.0, 4.0);
  const IndexArray targets{{5, -1, 0}, {2, 2, -1}};
  Var<double> a(x, true), b(x, true);
  Var<double> fused = cross_entropy(a, targets);
  Var<double> composed = composed_cross_entropy(b, targets, -1);
  CHECK(fused.item() == Approx(composed.item()).epsilon(1e-13));
  fused.backward();
  composed.backward();
  for (std::size_t k = 0; k < x.size(); ++k) CHECK(a.grad().data()[k] == Approx(b.grad().data()[k]).margin(1e-14));
}

TEST_CASE("ops: cross-entropy's loss and gradient are bit-identical at 1 and 2 threads, and near float64's",
          "[ops][threads]") {
  // 1031 rows of 67 logits: many chunks of rows over the pool, rows that do not start on a SIMD boundary, ignored rows
  test::ThreadsGuard guard;
  const std::size_t N = 1031, V = 67;
  const Array<float> logits = test::random_array_f({N, V}, 403);
  IndexArray targets = IndexArray::from_shape({N});
  for (std::size_t r = 0; r < N; ++r) targets(r) = r % 7 == 3 ? -1 : static_cast<Index>((r * 31) % V);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Var<float> x(logits, true);
    Var<float> loss = cross_entropy(x, targets);
    loss.backward();
    return std::vector<Array<float>>{loss.value(), x.grad()};
  };
  const auto one = run(1), two = run(2);
  CHECK(one[0] == two[0]);
  CHECK(one[1] == two[1]);
  Var<double> x64(xt::cast<double>(logits), true);
  Var<double> loss64 = cross_entropy(x64, targets);
  CHECK(static_cast<double>(one[0]()) == Approx(loss64.item()).epsilon(1e-6));
}

TEST_CASE("ops: cross-entropy rejects bad targets and shapes, naming the value", "[ops]") {
  Var<double> logits(random_array({2, 3, 5}, 403));
  CHECK_THROWS_WITH(cross_entropy(logits, IndexArray{{0, 1, 2}, {3, 7, 4}}),
                    Catch::Contains("target 7") && Catch::Contains("position [1, 1]") && Catch::Contains("V = 5"));
  CHECK_THROWS_WITH(cross_entropy(logits, IndexArray{{0, -2, 2}, {3, 0, 4}}),
                    Catch::Contains("target -2") && Catch::Contains("position [0, 1]"));
  CHECK_THROWS_WITH(cross_entropy(logits, IndexArray{{0, 1}, {3, 4}}),
                    Catch::Contains("[2, 2]") && Catch::Contains("[2, 3, 5]") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(cross_entropy(logits, IndexArray{0, 1, 2, 3, 4, 0}), Catch::Contains("[6]"));
  CHECK_THROWS_AS(cross_entropy(Var<double>(Array<double>(1.0)), IndexArray(0)), std::invalid_argument);
}

TEST_CASE("gradcheck: cross-entropy with ignore_index", "[gradcheck][ops]") {
  const auto logits = random_array({2, 3, 5}, 411, -3.0, 3.0);
  const IndexArray targets{{4, -1, 0}, {2, 2, -1}};
  REQUIRE_GRADCHECK(
      gradcheck([&](const Inputs& in) { return cross_entropy(in[0], targets); }, {logits}, {}, {"logits"}));
  // No target ignored, 2-D logits [N, V].
  const auto flat = random_array({4, 3}, 412, -3.0, 3.0);
  REQUIRE_GRADCHECK(gradcheck(
      [](const Inputs& in) {
        return cross_entropy(in[0], IndexArray{0, 2, 1, 2});
      },
      {flat}, {}, {"logits"}));
  // The loss scaled by an upstream factor reaches dloss != 1.
  REQUIRE_GRADCHECK(gradcheck([&](const Inputs& in) { return scale(cross_entropy(in[0], targets), -2.5); }, {logits},
                              {}, {"logits"}));
}

TEST_CASE("ops: cross_entropy of logits with a NaN or a row of only -inf is NaN, loss and gradient", "[ops]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Array<float>& values :
       {Array<float>{{0.1f, 0.2f, 0.3f}, {-inf, -inf, -inf}}, Array<float>{{0.1f, 0.2f, 0.3f}, {0.5f, nan, 1.0f}}}) {
    Var<float> logits(values, true);
    const Var<float> loss = cross_entropy(logits, IndexArray{0, 2});
    CHECK(std::isnan(loss.item()));  // surfaces as a non-finite loss; no exception mid-step
    loss.backward();
    CHECK(std::isnan(logits.grad()(1, 0)));
  }
  // a NaN inside a row of whole SIMD batches (any width up to 16): that row NaN, the other finite
  Array<float> wide = Array<float>::from_shape({2, 37});
  for (std::size_t j = 0; j < 37; ++j) wide(0, j) = wide(1, j) = 0.01f * static_cast<float>(j);
  wide(1, 5) = nan;
  Var<float> logits(wide, true);
  const Var<float> loss = cross_entropy(logits, IndexArray{0, 2}, -1);
  CHECK(std::isnan(loss.item()));
  loss.backward();
  CHECK(std::isnan(logits.grad()(1, 0)));
  CHECK(std::isfinite(logits.grad()(0, 0)));
}
