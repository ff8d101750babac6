// analysis/circuits.hpp on curves and embeddings whose answers are known: a sudden fall is a phase change and a
// gradual or small one is not; memorised and grokked land on the first evaluations past their thresholds; a cosine
// embedding puts its whole norm on its frequency.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "tinyformer/analysis/circuits.hpp"
#include "tinyformer/tensor/random.hpp"

using namespace tf;
using namespace tf::analysis;

namespace {

// Evaluations every 50 steps from 0 to 2000 of loss(step), with a 2-layer, 2-head score table: L1 H1 follows
// `induction(step)`, L0 H0's previous-token score `previous(step)`.
template <class Loss, class Induction, class Previous>
std::vector<EvalPoint> phase_curve(Loss loss, Induction induction, Previous previous, std::size_t layers = 2) {
  std::vector<EvalPoint> points;
  for (long s = 0; s <= 2000; s += 50) {
    EvalPoint p{s, loss(s), std::vector<std::vector<double>>(layers, {0.05, 0.05}),
                std::vector<std::vector<double>>(layers, {0.1, 0.1})};
    if (layers > 1) p.score[1][1] = induction(s);
    p.previous_token[0][0] = previous(s);
    points.push_back(p);
  }
  return points;
}

double step_at(long s, long at, double lo, double hi) { return s < at ? lo : hi; }

}  // namespace

TEST_CASE("analysis: a sudden fall of the loss is a phase change, with its step, its drop and the heads around it",
          "[analysis]") {
  // flat at 4.0 to step 800, then 3.0, 1.0 and 0.3 at steps 850, 900 and 950 and after
  const auto loss = [](long s) { return s <= 800 ? 4.0 : s == 850 ? 3.0 : s == 900 ? 1.0 : 0.3; };
  const auto points = phase_curve(
      loss, [](long s) { return step_at(s, 850, 0.05, 0.9); }, [](long s) { return step_at(s, 600, 0.1, 0.8); });
  const PhaseChange pc = find_phase_change(points);
  REQUIRE(pc.found);
  CHECK(pc.start_step == 550);  // the earliest window of at most 20% of the 2000 steps that holds the whole fall
  CHECK(pc.end_step == 950);
  CHECK(pc.step == 900);  // the first loss at or below 4.0 - 3.7 / 2 = 2.15
  CHECK(pc.loss_before == Approx(4.0));
  CHECK(pc.loss_after == Approx(0.3));
  CHECK(pc.drop() == Approx(3.7));
  REQUIRE(pc.layer.has_value());
  CHECK(*pc.layer == 1);
  CHECK(*pc.head == 1);
  CHECK(pc.score_before == Approx(0.05));
  CHECK(pc.score_after == Approx(0.9));
  REQUIRE(pc.previous_token_step.has_value());
  CHECK(*pc.previous_token_step == 600);
  CHECK(pc.previous_token_head == 0);
  CHECK(pc.previous_token_score == Approx(0.8));
}

TEST_CASE("analysis: a gradual fall, a small fall and a one-layer model have no phase change or no later head",
          "[analysis]") {
  const auto none = [](long) { return 0.05; };
  // 4.0 down to 0.3 evenly over 2000 steps: any window of 400 steps takes 0.74, a fifth of the whole fall (near the
  // end that is more than half of the loss there: the share of the whole fall is what rules it out)
  const PhaseChange gradual =
      find_phase_change(phase_curve([](long s) { return 4.0 - 3.7 * double(s) / 2000; }, none, none));
  CHECK_FALSE(gradual.found);
  CHECK(gradual.drop() == Approx(0.74).epsilon(0.01));
  // a sudden fall of 20%
  const PhaseChange small =
      find_phase_change(phase_curve([](long s) { return step_at(s, 800, 4.0, 3.2); }, none, none));
  CHECK_FALSE(small.found);
  CHECK_FALSE(small.previous_token_step.has_value());
  // one layer: the fall may be there, but no layer >= 1 holds a head
  const PhaseChange one =
      find_phase_change(phase_curve([](long s) { return step_at(s, 800, 4.0, 1.0); }, none, none, 1));
  CHECK(one.found);
  CHECK_FALSE(one.layer.has_value());
  // fewer than two finite points
  CHECK_FALSE(find_phase_change({{0, std::nan(""), {}, {}}, {50, 1.0, {}, {}}}).found);
}

