// Profiling is an object the caller owns: ops are timed only inside a profile::Recording scope of a Profiler, on
// the thread that opened it.
#include <catch2/catch.hpp>

#include <thread>

#include "tinyformer/autograd/profile.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;

namespace {
std::size_t calls_of(const profile::Profiler& p, const std::string& op) {
  for (const auto& t : p.report())
    if (t.name == op) return t.calls;
  return 0;
}

void one_step() {
  Var<double> x(Array<double>{1.0, 2.0}, true);
  sum(exp(x)).backward();
}
}  // namespace

TEST_CASE("autograd: a profiler times the ops of its recording scope and nothing outside it", "[autograd]") {
  profile::Profiler p;
  one_step();  // before: not recorded
  REQUIRE(profile::active() == nullptr);
  {
    profile::Recording recording(p);
    REQUIRE(profile::active() == &p);
    p.begin_forward();
    one_step();
    one_step();
  }
  REQUIRE(profile::active() == nullptr);
  one_step();  // after: not recorded
  CHECK(calls_of(p, "exp") == 2);
  CHECK(calls_of(p, "sum") == 2);
  p.reset();
  CHECK(p.report().empty());
}

TEST_CASE("autograd: recording scopes nest, and another thread's ops go to its own profiler", "[autograd]") {
  profile::Profiler outer, inner, other;
  {
    profile::Recording a(outer);
    {
      profile::Recording b(inner);
      std::thread t([&] {
        profile::Recording c(other);
        one_step();
        one_step();
        one_step();
      });
      t.join();
      one_step();
    }
    CHECK(profile::active() == &outer);
    one_step();
    one_step();
  }
  CHECK(calls_of(inner, "exp") == 1);
  CHECK(calls_of(outer, "exp") == 2);
  CHECK(calls_of(other, "exp") == 3);
}
