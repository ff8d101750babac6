// arange, full, rand, randn and randint: torch's counts and ranges, one seed giving the same values.
#include <catch2/catch.hpp>

#include <cmath>

#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include "tinyformer/tensor/factory.hpp"

using namespace tf;

TEST_CASE("tensor: arange makes ceil((end - start) / step) values, as torch.arange", "[tensor]") {
  CHECK((arange<double>(0, 5) == Array<double>{0, 1, 2, 3, 4}));
  CHECK((arange<double>(1, 2.5, 0.5) == Array<double>{1, 1.5, 2}));
  CHECK(arange<float>(0, 1, 0.1).size() == 10);
  CHECK((arange<double>(3, 0, -1) == Array<double>{3, 2, 1}));
  CHECK_THROWS_WITH(arange<double>(0, 1, 0), Catch::Contains("step"));
  CHECK_THROWS_WITH(arange<double>(2, 1), Catch::Contains("no values"));
  CHECK_THROWS_WITH(arange<double>(0, INFINITY), Catch::Contains("finite"));
}

TEST_CASE("tensor: full, rand, randn and randint fill the shape, in range, the same for the same seed", "[tensor]") {
  CHECK((full<float>({2, 2}, 7.5f) == Array<float>{{7.5f, 7.5f}, {7.5f, 7.5f}}));
  Rng r1(5), r2(5);
  const Array<double> u = rand<double>({1000}, r1);
  CHECK(u == rand<double>({1000}, r2));
  CHECK(xt::amin(u)() >= 0.0);
  CHECK(xt::amax(u)() < 1.0);
  const Array<double> n = randn<double>({4000}, r1);
  double mean = 0, square = 0;
  for (const double v : n) mean += v / static_cast<double>(n.size());
  for (const double v : n) square += (v - mean) * (v - mean) / static_cast<double>(n.size());
  CHECK(std::abs(mean) < 0.1);
  CHECK(std::abs(std::sqrt(square) - 1.0) < 0.1);
  const Array<double> k = randint<double>(-2, 3, {500}, r1);
  CHECK(xt::amin(k)() == -2);
  CHECK(xt::amax(k)() == 2);
  CHECK(xt::all(xt::equal(xt::round(k), k)));
  CHECK_THROWS_WITH(randint<double>(3, 3, {1}, r1), Catch::Contains("below"));
}
