// Array memory (tensor/memory.hpp): aligned blocks, freed small blocks kept per thread and handed out again.
#include <catch2/catch.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include "tinyformer/tensor/memory.hpp"
#include "tinyformer/tensor/tensor.hpp"

using namespace tf;

namespace {

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kArrayAlignment == 0; }

}  // namespace

TEST_CASE("tensor: a freed Array's block is handed to the next Array of its size, up to the cache's bound",
          "[tensor]") {
  const float* first = nullptr;
  std::size_t during = 0;  // kept while a lives (earlier tests may have left blocks of any size)
  {
    Array<float> a = Array<float>::from_shape({10, 100});
    first = a.data();
    during = cached_array_bytes();
    CHECK(aligned(first));
  }
  if (!array_blocks_cached()) {  // AddressSanitizer's build: every block goes back to the system
    CHECK(cached_array_bytes() == 0);
    return;
  }
  CHECK(cached_array_bytes() == during + 4000);
  {
    Array<float> b = Array<float>::from_shape({1000});  // the same bytes, another shape
    CHECK(b.data() == first);
    CHECK(cached_array_bytes() == during);
    Array<double> c = Array<double>::from_shape({10, 100});  // another size, 8000 bytes: a block of its own
    CHECK(static_cast<const void*>(c.data()) != static_cast<const void*>(first));
    CHECK(aligned(c.data()));
  }
  // Blocks above kCachedBlockBytes are not kept
  const std::size_t kept = cached_array_bytes();
  { Array<float> big = Array<float>::from_shape({kCachedBlockBytes / sizeof(float) + 16}); }
  CHECK(cached_array_bytes() == kept);
  // The cache keeps at most kCachedBytes: free more than that in blocks of the largest kept size
  {
    std::vector<Array<float>> many;
    for (std::size_t i = 0; i < kCachedBytes / kCachedBlockBytes + 8; ++i)
      many.push_back(Array<float>::from_shape({kCachedBlockBytes / sizeof(float)}));
    for (const auto& m : many) CHECK(aligned(m.data()));
  }
  CHECK(cached_array_bytes() <= kCachedBytes);
  CHECK(cached_array_bytes() > kCachedBytes - kCachedBlockBytes);
}

TEST_CASE("tensor: Arrays made on one thread and freed on another, and a thread's cache at its exit, are safe",
          "[tensor]") {
  std::vector<Array<float>> made(8);
  std::thread maker([&] {
    for (auto& a : made) a = Array<float>::from_shape({256});
    Array<float> local = Array<float>::from_shape({512});  // freed into this thread's cache, released at its exit
    local.fill(1.0f);
  });
  maker.join();
  for (auto& a : made) {
    CHECK(aligned(a.data()));
    a.fill(2.0f);  // the main thread writes and then frees them into its own cache
  }
  made.clear();
  std::thread reuser([] {  // a fresh thread starts with nothing kept
    CHECK(cached_array_bytes() == 0);
    Array<float> a = Array<float>::from_shape({256});
    a.fill(3.0f);
    CHECK(a(255) == 3.0f);
  });
  reuser.join();
}
