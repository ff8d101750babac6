// The thread pool: every piece runs once, pieces cover the range without overlap, nested calls run
// serially, a worker that cannot run leaves its piece to the caller, and an exception in a piece reaches the caller
// only after every piece has ended; the thread count of `auto` from OMP_NUM_THREADS.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
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

namespace {

// Worker threads held in a signal handler stand for workers whose cores are taken (by another process, or by the
// host of a virtual machine): they cannot claim anything until released.
std::atomic<int> g_held{0};
std::atomic<bool> g_release{false};
void hold_here(int) {
  g_held += 1;
  while (!g_release) {
  }
}

// The pool's workers: the threads other than this one that run pieces (each has run one within `attempts` calls).
std::vector<pthread_t> pool_workers(int threads) {
  const pthread_t caller = pthread_self();
  std::mutex mutex;
  std::vector<pthread_t> found;
  for (int attempt = 0; attempt < 2000 && static_cast<int>(found.size()) < threads - 1; ++attempt) {
    parallel_for(static_cast<std::size_t>(threads), 1, [&](std::size_t, std::size_t) {
      const pthread_t self = pthread_self();
      {
        std::lock_guard<std::mutex> lock(mutex);
        const bool known = std::any_of(found.begin(), found.end(), [&](pthread_t t) { return pthread_equal(t, self); });
        if (pthread_equal(self, caller) == 0 && !known) found.push_back(self);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // time for the other threads to claim a piece
    });
  }
  return found;
}

}  // namespace

TEST_CASE("threads: workers that cannot run leave their pieces to the others instead of holding up the call",
          "[threads]") {
  test::ThreadsGuard guard;
  struct sigaction action {};
  struct sigaction saved {};
  action.sa_handler = hold_here;
  sigemptyset(&action.sa_mask);
  REQUIRE(sigaction(SIGUSR2, &action, &saved) == 0);
  std::mt19937 rng(24);
  // generated cases: thread counts 2-4, a random nonempty subset of the workers held, ranges of 1-300 items
  for (int trial = 0; trial < 30; ++trial) {
    const int threads = 2 + trial % 3;
    set_num_threads(threads);
    const std::vector<pthread_t> workers = pool_workers(threads);
    REQUIRE(static_cast<int>(workers.size()) == threads - 1);
    std::vector<pthread_t> held;
    for (const pthread_t w : workers)
      if (held.empty() || rng() % 2 == 0) held.push_back(w);
    const std::size_t n = 1 + rng() % 300;
    INFO("threads " << threads << ", workers held " << held.size() << ", items " << n);
    g_held = 0;
    g_release = false;
    // stopped a while after their last piece: still spinning (200 us), going to sleep, or asleep
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 400));
    for (const pthread_t w : held) REQUIRE(pthread_kill(w, SIGUSR2) == 0);
    while (g_held < static_cast<int>(held.size())) std::this_thread::yield();

    // the pool's one caller is another thread here; the held workers stay held until after the wait below
    std::vector<std::atomic<int>> hits(n);
    std::mutex mutex;
    std::vector<pthread_t> ran_on;
    auto call = std::async(std::launch::async, [&] {
      parallel_for(n, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) hits[i] += 1;
        std::lock_guard<std::mutex> lock(mutex);
        ran_on.push_back(pthread_self());
      });
    });
    const bool returned = call.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    g_release = true;  // let the workers go whatever happened, so that the pool can be joined
    call.get();
    CHECK(returned);  // with pieces assigned to threads, the call waits for the held workers: false
    for (const auto& h : hits) CHECK(h == 1);
    for (const pthread_t t : ran_on)
      for (const pthread_t w : held) CHECK(pthread_equal(t, w) == 0);  // no held worker ran a piece
  }
  sigaction(SIGUSR2, &saved, nullptr);
}

