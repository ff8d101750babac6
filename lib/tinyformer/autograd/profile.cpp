#include "tinyformer/autograd/profile.hpp"

#include <algorithm>

namespace tf::profile {

namespace {
thread_local Profiler* t_active = nullptr;
}  // namespace

Profiler* active() { return t_active; }

Recording::Recording(Profiler& profiler) : previous_(t_active) { t_active = &profiler; }
Recording::~Recording() { t_active = previous_; }

OpTime& Profiler::entry(const char* name) {
  OpTime& t = ops_[name];
  t.name = name;
  return t;
}

void Profiler::begin_forward() { last_ = std::chrono::steady_clock::now(); }

void Profiler::end_forward_op(const char* op) {
  const auto now = std::chrono::steady_clock::now();
  OpTime& t = entry(op);
  t.calls += 1;
  t.forward_ms += std::chrono::duration<double, std::milli>(now - last_).count();
  last_ = now;
}

void Profiler::add_backward(const char* op, double ms) { entry(op).backward_ms += ms; }

void Profiler::add_phase(const char* what, double ms) { entry(what).forward_ms += ms; }

std::vector<OpTime> Profiler::report() const {
  std::vector<OpTime> out;
  out.reserve(ops_.size());
  for (const auto& [name, t] : ops_) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const OpTime& a, const OpTime& b) {
    return a.forward_ms + a.backward_ms > b.forward_ms + b.backward_ms;
  });
  return out;
}

}  // namespace tf::profile
