#include "tinyformer/train/attention_stats.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::train {

std::vector<double> attention_entropy(const Array<float>& weights) {
  if (weights.dimension() != 4) throw std::invalid_argument("attention_entropy: weights must be [B,H,T,T]");
  const std::size_t B = weights.shape()[0], H = weights.shape()[1], T = weights.shape()[2];
  std::vector<double> out(H, 0.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        const float* row = weights.data() + ((b * H + h) * T + i) * T;
        double e = 0;
        for (std::size_t j = 0; j < T; ++j)
          if (row[j] > 0) e -= row[j] * std::log(static_cast<double>(row[j]));  // H = -sum p log p
        out[h] += e;
      }
  for (auto& v : out) v /= static_cast<double>(B * T);
  return out;
}

std::vector<double> attention_mass_on(const Array<float>& weights, const std::vector<std::vector<long>>& expected) {
  if (weights.dimension() != 4) throw std::invalid_argument("attention_mass_on: weights must be [B,H,T,T]");
  const std::size_t B = weights.shape()[0], H = weights.shape()[1], T = weights.shape()[2];
  if (expected.size() != B)
    throw std::invalid_argument(fmt::format("attention_mass_on: {} expected rows for a batch of {}", expected.size(), B));
  std::vector<double> out(H, 0.0);
  std::size_t count = 0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t q = 0; q < T && q < expected[b].size(); ++q) {
      const long k = expected[b][q];
      if (k < 0) continue;
      ++count;
      for (std::size_t h = 0; h < H; ++h) out[h] += weights(b, h, q, static_cast<std::size_t>(k));
    }
  for (auto& v : out) v = count ? v / static_cast<double>(count) : 0.0;
  return out;
}

}  // namespace tf::train
