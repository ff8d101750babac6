#pragma once
// The one thread pool of tinyformer's kernels (tensor/parallel.cpp). BLAS always runs single-threaded; products are
// split across threads by gemm() itself, attention over batch x heads, elementwise loops over ranges.
// Every split divides work that has no reduction across the pieces (rows, columns, heads, elements),
// so results are bit-identical whatever the thread count. One pool per process: parallel_for is meant
// to be called from one thread at a time (the training loop's).
#include <cstddef>
#include <type_traits>
#include <utility>

namespace tf {

// A callable passed down without being copied or owned (a function_ref): a pointer to it and a function that calls it.
// It must not outlive the callable. Unlike std::function it never allocates, so a loop of parallel_for calls (a
// decoder's token) allocates nothing whatever its body captures.
template <class Signature>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef> &&
                                              std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): stands in for a callable, as std::function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))), call_([](void* o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

int num_threads();
void set_num_threads(int n);  // 1 <= n <= max_threads() (else std::invalid_argument); BLAS: one thread per caller
bool in_parallel_region();    // true inside a parallel_for body (nested calls then run serially)

// The machine's physical cores: distinct (physical id, core id) pairs of /proc/cpuinfo, or
// std::thread::hardware_concurrency() where that file says nothing (at least 1).
int physical_cores();
// The most kernel threads a run may ask for: 4 x std::thread::hardware_concurrency() (at least 4).
int max_threads();
// OMP_NUM_THREADS, read as PyTorch and OpenBLAS read it: the threads of one process when nothing else says. 0 when it
// is unset or empty; of a list ("4,2", OpenMP's nested levels) the first, white space around it ignored. A value that
// is not a whole number from 1 to max_threads() throws std::invalid_argument, one line naming the variable, the value
// and what would be valid.
int threads_from_environment();
// The thread count `auto` stands for: threads_from_environment() when set, else physical_cores().
int default_threads();

// The multiply-adds (or as much other work) a parallel piece should hold at least: below it, handing the piece to
// another thread costs about what it saves. Callers derive their min_per_piece from it.
inline constexpr std::size_t kMinPieceMacs = std::size_t{1} << 20;

// Calls body(begin, end) on contiguous pieces of [0, n), in parallel. Each piece holds at least
// `min_per_piece` items (so small loops stay on one thread); pieces never overlap.
void parallel_for(std::size_t n, std::size_t min_per_piece, FunctionRef<void(std::size_t begin, std::size_t end)> body);
// The same in up to per_thread pieces per thread, claimed by whichever thread is free: a thread that starts late (one
// the system descheduled on a loaded machine) takes fewer pieces instead of holding the others up. For short loops
// run many times, such as the decoder's matrix-vector products.
void parallel_for_balanced(std::size_t n, std::size_t min_per_piece, std::size_t per_thread,
                           FunctionRef<void(std::size_t begin, std::size_t end)> body);

}  // namespace tf
