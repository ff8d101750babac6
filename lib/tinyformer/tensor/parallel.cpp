// A small fixed pool. A parallel_for's pieces are claimed, not assigned: the calling thread and the workers each take
// the next unclaimed piece until none is left, so a worker that is late (asleep, or its core taken by another process
// or, in a virtual machine, by the host) leaves its piece to whoever is free instead of holding up the step. Which
// thread runs a piece never changes what the piece computes, so results keep their bits.
// Idle workers spin for a short while (back-to-back kernels of a training step follow each other within
// microseconds) and then sleep, so a busy machine is not burned by spinning threads waiting for a time slice.
// No thread ever holds a lock another one waits for: threads sleep on a word until it changes (a futex on Linux), so a
// worker stopped anywhere, even just as it goes to sleep, delays no one.
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/tensor/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cblas.h>
#include <dlfcn.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tf {

namespace {

// OpenBLAS on one thread, with no worker of its own left running. openblas_set_num_threads starts OpenBLAS's workers
// again when they were stopped (tensor/blas_core.cpp stops them to choose the core type again), and OpenBLAS starts
// them when it loads; an idle worker spins (sched_yield) for about 0.1 s before it sleeps. tinyformer runs every
// product on one OpenBLAS thread, so the spinning only took a core: `bench --shape tiny --threads 2 --steps 10`
// ran at 11 ms a step against 7 ms with OPENBLAS_NUM_THREADS=1, and at --threads 1 used 2 CPU s a second. The
// workers are stopped (OpenBLAS's blas_thread_shutdown_, looked up at run time so that another BLAS still links)
// when the thread count is set; a later request for more OpenBLAS threads starts them again. (tensor/blas_core.cpp
// looks the same entry point up: this file is also linked alone into tinyformer_kernel_check, without blas_core.)
void openblas_on_one_thread() {
  if (openblas_get_num_threads() == 1) return;
  openblas_set_num_threads(1);
  using Stop = int (*)();
  if (auto stop = reinterpret_cast<Stop>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) stop();
}

thread_local bool t_in_region = false;

struct RegionFlag {  // marks the current thread as inside a parallel body
  bool saved = t_in_region;
  RegionFlag() { t_in_region = true; }
  ~RegionFlag() { t_in_region = saved; }
};

// A 32-bit word a thread can sleep on until it changes. wait() may also return early: callers look again.
class WaitWord {
 public:
  std::atomic<std::uint32_t> value{0};

  // Sleeps while the word holds `expected`.
  void wait(std::uint32_t expected) {
#ifdef __linux__
    syscall(SYS_futex, address(), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
    if (value.load(std::memory_order_acquire) == expected) std::this_thread::sleep_for(std::chrono::microseconds(50));
#endif
  }
  void wake_all() {
#ifdef __linux__
    syscall(SYS_futex, address(), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
#endif
  }

 private:
#ifdef __linux__
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                    std::atomic<std::uint32_t>::is_always_lock_free,
                "a futex is a plain 32-bit word");
  std::uint32_t* address() { return reinterpret_cast<std::uint32_t*>(&value); }
#endif
};

// A run is published as one 64-bit ticket: the run's number (bits 32-63), its piece count (16-31) and the next
// unclaimed piece (0-15). A piece is claimed by raising the last field with a compare-and-swap, so a thread that wakes
// after its run has ended cannot claim a piece of the next one by mistake: the run number would differ.
// Sleeping and waking pair up without a lock: a thread about to sleep says so (sleepers_, caller_asleep_) and then
// looks once more; a thread that changes a word then looks whether anyone sleeps. Both are sequentially consistent, so
// at least one of the two sees the other, and the futex sleeps only while its word still holds what the sleeper saw.
class Pool {
 public:
  explicit Pool(int workers) {
    for (int k = 1; k <= workers; ++k) threads_.emplace_back([this] { work(); });
  }
  ~Pool() {
    stop_.store(true);
    publish(0);  // wakes the sleeping workers, which then see stop_
    for (auto& t : threads_) t.join();
  }
  static constexpr std::size_t max_pieces = 0xffff;

  // Runs task(0..pieces-1) on this thread and the workers, each piece once. pieces <= max_pieces.
  void run(std::size_t pieces, FunctionRef<void(std::size_t)> task) {
    task_ = &task;
    finished_.value.store(0, std::memory_order_relaxed);
    publish(pieces);
    run_claimed();
    // a claimed piece may still run on a worker: wait for it, as it uses `task`
    const auto all_done = [&] { return finished_.value.load() == pieces; };
    if (!spin_until(all_done)) {
      caller_asleep_.store(true);
      for (std::uint32_t seen = finished_.value.load(); seen != pieces; seen = finished_.value.load())
        finished_.wait(seen);
      caller_asleep_.store(false);
    }
    if (failed_.load(std::memory_order_acquire)) {
      std::exception_ptr e = std::move(error_);
      error_ = nullptr;
      failed_.store(false, std::memory_order_relaxed);
      std::rethrow_exception(e);
    }
  }

 private:
  static std::uint64_t run_of(std::uint64_t ticket) { return ticket >> 32; }
  static std::uint64_t pieces_of(std::uint64_t ticket) { return (ticket >> 16) & 0xffff; }
  static std::uint64_t claimed_of(std::uint64_t ticket) { return ticket & 0xffff; }

  // Starts the next run with `pieces` unclaimed pieces and wakes the workers that sleep.
  void publish(std::size_t pieces) {
    const std::uint64_t run = run_of(ticket_.load(std::memory_order_relaxed)) + 1;
    ticket_.store((run << 32) | (static_cast<std::uint64_t>(pieces) << 16));
    run_word_.value.store(static_cast<std::uint32_t>(run));
    if (sleepers_.load() > 0) run_word_.wake_all();
  }

