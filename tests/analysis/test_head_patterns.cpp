// Head-pattern scores on hand-built attention whose scores are known exactly: the pattern cells follow the
// documented rules, a head that is exactly one pattern scores 1 for it and computable fractions for the others, a
// uniform head scores its uniform baseline, queries without cells do not count, sequences weigh by their counted
// queries, and verdicts name the best pattern or call the head diffuse.
#include <cmath>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "tinyformer/analysis/head_patterns.hpp"

using namespace tf;
using namespace tf::analysis;
using Catch::Matchers::Contains;

namespace {

IndexArray ids_of(const std::vector<Index>& v) {
  IndexArray a = IndexArray::from_shape({v.size()});
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

// [L,H,T,T] of zeros.
Array<float> zeros(std::size_t L, std::size_t H, std::size_t T) {
  Array<float> a = Array<float>::from_shape({L, H, T, T});
  a.fill(0.f);
  return a;
}

// Head (l, h): every query puts all its weight on key q-1 (query 0 on key 0).
void set_previous_token(Array<float>& a, std::size_t l, std::size_t h) {
  const std::size_t T = a.shape()[2];
  for (std::size_t q = 0; q < T; ++q) a(l, h, q, q == 0 ? 0 : q - 1) = 1.f;
}

// Head (l, h): every query spreads evenly over keys 0..q.
void set_uniform(Array<float>& a, std::size_t l, std::size_t h) {
  const std::size_t T = a.shape()[2];
  for (std::size_t q = 0; q < T; ++q)
    for (std::size_t k = 0; k <= q; ++k) a(l, h, q, k) = 1.f / static_cast<float>(q + 1);
}

double score_of(const HeadScores& s, Pattern p, std::size_t l, std::size_t h) {
  const auto i = s.index_of(p);
  REQUIRE(i.has_value());
  return s.at(*i, l, h);
}

using Cells = std::vector<std::vector<std::size_t>>;

// x = 5 7 5 9 7 5: token 5 at 0, 2, 5; token 7 at 1, 4.
const std::vector<Index> kRepeats{5, 7, 5, 9, 7, 5};
const std::vector<long> kExpected{-1, -1, -1, 2, -1, 2};

}  // namespace

TEST_CASE("analysis: pattern cells follow the documented rules on a sequence with repeated tokens", "[analysis]") {
  const IndexArray x = ids_of(kRepeats);
  CHECK(pattern_cells(Pattern::previous_token, x) == Cells{{}, {0}, {1}, {2}, {3}, {4}});
  CHECK(pattern_cells(Pattern::self, x) == Cells{{}, {1}, {2}, {3}, {4}, {5}});
  CHECK(pattern_cells(Pattern::first_token, x) == Cells{{}, {0}, {0}, {0}, {0}, {0}});
  CHECK(pattern_cells(Pattern::duplicate_token, x) == Cells{{}, {}, {0}, {}, {1}, {0, 2}});
  CHECK(pattern_cells(Pattern::induction, x) == Cells{{}, {}, {1}, {}, {2}, {1, 3}});
  CHECK(pattern_cells(Pattern::expected, x, kExpected) == Cells{{}, {}, {}, {2}, {}, {2}});
  CHECK(pattern_cells(Pattern::expected, x) == Cells(6));
  // A repeat right before the query makes the induction cell the query itself.
  CHECK(pattern_cells(Pattern::induction, ids_of({3, 3})) == Cells{{}, {1}});
  CHECK(pattern_name(Pattern::duplicate_token) == "duplicate_token");
  CHECK(all_patterns().size() == 6);
}

TEST_CASE("analysis: a head that is exactly the previous-token pattern scores 1 for it and known fractions otherwise",
          "[analysis]") {
  Array<float> a = zeros(1, 2, 6);
  set_previous_token(a, 0, 0);
  set_uniform(a, 0, 1);
  const HeadScores s = score_heads(a, ids_of(kRepeats), kExpected);
  REQUIRE(s.layers == 1);
  REQUIRE(s.heads == 2);
  REQUIRE(s.patterns == all_patterns());  // every pattern has a counted query here
  CHECK(score_of(s, Pattern::previous_token, 0, 0) == 1.0);
  CHECK(score_of(s, Pattern::self, 0, 0) == 0.0);
  CHECK(score_of(s, Pattern::first_token, 0, 0) == Approx(1.0 / 5));  // only query 1's previous token is key 0
  CHECK(score_of(s, Pattern::duplicate_token, 0, 0) == 0.0);          // queries 2, 4, 5 look at 1, 3, 4
  CHECK(score_of(s, Pattern::induction, 0, 0) == Approx(1.0 / 3));    // query 2: key 1 is an induction cell
  CHECK(score_of(s, Pattern::expected, 0, 0) == Approx(1.0 / 2));     // query 3 -> 2 yes, query 5 -> 4 no
  CHECK(s.entropy[0] == 0.0);                                         // one key per row
}

TEST_CASE("analysis: a uniform head scores each pattern's uniform baseline and has the uniform entropy", "[analysis]") {
  Array<float> a = zeros(1, 2, 6);
  set_previous_token(a, 0, 0);
  set_uniform(a, 0, 1);
  const HeadScores s = score_heads(a, ids_of(kRepeats), kExpected);
  const double one_key = (1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 5;  // queries 1..5
  CHECK(score_of(s, Pattern::previous_token, 0, 1) == Approx(one_key));
  CHECK(score_of(s, Pattern::self, 0, 1) == Approx(one_key));
  CHECK(score_of(s, Pattern::first_token, 0, 1) == Approx(one_key));
  CHECK(score_of(s, Pattern::duplicate_token, 0, 1) == Approx((1.0 / 3 + 1.0 / 5 + 2.0 / 6) / 3));
  CHECK(score_of(s, Pattern::induction, 0, 1) == Approx((1.0 / 3 + 1.0 / 5 + 2.0 / 6) / 3));
  CHECK(score_of(s, Pattern::expected, 0, 1) == Approx((1.0 / 4 + 1.0 / 6) / 2));
  for (std::size_t p = 0; p < s.patterns.size(); ++p) {
    INFO(pattern_name(s.patterns[p]));
    CHECK(s.at(p, 0, 1) == Approx(s.baseline[p]));
  }
  const double ln_sum = std::log(2.0) + std::log(3.0) + std::log(4.0) + std::log(5.0) + std::log(6.0);
  CHECK(s.entropy[1] == Approx(ln_sum / 5));
  CHECK(s.uniform_entropy == Approx(ln_sum / 5));
  CHECK(s.entropy_table() == std::vector<std::vector<double>>{{s.entropy[0], s.entropy[1]}});
}

TEST_CASE("analysis: scores divide by the row sum, so rows that do not sum to one give the same fractions",
          "[analysis]") {
  Array<float> a = zeros(1, 1, 6);
  set_uniform(a, 0, 0);
  const HeadScores one = score_heads(a, ids_of(kRepeats), kExpected);
  a *= 3.f;
  const HeadScores three = score_heads(a, ids_of(kRepeats), kExpected);
  for (std::size_t i = 0; i < one.score.size(); ++i) CHECK(three.score[i] == Approx(one.score[i]));
  CHECK(three.entropy[0] == Approx(one.entropy[0]));
}

TEST_CASE("analysis: queries without pattern cells are left out and patterns with none are not reported",
          "[analysis]") {
  // No token repeats: duplicate_token and induction have no counted query; one expected key only.
  Array<float> a = zeros(1, 1, 4);
  set_uniform(a, 0, 0);
  const HeadScores s = score_heads(a, ids_of({0, 1, 2, 3}), {-1, -1, -1, 1});
  CHECK_FALSE(s.index_of(Pattern::duplicate_token).has_value());
  CHECK_FALSE(s.index_of(Pattern::induction).has_value());
  CHECK(s.table(Pattern::induction).empty());
  const auto e = s.index_of(Pattern::expected);
  REQUIRE(e.has_value());
  CHECK(s.counted[*e] == 1);
  CHECK(s.at(*e, 0, 0) == Approx(0.25));  // query 3's weight on key 1, not divided by the 4 queries
  CHECK(s.counted[*s.index_of(Pattern::previous_token)] == 3);  // query 0 has no previous token
  CHECK(s.counted[*s.index_of(Pattern::self)] == 3);            // query 0 does not count for self
  // Without expected keys the expected pattern is absent.
  CHECK_FALSE(score_heads(a, ids_of({0, 1, 2, 3})).index_of(Pattern::expected).has_value());
}

TEST_CASE("analysis: over two sequences each query counts once, so a sequence weighs by its counted queries",
          "[analysis]") {
  // Sequence A (T = 3): one duplicate query (q = 2 repeats key 0) looking only at key 0: fraction 1.
  Array<float> a = zeros(1, 1, 3);
  a(0, 0, 0, 0) = 1.f, a(0, 0, 1, 0) = 1.f, a(0, 0, 2, 0) = 1.f;
  // Sequence B (T = 4, all the same token): queries 1, 2, 3 have duplicates but look only at themselves: fraction 0.
  Array<float> b = zeros(1, 1, 4);
  for (std::size_t q = 0; q < 4; ++q) b(0, 0, q, q) = 1.f;
  HeadPatternAccumulator acc;
  acc.add(a, ids_of({4, 8, 4}));
  acc.add(b, ids_of({6, 6, 6, 6}));
  CHECK(acc.sequences() == 2);
  const HeadScores s = acc.scores();
  const std::size_t dup = *s.index_of(Pattern::duplicate_token);
  CHECK(s.counted[dup] == 4);
  CHECK(s.at(dup, 0, 0) == Approx(1.0 / 4));  // not the mean of the two sequences' means (1/2)
  const std::size_t self = *s.index_of(Pattern::self);
  CHECK(s.at(self, 0, 0) == Approx(3.0 / 5));  // A: queries 1, 2 no; B: queries 1, 2, 3 yes
  CHECK(s.sequences == 2);
}

TEST_CASE("analysis: verdicts name each head's best pattern or call it diffuse with its entropy", "[analysis]") {
  Array<float> a = zeros(2, 2, 6);
  set_previous_token(a, 0, 0);
  set_uniform(a, 0, 1);
  set_uniform(a, 1, 0);
  for (std::size_t q = 0; q < 6; ++q) a(1, 1, q, q) = 1.f;  // self
  const HeadScores s = score_heads(a, ids_of(kRepeats), kExpected);
  const std::vector<HeadVerdict> v = verdicts(s);
  REQUIRE(v.size() == 4);
  CHECK(v[0].layer == 0);
  CHECK(v[0].head == 0);
  CHECK_FALSE(v[0].diffuse);
  CHECK(v[0].best == Pattern::previous_token);
  CHECK(v[0].label() == "previous_token 1.00");
  // The uniform head: previous_token, self and first_token tie at 0.29 (< 0.4): diffuse, the first of them named.
  CHECK(v[1].diffuse);
  CHECK(v[1].best == Pattern::previous_token);
  CHECK(v[1].score == Approx(0.29));
  CHECK(v[1].baseline == Approx(0.29));
  CHECK(v[1].label() == "diffuse (entropy 1.32 nats; best: previous_token 0.29)");
  CHECK(v[3].layer == 1);
  CHECK(v[3].head == 1);
  CHECK(v[3].best == Pattern::self);
  CHECK(v[3].label() == "self 1.00");
  // A lower threshold names the uniform head after its best pattern.
  CHECK_FALSE(verdicts(s, 0.25)[1].diffuse);
}

TEST_CASE("analysis: best_head finds the head with the highest expected-pattern score", "[analysis]") {
  Array<float> a = zeros(2, 3, 6);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < 3; ++h) set_uniform(a, l, h);
  // Layer 1, head 2 puts all of queries 3 and 5 on key 2, the expected key of both.
  for (const std::size_t q : {3u, 5u}) {
    for (std::size_t k = 0; k < 6; ++k) a(1, 2, q, k) = 0.f;
    a(1, 2, q, 2) = 1.f;
  }
  const auto table = score_heads(a, ids_of(kRepeats), kExpected).table(Pattern::expected);
  REQUIRE(table.size() == 2);
  REQUIRE(table[1].size() == 3);
  CHECK(table[1][2] == 1.0);
  const BestHead best = best_head(table);
  CHECK(best.layer == 1);
  CHECK(best.head == 2);
  CHECK(best.score == 1.0);
  CHECK(best_head({{std::nan(""), 0.2}, {0.7, 0.1}}).score == 0.7);
  CHECK_THROWS_AS(best_head({}), std::invalid_argument);
  CHECK_THROWS_WITH(best_head({{0.1, 0.2}, {0.3}}), Contains("layer 1 has 1 heads"));
}

TEST_CASE("analysis: the accumulator refuses bad shapes, non-finite rows and unreachable expected keys, adding nothing",
          "[analysis]") {
  HeadPatternAccumulator acc;
  Array<float> good = zeros(1, 2, 4);
  set_uniform(good, 0, 0);
  set_uniform(good, 0, 1);
  const IndexArray x = ids_of({1, 2, 1, 2});
  CHECK_THROWS_WITH(acc.add(Array<float>::from_shape({1, 2, 4, 5}), x), Contains("[L,H,T,T]"));
  CHECK_THROWS_WITH(acc.add(good, ids_of({1, 2, 3})), Contains("3 token ids") && Contains("give 4"));
  CHECK_THROWS_WITH(acc.add(good, x, {-1, -1, 3, -1}), Contains("expected key 3 of query 2"));
  CHECK_THROWS_WITH(acc.add(good, x, {-1, 0}), Contains("2 expected keys for a sequence of 4 tokens"));
  Array<float> bad = good;
  bad(0, 1, 2, 1) = std::nanf("");
  CHECK_THROWS_WITH(acc.add(bad, x), Contains("layer 0, head 1, query 2") && Contains("finite"));
  bad = good;
  for (std::size_t k = 0; k < 4; ++k) bad(0, 0, 3, k) = 0.f;
  CHECK_THROWS_WITH(acc.add(bad, x), Contains("layer 0, head 0, query 3 sums to 0"));
  CHECK(acc.sequences() == 0);
  CHECK_THROWS_AS(acc.scores(), std::logic_error);
  acc.add(good, x);
  CHECK_THROWS_WITH(acc.add(zeros(1, 3, 4), x), Contains("earlier sequences had 1 and 2"));
  CHECK(acc.sequences() == 1);
}
