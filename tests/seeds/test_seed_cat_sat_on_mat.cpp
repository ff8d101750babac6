// Seed 002, "Self-Attention Mechanism Example": the word "cat" in "The cat sat on a mat", with hand-made
// 3-d embeddings and W_Q, W_K, W_V, then a two-head version. The notebook rounds on the way, and the same
// order of operations is kept here:
//   scaled_scores = round(q_cat . k_w / sqrt(d_k), 3)             for every word w
//   weights       = round(softmax(scaled_scores), 3)              (its own dict softmax: exp / sum, rounded)
//   output        = sum_w weights[w] * V[w]                        (with the ROUNDED weights)
// Dicts are printed by Python repr of the rounded numbers (exact), arrays by NumPy (8 decimals).
// The two-head part ends with W_O = np.random.rand(6, 3) unseeded, so "Final Output for 'cat'" is not
// deterministic and is not checked; everything printed before it is.
#include <catch2/catch.hpp>

#include <cmath>

#include "seeds/printed.hpp"
#include "seeds/seed_attention.hpp"

using namespace tf;
using namespace tf::seeds;

namespace {

// np.round(x, 3) (what round() does to a NumPy float): rint(x * 1000) / 1000. No value here lies near a
// rounding tie, which is checked, so the result does not depend on how ties would be broken.
Array<double> round3(const Array<double>& x) {
  Array<double> out = Array<double>::from_shape(x.shape());
  auto o = out.begin();
  for (const double v : x) {
    const double scaled = v * 1000.0;
    INFO("round(" << v << ", 3)");
    CHECK(std::abs(std::abs(scaled - std::trunc(scaled)) - 0.5) > 1e-6);
    *o++ = std::nearbyint(scaled) / 1000.0;
  }
  return out;
}

// Rows in the order of the sentence: The, cat, sat, on, a, mat -> [6, 3]
V64 embeddings() { return constant({{1, 0, 1}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}, {1, 0, 0}, {0, 1, 1}}); }

// The row of "cat" (index 1) of a [6, 3] matrix, as [1, 3].
V64 cat_row(const V64& m) { return split(m, 0, {1, 1, 4})[1]; }

struct CatHead {
  V64 scaled_scores;  // before round(., 3), [1, 6]
  V64 weights;        // softmax of the rounded scores, before round(., 3), [1, 6]
  V64 rounded_weights;
  V64 output;  // rounded weights times V, [1, 3]
};

// One head for "cat": q_cat from E W_Q, keys E W_K, values E W_V, scores / sqrt(d_k).
CatHead cat_head(const V64& w_q, const V64& w_k, const V64& w_v, double d_k) {
  const V64 e = embeddings();
  const V64 q = matmul(e, w_q), k = matmul(e, w_k), v = matmul(e, w_v);
  CatHead h;
  h.scaled_scores = scale(matmul(cat_row(q), k, false, true), 1.0 / std::sqrt(d_k));
  h.weights = softmax(constant(round3(h.scaled_scores.value())));
  h.rounded_weights = constant(round3(h.weights.value()));
  h.output = matmul(h.rounded_weights, v);
  return h;
}

const V64 kWQ1 = constant({{1, 0, 1}, {0, 1, 0}, {1, 1, 0}});
const V64 kWK1 = constant({{0, 1, 0}, {1, 0, 1}, {0, 1, 1}});
const V64 kWV1 = constant({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}});
const V64 kWQ2 = constant({{0, 1, 0}, {1, 0, 1}, {1, 1, 0}});
const V64 kWK2 = constant({{1, 0, 1}, {0, 1, 0}, {1, 0, 1}});
const V64 kWV2 = constant({{0, 1, 0}, {1, 0, 1}, {0, 0, 1}});

// The notebook's round(., 3) moves a value by at most 5e-4.
constexpr double kRound3 = 5e-4;

const char* const kWeightsScaled = "{'The': 0.281, 'cat': 0.089, 'sat': 0.158, 'on': 0.158, 'a': 0.158, 'mat': 0.158}";

}  // namespace