  template <class Pred>
  static bool spin_until(Pred ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    for (int i = 0;; ++i) {
      if (ready()) return true;
      if ((i & 255) == 255 && std::chrono::steady_clock::now() > deadline) return false;
    }
  }

  // Claims and runs pieces of the published run until none is left unclaimed.
  void run_claimed() {
    std::uint64_t ticket = ticket_.load(std::memory_order_acquire);
    for (;;) {
      const std::uint64_t piece = claimed_of(ticket);
      if (piece >= pieces_of(ticket)) return;
      if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel, std::memory_order_acquire))
        continue;  // `ticket` now holds the current value: another thread claimed first, or a new run began
      // the run cannot end before this piece is counted, so task_ is still this run's task
      run_piece(*task_, piece);
      if (finished_.value.fetch_add(1) + 1 == pieces_of(ticket) && caller_asleep_.load()) finished_.wake_all();
      ticket = ticket_.load(std::memory_order_acquire);
    }
  }

  // Runs one piece; the first exception of a run is kept and rethrown on the calling thread.
  void run_piece(FunctionRef<void(std::size_t)> task, std::size_t piece) {
    RegionFlag flag;
    try {
      task(piece);
    } catch (...) {
      if (!failed_.exchange(true, std::memory_order_acq_rel)) error_ = std::current_exception();
    }
  }

  void work() {
    std::uint64_t seen = 0;  // the last run this worker looked at
    for (;;) {
      const auto new_run = [&] { return run_of(ticket_.load()) != seen; };
      if (!spin_until(new_run)) {
        sleepers_.fetch_add(1);
        while (!new_run()) run_word_.wait(static_cast<std::uint32_t>(seen));
        sleepers_.fetch_sub(1);
      }
      seen = run_of(ticket_.load(std::memory_order_acquire));
      if (stop_.load()) return;
      run_claimed();
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> ticket_{0};
  WaitWord run_word_;                       // the low 32 bits of the current run's number
  std::atomic<int> sleepers_{0};            // workers asleep on run_word_, or about to be
  WaitWord finished_;                       // pieces of the current run that have ended
  std::atomic<bool> caller_asleep_{false};  // the caller sleeps on finished_, or is about to
  const FunctionRef<void(std::size_t)>* task_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};  // set by the piece that keeps its exception in error_
  std::exception_ptr error_;
};

int g_threads = 1;
std::unique_ptr<Pool> g_pool;  // g_threads - 1 workers, made on first use after set_num_threads

}  // namespace

int num_threads() { return g_threads; }

void set_num_threads(int n) {
  if (n < 1 || n > max_threads())
    throw std::invalid_argument(fmt::format("set_num_threads: n = {} threads; valid: 1 to {} (4 x this machine's {} "
                                            "hardware threads)",
                                            n, max_threads(), max_threads() / 4));
  openblas_on_one_thread();
  if (n == g_threads) return;
  g_pool.reset();
  g_threads = n;
}

bool in_parallel_region() { return t_in_region; }

int physical_cores() {
  std::istringstream cpuinfo(read_system_file("/proc/cpuinfo"));
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, package;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") package = value;
    if (key == "core id") cores.emplace(package, value);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int max_threads() { return 4 * std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

int threads_from_environment() {
  const char* set = std::getenv("OMP_NUM_THREADS");
  if (set == nullptr || *set == '\0') return 0;
  const std::string value(set);
  std::string first = value.substr(0, value.find(','));
  first.erase(0, first.find_first_not_of(" \t\n\v\f\r"));
  first.erase(first.find_last_not_of(" \t\n\v\f\r") + 1);
  const int bound = max_threads();
  int n = 0;  // held at bound + 1 once past the bound, so that no number of digits overflows it
  bool whole = !first.empty();
  for (const char c : first) {
    whole = whole && c >= '0' && c <= '9';
    if (whole) n = std::min(n * 10 + (c - '0'), bound + 1);
  }
  if (!whole || n < 1 || n > bound) {
    throw std::invalid_argument(fmt::format(
        "OMP_NUM_THREADS '{}' is not a thread count: set it to a whole number from 1 to {} (4 x this machine's {} "
        "hardware threads), or unset it for the {} physical cores",
        printable_message(value, 40), bound, bound / 4, physical_cores()));
  }
  return n;
}

int default_threads() {
  const int from_environment = threads_from_environment();
  return from_environment > 0 ? from_environment : physical_cores();
}

void parallel_for(std::size_t n, std::size_t min_per_piece, FunctionRef<void(std::size_t, std::size_t)> body) {
  parallel_for_balanced(n, min_per_piece, 1, body);
}

void parallel_for_balanced(std::size_t n, std::size_t min_per_piece, std::size_t per_thread,
                           FunctionRef<void(std::size_t, std::size_t)> body) {
  if (n == 0) return;
  const std::size_t by_size = std::max<std::size_t>(1, n / std::max<std::size_t>(1, min_per_piece));
  const std::size_t pieces =
      std::min({static_cast<std::size_t>(g_threads) * std::max<std::size_t>(1, per_thread), by_size, Pool::max_pieces});
  if (g_threads <= 1 || pieces <= 1 || t_in_region) {  // one thread: no pool, however many pieces per thread
    body(0, n);
    return;
  }
  if (!g_pool) g_pool = std::make_unique<Pool>(g_threads - 1);
  g_pool->run(pieces, [&](std::size_t i) { body(n * i / pieces, n * (i + 1) / pieces); });
}

}  // namespace tf