namespace {

// Sets OMP_NUM_THREADS for one test and puts back what the process had (the presets of the suite set it to 1).
class OmpNumThreadsGuard {
 public:
  OmpNumThreadsGuard() {
    if (const char* v = std::getenv("OMP_NUM_THREADS")) saved_ = v;
  }
  ~OmpNumThreadsGuard() {
    if (saved_)
      setenv("OMP_NUM_THREADS", saved_->c_str(), 1);
    else
      unsetenv("OMP_NUM_THREADS");
  }
  OmpNumThreadsGuard(const OmpNumThreadsGuard&) = delete;
  OmpNumThreadsGuard& operator=(const OmpNumThreadsGuard&) = delete;

 private:
  std::optional<std::string> saved_;
};

// What OMP_NUM_THREADS should give, read another way than the library reads it: the first comma-separated field,
// parsed by a stream as one whole number with only white space around it, no sign; 0 for an empty value, nullopt for a
// value that must be refused.
std::optional<int> expected_threads(const std::string& value) {
  if (value.empty()) return 0;
  const std::string field = value.substr(0, value.find(','));
  const auto digit = field.find_first_not_of(" \t\n\v\f\r");
  if (digit == std::string::npos || field[digit] < '0' || field[digit] > '9') return std::nullopt;
  std::istringstream in(field);
  long long n = 0;
  std::string rest;
  if (!(in >> n) || in >> rest) return std::nullopt;
  if (n < 1 || n > max_threads()) return std::nullopt;
  return static_cast<int>(n);
}

}  // namespace

TEST_CASE("threads: auto is OMP_NUM_THREADS when set, else the physical cores", "[threads]") {
  OmpNumThreadsGuard guard;
  unsetenv("OMP_NUM_THREADS");
  CHECK(threads_from_environment() == 0);
  CHECK(default_threads() == physical_cores());
  setenv("OMP_NUM_THREADS", "", 1);  // empty: unset
  CHECK(default_threads() == physical_cores());
  setenv("OMP_NUM_THREADS", "3", 1);
  CHECK(default_threads() == 3);
  setenv("OMP_NUM_THREADS", " 2 ,1", 1);  // OpenMP's list of nested levels: the first is the process's
  CHECK(default_threads() == 2);
  setenv("OMP_NUM_THREADS", std::to_string(max_threads()).c_str(), 1);
  CHECK(default_threads() == max_threads());
}

TEST_CASE("threads: every OMP_NUM_THREADS is either a count from 1 to the bound or refused in one line naming it",
          "[threads]") {
  OmpNumThreadsGuard guard;
  const int bound = max_threads();
  // 3000 values drawn from pieces that make whole numbers, near misses and junk, 1 to 4 pieces each (seeded).
  const std::vector<std::string> pieces = {"",
                                           " ",
                                           "\t",
                                           "+",
                                           "-",
                                           "0",
                                           "00",
                                           ",",
                                           ".",
                                           "1.5",
                                           "1e3",
                                           "x",
                                           "\n",
                                           "\x01",
                                           "\xff",
                                           "\xef\xbc\x94",
                                           "99999999999999999999",
                                           "-1"};
  std::mt19937 rng(23);
  int accepted = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string value;
    const int parts = 1 + static_cast<int>(rng() % 4);
    for (int p = 0; p < parts; ++p) {
      if (rng() % 2 == 0)
        value += std::to_string(rng() % static_cast<unsigned>(2 * bound + 2));
      else
        value += pieces[rng() % pieces.size()];
    }
    INFO("OMP_NUM_THREADS '" << value << "'");
    setenv("OMP_NUM_THREADS", value.c_str(), 1);
    const std::optional<int> expected = expected_threads(value);
    if (expected) {
      CHECK(threads_from_environment() == *expected);
      ++accepted;
    } else {
      try {
        threads_from_environment();
        FAIL("accepted");
      } catch (const std::invalid_argument& e) {
        const std::string message = e.what();
        CHECK_THAT(message, Catch::StartsWith("OMP_NUM_THREADS '") &&
                                Catch::Contains(fmt::format("a whole number from 1 to {}", bound)));
        CHECK(message.find('\n') == std::string::npos);
        CHECK(message.size() <= 300);
      }
      ++refused;
    }
  }
  CHECK(accepted > 200);  // both kinds are drawn often (283 and 2717 with this seed)
  CHECK(refused > 200);
}
