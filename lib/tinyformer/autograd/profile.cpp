#include "tinyformer/autograd/profile.hpp"

#include <algorithm>
#include <chrono>
#include <map>

namespace tf::profile {

namespace {
using Clock = std::chrono::steady_clock;
bool g_enabled = false;
Clock::time_point g_last;
std::map<std::string, OpTime> g_ops;

OpTime& entry(const char* name) {
  OpTime& t = g_ops[name];
  t.name = name;
  return t;
}
}  // namespace

void set_enabled(bool on) { g_enabled = on; }
bool enabled() { return g_enabled; }
void reset() { g_ops.clear(); }

void begin_forward() {
  if (g_enabled) g_last = Clock::now();
}

void end_forward_op(const char* op) {
  if (!g_enabled) return;
  const auto now = Clock::now();
  OpTime& t = entry(op);
  t.calls += 1;
  t.forward_ms += std::chrono::duration<double, std::milli>(now - g_last).count();
  g_last = now;
}

void add_backward(const char* op, double ms) {
  if (g_enabled) entry(op).backward_ms += ms;
}

void add_phase(const char* what, double ms) {
  if (g_enabled) entry(what).forward_ms += ms;
}

std::vector<OpTime> report() {
  std::vector<OpTime> out;
  for (const auto& [name, t] : g_ops) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const OpTime& a, const OpTime& b) {
    return a.forward_ms + a.backward_ms > b.forward_ms + b.backward_ms;
  });
  return out;
}

}  // namespace tf::profile
