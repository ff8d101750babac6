#include "tinyformer/tensor/tensor.hpp"

#include <new>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tf {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCacheBlocks = false;
#else
constexpr bool kCacheBlocks = true;
#endif
#else
constexpr bool kCacheBlocks = true;
#endif

// One thread's freed blocks by size, made at the thread's first Array. t_cache stays readable after the cache is
// destroyed (it has no destructor), so that a block freed later in the thread's exit, or by a static Array after
// main's thread-locals are gone, goes straight back to the system.
enum class CacheState : unsigned char { unborn, alive, gone };
thread_local CacheState t_cache = CacheState::unborn;
struct BlockCache {
  std::unordered_map<std::size_t, std::vector<void*>> by_size;
  std::size_t bytes = 0;
  BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  ~BlockCache() {
    t_cache = CacheState::gone;
    for (auto& [size, blocks] : by_size)
      for (void* p : blocks) xsimd::aligned_free(p);
  }
};
BlockCache* block_cache() {
  if (!kCacheBlocks || t_cache == CacheState::gone) return nullptr;
  thread_local BlockCache cache;
  t_cache = CacheState::alive;
  return &cache;
}

}  // namespace

void* allocate_array_memory(std::size_t bytes) {
  if (bytes > 0 && bytes <= kCachedBlockBytes)
    if (BlockCache* cache = block_cache()) {
      auto it = cache->by_size.find(bytes);
      if (it != cache->by_size.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cache->bytes -= bytes;
        return p;
      }
    }
  void* p = xsimd::aligned_malloc(bytes, kArrayAlignment);  // posix_memalign, as xsimd's own allocator
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void free_array_memory(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes > 0 && bytes <= kCachedBlockBytes && t_cache == CacheState::alive)
    if (BlockCache* cache = block_cache(); cache && cache->bytes + bytes <= kCachedBytes) {
      try {
        cache->by_size[bytes].push_back(p);
        cache->bytes += bytes;
        return;
      } catch (...) {  // no memory for the list: release the block instead
      }
    }
  xsimd::aligned_free(p);
}

bool array_blocks_cached() noexcept { return kCacheBlocks; }

std::size_t cached_array_bytes() noexcept { return t_cache == CacheState::alive ? block_cache()->bytes : 0; }

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
