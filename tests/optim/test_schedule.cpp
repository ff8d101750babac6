// Learning-rate schedules against the formulas in schedule.hpp and nanoGPT's get_lr.
#include <cmath>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "tinyformer/optim/schedule.hpp"

using namespace tf::optim;

TEST_CASE("schedule: constant returns base_lr at every step", "[schedule]") {
  const LrSchedule s = LrSchedule::constant(3e-4);
  CHECK(s.kind == ScheduleName::constant);
  for (std::int64_t step : {0, 1, 99, 100000}) CHECK(s.at(step) == 3e-4);
}

TEST_CASE("schedule: linear warmup gives lr*(step+1)/(W+1) before step W and lr from step W on", "[schedule]") {
  const double lr = 1e-3;
  const LrSchedule s = LrSchedule::warmup(lr, 9);    // W = 9: steps 0..8 warm up
  CHECK(s.at(0) == Approx(lr / 10).epsilon(1e-15));  // first step: lr/(W+1)
  CHECK(s.at(4) == Approx(lr * 5 / 10).epsilon(1e-15));
  CHECK(s.at(8) == Approx(lr * 9 / 10).epsilon(1e-15));  // last warmup step: lr*W/(W+1)
  CHECK(s.at(9) == lr);                                  // warmup done
  CHECK(s.at(10000) == lr);
  for (std::int64_t step = 1; step < 9; ++step) CHECK(s.at(step) > s.at(step - 1));
  // No warmup at all: lr from the first step.
  CHECK(LrSchedule::warmup(lr, 0).at(0) == lr);
}

TEST_CASE("schedule: cosine gives lr after warmup, (lr+min_lr)/2 at the midpoint and min_lr from decay_steps on",
          "[schedule]") {
  const double lr = 1e-3, min_lr = 1e-4;
  const LrSchedule s = LrSchedule::cosine(lr, 100, 1100, min_lr);  // W = 100, D = 1100
  CHECK(s.at(0) == Approx(lr / 101).epsilon(1e-15));
  CHECK(s.at(99) == Approx(lr * 100 / 101).epsilon(1e-15));
  CHECK(s.at(100) == Approx(lr).epsilon(1e-15));                 // cos(0) = 1
  CHECK(s.at(600) == Approx((lr + min_lr) / 2).epsilon(1e-12));  // ratio 1/2: cos(pi/2) = 0
  // ratio 1/4: coeff = 0.5 * (1 + cos(pi/4))
  CHECK(s.at(350) == Approx(min_lr + 0.5 * (1 + std::sqrt(0.5)) * (lr - min_lr)).epsilon(1e-12));
  CHECK(s.at(1100) == Approx(min_lr).epsilon(1e-15));
  CHECK(s.at(1101) == min_lr);
  CHECK(s.at(50000) == min_lr);
  for (std::int64_t step = 101; step <= 1100; ++step) CHECK(s.at(step) <= s.at(step - 1));
}

TEST_CASE("schedule: cosine equals nanoGPT's get_lr at chosen steps", "[schedule]") {
  // /usr/bin/python3, nanoGPT train.py's get_lr with learning_rate=6e-4, warmup_iters=2000,
  // lr_decay_iters=600000, min_lr=6e-5:
  //   if it < warmup_iters: return learning_rate * (it + 1) / (warmup_iters + 1)
  //   if it > lr_decay_iters: return min_lr
  //   decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
  //   coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio)); return min_lr + coeff * (learning_rate - min_lr)
  // printed with %.17g.
  const std::pair<std::int64_t, double> expected[] = {
      {0, 2.9985007496251872e-07},      {1, 5.9970014992503744e-07},      {1999, 0.00059970014992503744},
      {2000, 0.00059999999999999995},   {2001, 0.00059999999999627409},   {123456, 0.0005468768063375066},
      {301000, 0.00032999999999999994}, {599999, 6.0000000003725903e-05}, {600000, 6.0000000000000002e-05},
      {600001, 6.0000000000000002e-05}};
  const LrSchedule s = LrSchedule::cosine(6e-4, 2000, 600000, 6e-5);
  for (const auto& [step, lr] : expected) {
    INFO("step " << step);
    CHECK(s.at(step) == Approx(lr).epsilon(1e-14));
  }
}

TEST_CASE("schedule: cosine with decay_steps == warmup_steps drops to min_lr after the warmup", "[schedule]") {
  const LrSchedule s = LrSchedule::cosine(1e-3, 10, 10, 2e-4);
  CHECK(s.at(9) == Approx(1e-3 * 10 / 11).epsilon(1e-15));
  CHECK(s.at(10) == 2e-4);
  CHECK(std::isfinite(s.at(10)));
  const LrSchedule no_warmup = LrSchedule::cosine(1e-3, 0, 100, 0.0);
  CHECK(no_warmup.at(0) == Approx(1e-3).epsilon(1e-15));
  CHECK(no_warmup.at(50) == Approx(5e-4).epsilon(1e-12));
}

TEST_CASE("schedule: invalid fields throw invalid_argument naming the field", "[schedule]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(LrSchedule::constant(-1e-3), Contains("base_lr") && Contains("-0.001"));
  CHECK_THROWS_WITH(LrSchedule::warmup(1e-3, -5), Contains("warmup_steps") && Contains("-5"));
  CHECK_THROWS_WITH(LrSchedule::cosine(1e-3, 10, -1, 0.0), Contains("decay_steps"));
  CHECK_THROWS_WITH(LrSchedule::cosine(1e-3, 10, 100, -1e-5), Contains("min_lr"));
  CHECK_THROWS_WITH(LrSchedule::cosine(1e-3, 10, 100, 2e-3), Contains("min_lr = 0.002 is larger than base_lr"));
  CHECK_THROWS_WITH(LrSchedule::cosine(1e-3, 100, 50, 0.0), Contains("decay_steps = 50 is less than warmup_steps"));
  CHECK_THROWS_WITH(LrSchedule::constant(std::nan("")), Contains("base_lr"));
  // A hand-built value is validated by at(), and so is the step.
  LrSchedule s;
  s.kind = ScheduleName::cosine;
  s.base_lr = 1e-3;
  s.decay_steps = 100;
  s.min_lr = 5e-3;
  CHECK_THROWS_WITH(s.at(0), Contains("min_lr"));
  CHECK_THROWS_WITH(LrSchedule::constant(1e-3).at(-1), Contains("step must be >= 0"));
  // min_lr above base_lr is harmless for kinds that do not use it.
  LrSchedule w = LrSchedule::warmup(1e-3, 10);
  w.min_lr = 1.0;
  CHECK_NOTHROW(w.at(3));
}