TEST_CASE("seed: Q, K, V of 'The cat sat on a mat'", "[seeds]") {
  const V64 e = embeddings();
  // Integer arrays: exact.
  check_printed(matmul(e, kWQ1).value(),
                "Q: {'The': array([2, 1, 1]), 'cat': array([0, 1, 0]), 'sat': array([1, 1, 1]), 'on': array([1, "
                "1, 0]), 'a': array([1, 0, 1]), 'mat': array([1, 2, 0])}",
                Printed::NumPy);
  check_printed(matmul(e, kWK1).value(),
                "K: {'The': array([0, 2, 1]), 'cat': array([1, 0, 1]), 'sat': array([1, 1, 1]), 'on': array([0, "
                "1, 1]), 'a': array([0, 1, 0]), 'mat': array([1, 1, 2])}",
                Printed::NumPy);
  check_printed(matmul(e, kWV1).value(),
                "V: {'The': array([1, 0, 1]), 'cat': array([0, 1, 0]), 'sat': array([1, 1, 0]), 'on': array([0, "
                "0, 1]), 'a': array([1, 0, 0]), 'mat': array([0, 1, 1])}",
                Printed::NumPy);
}

TEST_CASE("seed: cat attention, scaled and unscaled", "[seeds]") {
  const CatHead scaled = cat_head(kWQ1, kWK1, kWV1, 3.0);
  const char* const scaled_scores = "{'The': 1.155, 'cat': 0.0, 'sat': 0.577, 'on': 0.577, 'a': 0.577, 'mat': 0.577}";
  check_printed(scaled.scaled_scores.value(), scaled_scores, Printed::Exact, kRound3);
  check_printed(round3(scaled.scaled_scores.value()), scaled_scores, Printed::Exact);
  // "Attention Weights Scaled" (printed twice, the same both times)
  check_printed(scaled.weights.value(), kWeightsScaled, Printed::Exact, kRound3);
  check_printed(scaled.rounded_weights.value(), kWeightsScaled, Printed::Exact);
  check_printed(scaled.output.value(), "Output for 'cat': [0.597 0.405 0.597]", Printed::NumPy);

  // "Attention Weights Unscaled": scale_scores(scores, d_k=1)
  const CatHead unscaled = cat_head(kWQ1, kWK1, kWV1, 1.0);
  const char* const weights_unscaled =
      "{'The': 0.384, 'cat': 0.052, 'sat': 0.141, 'on': 0.141, 'a': 0.141, 'mat': 0.141}";
  check_printed(unscaled.weights.value(), weights_unscaled, Printed::Exact, kRound3);
  check_printed(unscaled.rounded_weights.value(), weights_unscaled, Printed::Exact);
  // Scaling matters: the two sets of weights differ well beyond the printing.
  CHECK_FALSE(matches_printed(unscaled.rounded_weights.value(), kWeightsScaled, Printed::Exact, kRound3));
}

TEST_CASE("seed: two-head attention for cat", "[seeds]") {
  const CatHead head1 = cat_head(kWQ1, kWK1, kWV1, 3.0);
  const CatHead head2 = cat_head(kWQ2, kWK2, kWV2, 3.0);
  check_printed(head1.weights.value(), kWeightsScaled, Printed::Exact, kRound3);
  check_printed(head1.rounded_weights.value(), kWeightsScaled, Printed::Exact);
  const char* const weights2 = "{'The': 0.424, 'cat': 0.042, 'sat': 0.134, 'on': 0.134, 'a': 0.134, 'mat': 0.134}";
  check_printed(head2.weights.value(), weights2, Printed::Exact, kRound3);
  check_printed(head2.rounded_weights.value(), weights2, Printed::Exact);
  check_printed(head1.output.value(), "[0.597 0.405 0.597]", Printed::NumPy);
  check_printed(head2.output.value(), "[0.31  0.692 1.002]", Printed::NumPy);
  // output_cat = np.concatenate([output_cat1, output_cat2]) is what W_O would project; its numbers are the
  // two printed head outputs side by side.
  const V64 output_cat = concat(std::vector<V64>{head1.output, head2.output}, 1);
  check_printed(output_cat.value(), "[0.597 0.405 0.597] [0.31  0.692 1.002]", Printed::NumPy);
  // Not checked: "Final Output for 'cat': [1.08429367 1.54793053 2.56099683]" = output_cat @ W_O with
  // W_O = np.random.rand(6, 3) drawn without a seed, so that number cannot be reproduced.
}
