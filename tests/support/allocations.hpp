#pragma once
// The number of calls to operator new (every form) in this test binary so far: tests/support/allocations.cpp replaces
// the global allocation functions with ones that count, so that a test can show a loop allocates nothing.
#include <cstddef>

namespace tf::test {

std::size_t allocations();

}  // namespace tf::test
