#pragma once
// The tensor layer: values are xtensor arrays (row-major, contiguous), float32 for training and
// float64 for gradient checks. Every op is written once as a template on the scalar type S.
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <xsimd/memory/xsimd_aligned_allocator.hpp>
#include <xsimd/memory/xsimd_alignment.hpp>
#include <xtensor/xarray.hpp>

#include "tinyformer/tensor/memory.hpp"

namespace tf {

// Every Array's data starts on a 64-byte boundary (a cache line, and the widest SIMD register, AVX-512),
// whatever instruction set a translation unit is compiled for. xtensor's default allocator with
// XTENSOR_USE_XSIMD aligns to the compiling TU's SIMD width instead (16 bytes for SSE2, 32 for AVX2, 64 for
// AVX-512), so the type Array<S> would differ between the library (-march=native) and a program compiled
// without -march flags, and the two would not link. With this allocator the type, and therefore every public
// signature, is the same for any -march.
inline constexpr std::size_t kArrayAlignment = 64;

template <class T>
class ArrayAllocator {
 public:
  using value_type = T;
  static constexpr std::size_t alignment = kArrayAlignment;

  ArrayAllocator() noexcept = default;
  template <class U>
  ArrayAllocator(const ArrayAllocator<U>&) noexcept {}

  // memory.hpp's allocate_array_memory: aligned to kArrayAlignment, freed blocks kept per thread
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(allocate_array_memory(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { free_array_memory(p, n * sizeof(T)); }
};

template <class T, class U>
bool operator==(const ArrayAllocator<T>&, const ArrayAllocator<U>&) noexcept {
  return true;
}
template <class T, class U>
bool operator!=(const ArrayAllocator<T>&, const ArrayAllocator<U>&) noexcept {
  return false;
}

template <class S>
using Array = xt::xarray<S, xt::layout_type::row_major, ArrayAllocator<S>>;

using Shape = std::vector<std::size_t>;

// "[2, 3, 4]": for error messages and test names.
std::string shape_str(const Shape& shape);

template <class Sh>
Shape to_shape(const Sh& s) {
  return Shape(s.begin(), s.end());
}

std::size_t shape_numel(const Shape& shape);

// The multi-index "[i, j, ...]" of flat position `flat` in a row-major array of `shape`: for error messages.
std::string position_str(std::size_t flat, const Shape& shape);

// NumPy broadcasting of two shapes; throws std::invalid_argument naming both shapes and `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// A row-major shape seen as [outer, len, inner] around one axis (split, concat, slice, max along an axis...): element
// (o, j, i) is at flat position (o * len + j) * inner + i. axis_slabs({2, 3, 4}, 1) is {2, 3, 4}.
struct AxisSlabs {
  std::size_t outer = 1, len = 0, inner = 1;
};
AxisSlabs axis_slabs(const Shape& shape, std::size_t axis);

// An axis or an index out of range, or more indices than dims: a std::invalid_argument as every bad argument, of its
// own type so that the Python module raises IndexError for it (as torch and NumPy do).
struct IndexError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Resolves a possibly negative axis against `rank`; throws IndexError naming `op` when out of range.
std::size_t normalize_axis(long axis, std::size_t rank, const char* op);

}  // namespace tf

// xtensor asks xsimd whether a container's data is aligned for SIMD loads and stores; 64 bytes is enough for
// every instruction set, so Arrays keep the aligned loads they had with xsimd's default allocator.
namespace xsimd {
template <class T>
struct allocator_alignment<tf::ArrayAllocator<T>> {
  using type = aligned_mode;
};
}  // namespace xsimd
static_assert(tf::kArrayAlignment % xsimd::default_arch::alignment() == 0,
              "tf::Array's alignment must cover this instruction set's SIMD registers");

namespace tf {
// Integer token ids / class targets (embedding lookups, cross-entropy targets).
using Index = std::int32_t;
using IndexArray = Array<Index>;
}  // namespace tf
