#pragma once
// Per-op timing of training steps (`tinyformer bench --profile`). Off by default; when off every hook is
// one branch on a flag.
//
// Forward: ops are timed back to back. make_result() charges the time since the previous op finished
// (or since begin_forward()) to the op it records, so an op's forward time includes the module glue
// just before it. Backward: Var::backward() times each node's backward function. Other phases (the
// optimizer step, zero_grad) are timed by the caller with add_phase().
#include <cstddef>
#include <string>
#include <vector>

namespace tf::profile {

struct OpTime {
  std::string name;
  std::size_t calls = 0;  // forward calls
  double forward_ms = 0;  // summed over all recorded steps
  double backward_ms = 0;
};

void set_enabled(bool on);
bool enabled();
void reset();

void begin_forward();                          // starts the forward clock
void end_forward_op(const char* op);           // from make_result
void add_backward(const char* op, double ms);  // from Var::backward
void add_phase(const char* what, double ms);   // e.g. "optimizer step"

// Accumulated times, largest total first.
std::vector<OpTime> report();

}  // namespace tf::profile
