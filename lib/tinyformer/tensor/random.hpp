#pragma once
// One seeded generator drives init, data, dropout and sampling. The engine is std::mt19937_64, whose
// sequence the C++ standard fixes; the distributions are written here so results match on every platform.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

namespace tf {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}

  std::uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Standard normal by Box-Muller (two uniforms per draw, no cached value, so the state is the engine alone).
  double normal();
  double normal(double mean, double stddev) { return mean + stddev * normal(); }
  // Uniform integer in [0, n), unbiased (rejection sampling).
  std::uint64_t below(std::uint64_t n);
  // An index drawn in proportion to weights[0, n) (each 0 or more, summing to total > 0) with one uniform: the first
  // whose running sum passes uniform() * total; the last of weight above 0 when rounding leaves the draw past the
  // sum, so a weight of 0 is never drawn.
  std::size_t pick(const double* weights, std::size_t n, double total);
  // A new generator for a sub-stream, derived deterministically from this one.
  Rng split() { return Rng(engine_()); }

  // The full engine state as text, for checkpoints.
  std::string state() const;
  void set_state(const std::string& text);

 private:
  std::mt19937_64 engine_;
};

}  // namespace tf