TEST_CASE("analysis: memorised and grokked are the first evaluations past their thresholds, in that order",
          "[analysis]") {
  const std::vector<long> steps = {0, 100, 200, 300, 400, 500, 600};
  const std::vector<double> train = {0.01, 0.6, 0.995, 1.0, 1.0, 1.0, 1.0};
  const std::vector<double> held_out = {0.01, 0.02, 0.03, 0.04, 0.5, 0.97, 0.99};
  const GrokkingMarks g = find_grokking(steps, train, held_out);
  REQUIRE(g.memorised.has_value());
  CHECK(*g.memorised == 200);
  CHECK(g.train_at_memorised == Approx(0.995));
  REQUIRE(g.grokked.has_value());
  CHECK(*g.grokked == 500);
  CHECK(g.held_out_at_grokked == Approx(0.97));
  CHECK(g.best_held_out == Approx(0.99));
  // generalising together with memorising is not grokking: held-out above 0.5 when train reaches 0.99
  const GrokkingMarks together = find_grokking({0, 100, 200}, {0.1, 0.99, 1.0}, {0.1, 0.9, 0.99});
  CHECK_FALSE(together.memorised.has_value());
  CHECK_FALSE(together.grokked.has_value());
  // memorised, never generalised (the weight-decay-free control)
  const GrokkingMarks stuck = find_grokking({0, 100, 200}, {0.1, 1.0, 1.0}, {0.0, 0.1, 0.2});
  CHECK(*stuck.memorised == 100);
  CHECK_FALSE(stuck.grokked.has_value());
  CHECK_THROWS_AS(find_grokking({0}, {0.1, 0.2}, {0.1}), std::invalid_argument);
}

TEST_CASE("analysis: the Fourier spectrum of an embedding puts a cosine's norm on its frequency and sums to 1",
          "[analysis]") {
  const std::size_t p = 13, C = 6;
  Array<float> cosine = Array<float>::from_shape({p, C});
  for (std::size_t x = 0; x < p; ++x)
    for (std::size_t c = 0; c < C; ++c)
      cosine(x, c) = static_cast<float>((c + 1) * std::cos(2 * M_PI * 4 * x / p + 0.3 * c));  // frequency 4, phases
  const std::vector<double> s = fourier_spectrum(cosine);
  REQUIRE(s.size() == 7);  // k = 0 .. 6
  CHECK(s[4] == Approx(1.0).margin(1e-6));
  CHECK(std::accumulate(s.begin(), s.end(), 0.0) == Approx(1.0));
  // two frequencies with squared norms 1 : 3 (cos at 2 with amplitude 1, sin at 5 with amplitude sqrt 3)
  Array<float> two = Array<float>::from_shape({p, 1});
  for (std::size_t x = 0; x < p; ++x)
    two(x, 0) = static_cast<float>(std::cos(2 * M_PI * 2 * x / p) + std::sqrt(3.0) * std::sin(2 * M_PI * 5 * x / p));
  const std::vector<double> t = fourier_spectrum(two);
  CHECK(t[2] == Approx(0.25).margin(1e-6));
  CHECK(t[5] == Approx(0.75).margin(1e-6));
  // a random embedding spreads: no frequency far above 2/p
  Rng rng(1);
  Array<float> random = Array<float>::from_shape({p, 64});
  for (auto& v : random) v = static_cast<float>(rng.normal());
  const std::vector<double> r = fourier_spectrum(random);
  CHECK(std::accumulate(r.begin(), r.end(), 0.0) == Approx(1.0));
  CHECK(*std::max_element(r.begin(), r.end()) < 4.0 / p);
  CHECK_THROWS_AS(fourier_spectrum(Array<float>::from_shape({1, 3})), std::invalid_argument);
}
