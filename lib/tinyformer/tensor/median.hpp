#pragma once
// The median of measured times, the statistic every benchmark and timing choice of the project reports.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace tf {

// The middle value, or the mean of the two middle values of an even count; 0 for no values.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace tf
