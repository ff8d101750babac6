#pragma once
// The tensor layer: values are xtensor arrays (row-major, contiguous), float32 for training and
// float64 for gradient checks. Every op is written once as a template on the scalar type S.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

namespace tf {

template <class S>
using Array = xt::xarray<S, xt::layout_type::row_major>;

using Shape = std::vector<std::size_t>;

// "[2, 3, 4]": for error messages and test names.
std::string shape_str(const Shape& shape);

template <class Sh>
Shape to_shape(const Sh& s) { return Shape(s.begin(), s.end()); }

std::size_t shape_numel(const Shape& shape);

// The multi-index "[i, j, ...]" of flat position `flat` in a row-major array of `shape`: for error messages.
std::string position_str(std::size_t flat, const Shape& shape);

// NumPy broadcasting of two shapes; throws std::invalid_argument naming both shapes and `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Resolves a possibly negative axis against `rank`; throws naming `op` when out of range.
std::size_t normalize_axis(long axis, std::size_t rank, const char* op);

}  // namespace tf

namespace tf {
// Integer token ids / class targets (embedding lookups, cross-entropy targets).
using Index = std::int32_t;
using IndexArray = Array<Index>;
}  // namespace tf
