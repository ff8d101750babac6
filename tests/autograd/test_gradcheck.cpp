// The gradcheck utility itself: it passes a right backward and reports a deliberately wrong one.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;

namespace {
// x^2 with a backward that is only right when `wrong_factor` is 2.
Var<double> square_with_backward(const Var<double>& x, double wrong_factor) {
  Array<double> out = x.value() * x.value();
  return make_result<double>(
      std::move(out), {x},
      [wrong_factor](Node<double>& self) {
        accumulate_grad(*self.inputs[0], self.grad * wrong_factor * self.inputs[0]->value);
      },
      "square");
}
}  // namespace

TEST_CASE("gradcheck: passes a correct backward", "[gradcheck]") {
  auto result = gradcheck([](const std::vector<Var<double>>& in) { return square_with_backward(in[0], 2.0); },
                          {test::random_array({3, 4}, 1)});
  REQUIRE_GRADCHECK(result);
  CHECK(result.inputs.at(0).checked == 12);
}

TEST_CASE("gradcheck: reports a deliberately wrong backward", "[gradcheck]") {
  auto result = gradcheck([](const std::vector<Var<double>>& in) { return square_with_backward(in[0], 2.02); },
                          {test::random_array({3, 4}, 1)}, {}, {"x"});
  CHECK_FALSE(result.ok);
  REQUIRE(result.inputs.size() == 1);
  const auto& w = result.inputs[0];
  CHECK(w.failed == 12);
  CHECK(w.rel_err == Approx(0.01).epsilon(1e-3));  // analytic is 1% too large everywhere
  const std::string report = result.report();
  INFO(report);
  CHECK(report.find("FAIL") != std::string::npos);
  CHECK(report.find('x') != std::string::npos);
}

TEST_CASE("gradcheck: reports a backward that forgets a broadcast input", "[gradcheck]") {
  // mul with the gradient of b never reduced correctly: a hand-made wrong op that gives b zero gradient
  auto wrong_mul = [](const std::vector<Var<double>>& in) {
    Array<double> out = in[0].value() * in[1].value();
    return make_result<double>(
        std::move(out), {in[0], in[1]},
        [](Node<double>& self) { accumulate_grad(*self.inputs[0], self.grad * self.inputs[1]->value); }, "wrong_mul");
  };
  auto result = gradcheck(wrong_mul, {test::random_array({2, 3}, 2), test::random_array({2, 3}, 3)});
  CHECK_FALSE(result.ok);
  CHECK(result.inputs[0].failed == 0);
  CHECK(result.inputs[1].failed == 6);
}

TEST_CASE("gradcheck: a seeded subset checks exactly the requested number of elements", "[gradcheck]") {
  GradcheckOptions opts;
  opts.max_checks_per_input = 5;
  auto result = gradcheck([](const std::vector<Var<double>>& in) { return square_with_backward(in[0], 2.0); },
                          {test::random_array({10, 10}, 4)}, opts);
  REQUIRE_GRADCHECK(result);
  CHECK(result.inputs[0].checked == 5);
}
