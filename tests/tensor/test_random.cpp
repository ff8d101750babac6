// The seeded generator: the standard's mt19937_64 sequence, the distributions written here, sub-streams, and the
// state round trip that checkpoints rely on.
#include <catch2/catch.hpp>

#include <cmath>
#include <locale>
#include <sstream>
#include <string>

#include "tinyformer/tensor/random.hpp"

using namespace tf;

TEST_CASE("tensor: Rng is std::mt19937_64 (the standard fixes its 10000th value from seed 5489)", "[tensor]") {
  Rng rng(5489);
  std::uint64_t v = 0;
  for (int i = 0; i < 10000; ++i) v = rng.next_u64();
  CHECK(v == 9981545732273789042ull);
}

TEST_CASE("tensor: uniform, below and normal stay in range with the right moments", "[tensor]") {
  Rng rng(7);
  double sum = 0, sum_sq = 0, u_min = 1, u_max = 0;
  std::size_t counts[5] = {};
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    u_min = std::min(u_min, u);
    u_max = std::max(u_max, u);
    ++counts[rng.below(5)];
    const double z = rng.normal(1.0, 2.0);
    sum += z;
    sum_sq += z * z;
  }
  CHECK(u_min >= 0.0);
  CHECK(u_max < 1.0);
  for (std::size_t c : counts) CHECK(std::abs(static_cast<double>(c) / n - 0.2) < 0.005);
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  CHECK(mean == Approx(1.0).margin(0.02));
  CHECK(std::sqrt(var) == Approx(2.0).margin(0.02));
  CHECK(rng.uniform(-3.0, -1.0) < -1.0);
}

TEST_CASE("tensor: an Rng restored from its state continues the same sequence, and split streams differ", "[tensor]") {
  Rng a(42);
  for (int i = 0; i < 100; ++i) a.next_u64();
  Rng b(0);
  b.set_state(a.state());
  for (int i = 0; i < 100; ++i) CHECK(a.next_u64() == b.next_u64());
  Rng parent(3);
  Rng child = parent.split();
  CHECK(child.next_u64() != parent.next_u64());
  Rng again(3);
  CHECK(again.split().next_u64() == Rng(Rng(3).next_u64()).next_u64());
  CHECK_THROWS(b.set_state("not a state"));
}

namespace {
// A German number format made in code (no system locale needed): '.' between groups of three digits, ',' before
// the fraction.
struct GermanNumbers : std::numpunct<char> {
  char do_thousands_sep() const override { return '.'; }
  char do_decimal_point() const override { return ','; }
  std::string do_grouping() const override { return "\3"; }
};
}  // namespace

TEST_CASE("tensor: an Rng's state is the same text under any global locale, and reads back under any", "[tensor]") {
  Rng rng(5);
  rng.next_u64();
  const std::string classic = rng.state();
  const std::locale before = std::locale::global(std::locale(std::locale::classic(), new GermanNumbers));
  std::ostringstream check;
  check << 1234567;
  const std::string grouped = check.str();  // the global locale is in effect for a new stream
  const std::string german = rng.state();
  Rng back(0);
  back.set_state(classic);
  const std::uint64_t next_german = back.next_u64();
  std::locale::global(before);
  CHECK(grouped == "1.234.567");
  CHECK(german == classic);
  CHECK(classic.find('.') == std::string::npos);
  CHECK(next_german == rng.next_u64());
}
