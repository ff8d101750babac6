// dist/ in one process (the test binary is never started by mpirun): rank 0 of 1, collectives leave their input
// as it is, an error on the only rank is refused with its own message, and the gradient all-reduce only scales.
// The MPI side is tested from the command line under mpirun (tests/app/cli_mpi_*.sh).
#include <catch2/catch.hpp>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/dist/gradients.hpp"

using namespace tf;

TEST_CASE("dist: one process is rank 0 of 1 and every collective returns its input", "[dist]") {
  CHECK(dist::rank() == 0);
  CHECK(dist::size() == 1);
  CHECK(dist::is_root());
  std::vector<float> f{1.5f, -2.0f, 3.25f};
  dist::allreduce_sum(f.data(), f.size());
  CHECK(f == std::vector<float>{1.5f, -2.0f, 3.25f});
  double d = 0.1;
  dist::allreduce_sum(&d, 1);
  CHECK(d == 0.1);
  std::string s = "config";
  dist::broadcast(s);
  CHECK(s == "config");
  CHECK(dist::allgather("x") == std::vector<std::string>{"x"});
  CHECK(dist::any(true));
  CHECK_FALSE(dist::any(false));
  CHECK_NOTHROW(dist::check_same("the config", "anything"));
  CHECK_NOTHROW(dist::check_no_errors(""));
  CHECK_THROWS_AS(dist::check_no_errors("cannot open the data"), dist::CollectiveError);
  CHECK_THROWS_WITH(dist::check_no_errors("cannot open the data"), "cannot open the data");
}

TEST_CASE("dist: the gradient all-reduce of one process scales each gradient once and leaves the rest alone",
          "[dist]") {
  Var<float> a(Array<float>{1.0f, 2.0f}, true), b(Array<float>{3.0f}, true), c(Array<float>{4.0f}, true);
  a.mutable_grad() = Array<float>{4.0f, -8.0f};
  b.mutable_grad() = Array<float>{2.0f};
  dist::GradientAllReduce reduce;
  CHECK(reduce({a, b, a, c}, 0.25f) == 0.0);  // a listed twice is scaled once; c has no gradient
  CHECK(a.grad() == Array<float>{1.0f, -2.0f});
  CHECK(b.grad() == Array<float>{0.5f});
  CHECK_FALSE(c.has_grad());
  reduce({a, b}, 1.0f);
  CHECK(a.grad() == Array<float>{1.0f, -2.0f});
}
