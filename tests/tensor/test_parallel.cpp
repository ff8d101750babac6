// The thread pool: every piece runs once, pieces cover the range without overlap, nested calls run
// serially, and an exception in a piece reaches the caller only after every piece has ended.
#include <atomic>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/tensor/parallel.hpp"

using namespace tf;

TEST_CASE("threads: parallel_for covers the range once, and nested calls run serially", "[threads]") {
  test::ThreadsGuard guard;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    std::vector<std::atomic<int>> hits(1000);
    std::atomic<int> nested_pieces{0};
    parallel_for(hits.size(), 10, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) hits[i] += 1;
      parallel_for(4, 1, [&](std::size_t b, std::size_t e) {
        CHECK(b == 0);  // one serial piece inside a parallel body
        CHECK(e == 4);
        nested_pieces += 1;
      });
    });
    for (const auto& h : hits) CHECK(h == 1);
    CHECK(nested_pieces == std::min(threads, 100));
  }
}

TEST_CASE("threads: an exception inside a parallel piece reaches the caller after every piece ended", "[threads]") {
  test::ThreadsGuard guard;
  set_num_threads(2);
  std::atomic<int> finished{0};
  CHECK_THROWS_WITH(parallel_for(2, 1,
                                 [&](std::size_t begin, std::size_t) {
                                   if (begin == 0) throw std::runtime_error("piece 0 failed");
                                   finished += 1;
                                 }),
                    "piece 0 failed");
  CHECK(finished == 1);  // the other piece ran to its end before the call returned
  // the pool still works afterwards
  std::atomic<int> ran{0};
  parallel_for(2, 1, [&](std::size_t, std::size_t) { ran += 1; });
  CHECK(ran == 2);
}
