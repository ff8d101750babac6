#pragma once
// NumPy's legacy RandomState (np.random.seed / rand / uniform / randint), enough of it to regenerate the
// inputs of the seed notebooks bit for bit.
//
// Facts about NumPy this relies on (checked against numpy with /usr/bin/python3):
// - np.random.seed(s) with an integer s seeds MT19937 by init_genrand(s). std::mt19937(s) is the same
//   engine with the same seeding (the C++ standard fixes both), so it is used as the bit source.
// - random_sample() / rand(): 53 bits from two 32-bit outputs a, b:
//     ((a >> 5) * 2^26 + (b >> 6)) / 2^53
// - uniform(low, high, n): low + (high - low) * random_sample(), one draw per element, row-major.
// - randint(high, n) (low = 0, int64 result): range r = high - 1, mask = smallest 2^k - 1 >= r; each value
//   takes whole 32-bit outputs, out = u & mask, rejecting out > r.
#include <cstdint>
#include <random>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::seeds {

class NumpyLegacyRandom {
 public:
  explicit NumpyLegacyRandom(std::uint32_t seed) : engine_(seed) {}

  std::uint32_t next_uint32() { return static_cast<std::uint32_t>(engine_()); }

  double random_sample() {
    const std::uint32_t a = next_uint32() >> 5, b = next_uint32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  // np.random.rand(*shape)
  Array<double> rand(const Shape& shape) {
    Array<double> out = Array<double>::from_shape(shape);
    for (auto& v : out) v = random_sample();
    return out;
  }

  // np.random.uniform(low, high, shape)
  Array<double> uniform(double low, double high, const Shape& shape) {
    Array<double> out = Array<double>::from_shape(shape);
    for (auto& v : out) v = low + (high - low) * random_sample();
    return out;
  }

  // np.random.randint(high, size=shape): integers in [0, high), returned as doubles for the engine.
  Array<double> randint(std::uint32_t high, const Shape& shape) {
    const std::uint32_t range = high - 1;
    std::uint32_t mask = range;
    for (int shift = 1; shift < 32; shift <<= 1) mask |= mask >> shift;
    Array<double> out = Array<double>::from_shape(shape);
    for (auto& v : out) {
      std::uint32_t draw = 0;
      do {
        draw = next_uint32() & mask;
      } while (draw > range);
      v = static_cast<double>(draw);
    }
    return out;
  }

 private:
  std::mt19937 engine_;
};

}  // namespace tf::seeds
