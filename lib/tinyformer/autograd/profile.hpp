#pragma once
// Per-op timing of training steps (`tinyformer bench --profile`). A Profiler holds the times; it records only
// while a profile::Recording scope makes it this thread's active profiler, and with none active every hook is
// one branch on a thread-local pointer. Nothing is process-wide: two threads may profile separately.
//
// Forward: ops are timed back to back. make_result() charges the time since the previous op finished
// (or since begin_forward()) to the op it records, so an op's forward time includes the module glue
// just before it. Backward: Var::backward() times each node's backward function. Other phases (the
// optimizer step, zero_grad) are timed by the caller with add_phase().
#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace tf::profile {

struct OpTime {
  std::string name;
  std::size_t calls = 0;  // forward calls
  double forward_ms = 0;  // summed over all recorded steps
  double backward_ms = 0;
};

class Profiler {
 public:
  void begin_forward();                          // starts the forward clock
  void end_forward_op(const char* op);           // from make_result
  void add_backward(const char* op, double ms);  // from Var::backward
  void add_phase(const char* what, double ms);   // e.g. "optimizer step (AdamW)"

  // Accumulated times, largest total first.
  std::vector<OpTime> report() const;
  void reset() { ops_.clear(); }

 private:
  OpTime& entry(const char* name);
  std::chrono::steady_clock::time_point last_;
  std::map<std::string, OpTime> ops_;
};

// The profiler recording on this thread, or null.
Profiler* active();

// Makes `profiler` this thread's active profiler for the scope (nested scopes restore the outer one).
class Recording {
 public:
  explicit Recording(Profiler& profiler);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

 private:
  Profiler* previous_;
};

}  // namespace tf::profile
