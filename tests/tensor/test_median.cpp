// The project's one median (tensor/median.hpp).
#include <catch2/catch.hpp>

#include "tinyformer/tensor/median.hpp"

using namespace tf;

TEST_CASE("tensor: median takes the middle value, the mean of the two middle ones, or 0 for none", "[tensor]") {
  CHECK(median({}) == 0.0);
  CHECK(median({7.0}) == 7.0);
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({5.0, 5.0, 1.0, 9.0, 9.0}) == 5.0);
}
