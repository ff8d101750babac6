#pragma once
// PyTorch's CPU generator (torch.manual_seed, torch.rand, nn.Linear's default init), enough of it to
// regenerate the float32 weights of the seed notebooks bit for bit.
//
// Facts about PyTorch (1.13) this relies on (checked against torch with /usr/bin/python3):
// - torch.manual_seed(s) seeds MT19937 by init_genrand(s): the same engine and seeding as std::mt19937(s).
// - A float32 uniform draw on [from, to) takes ONE 32-bit output u and its low 24 bits:
//     x = (u & (2^24 - 1)) * 2^-24;  value = float(x * (to - from) + from)
//   where from and to are first cast to float and the arithmetic is done in double (exact: 24-bit x times a
//   float), then rounded to float once. torch.rand is from = 0, to = 1. Elements are drawn row-major.
// - nn.Linear(in, out) initialises weight [out, in] with kaiming_uniform_(a = sqrt(5)):
//     gain = sqrt(2 / (1 + a^2)), std = gain / sqrt(fan_in), bound = sqrt(3) * std   (Python doubles)
//   then weight.uniform_(-bound, bound); with bias=False nothing else is drawn.
#include <cmath>
#include <cstdint>
#include <random>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::seeds {

class TorchCpuGenerator {
 public:
  explicit TorchCpuGenerator(std::uint64_t seed) : engine_(static_cast<std::uint32_t>(seed & 0xffffffffu)) {}

  float uniform_float(float from, float to) {
    const std::uint32_t u = static_cast<std::uint32_t>(engine_());
    const double x = static_cast<double>(u & ((1u << 24) - 1)) * 0x1.0p-24;
    return static_cast<float>(x * (static_cast<double>(to) - static_cast<double>(from)) + static_cast<double>(from));
  }

  // torch.rand(*shape) (float32), widened to double: every float is exact in double.
  Array<double> rand(const Shape& shape) { return uniform(0.0, 1.0, shape); }

  // torch.empty(shape).uniform_(from, to) (float32), widened to double.
  Array<double> uniform(double from, double to, const Shape& shape) {
    const float f = static_cast<float>(from), t = static_cast<float>(to);
    Array<double> out = Array<double>::from_shape(shape);
    for (auto& v : out) v = static_cast<double>(uniform_float(f, t));
    return out;
  }

  // nn.Linear(in_features, out_features, bias=False).weight, [out, in].
  Array<double> linear_weight(std::size_t in_features, std::size_t out_features) {
    const double a = std::sqrt(5.0);
    const double gain = std::sqrt(2.0 / (1.0 + a * a));
    const double stddev = gain / std::sqrt(static_cast<double>(in_features));
    const double bound = std::sqrt(3.0) * stddev;
    return uniform(-bound, bound, {out_features, in_features});
  }

 private:
  std::mt19937 engine_;
};

}  // namespace tf::seeds
