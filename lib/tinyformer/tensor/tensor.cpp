#include "tinyformer/tensor/tensor.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tf {

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::size_t shape_numel(const Shape& shape) {
  std::size_t n = 1;
  for (auto d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw std::length_error(
          fmt::format("shape {}: the product of its dimensions overflows 64 bits", shape_str(shape)));
  return n;
}

std::string position_str(std::size_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(index);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    // align from the right, missing leading dims count as 1
    const std::size_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::size_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument(
          fmt::format("{}: shapes {} and {} cannot be broadcast together", op, shape_str(a), shape_str(b)));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

AxisSlabs axis_slabs(const Shape& shape, std::size_t axis) {
  AxisSlabs s;
  for (std::size_t i = 0; i < axis; ++i) s.outer *= shape[i];
  s.len = shape[axis];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}

std::size_t normalize_axis(long axis, std::size_t rank, const char* op) {
  const long r = static_cast<long>(rank);
  if (axis < -r || axis >= r)
    throw IndexError(fmt::format("{}: axis {} is out of range for a tensor of rank {} (valid: {} to {})", op, axis,
                                 rank, -r, r - 1));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace tf
