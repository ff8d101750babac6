#include "tinyformer/tensor/memory.hpp"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf {

namespace {

double read_number_file(const char* path) {
  std::istringstream in(read_system_file(path));
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  return std::strtod(text.c_str(), nullptr);
}

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

double available_memory() {
  double available = 0;
  std::istringstream meminfo(read_system_file("/proc/meminfo"));
  std::string line;
  while (std::getline(meminfo, line))
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      double kib = 0;
      if (fields >> kib) available = kib * 1024;
    }
  const double limit = read_number_file("/sys/fs/cgroup/memory.max");
  if (limit > 0) {
    const double left = std::max(0.0, limit - read_number_file("/sys/fs/cgroup/memory.current"));
    available = available > 0 ? std::min(available, left) : left;
  }
  return available;
}

std::string address_space_note() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return fmt::format("; this process may map at most {} (ulimit -v)",
                     format_bytes(static_cast<double>(limit.rlim_cur)));
}

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) bytes /= 1024, ++u;
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  if (bytes >= 1e6) return fmt::format("{:.2g} {}", bytes, units[u]);
  return fmt::format(bytes < 10 ? "{:.1f} {}" : "{:.0f} {}", bytes, units[u]);
}

void keep_freed_memory_in_process() {
  // Blocks up to 1 GiB come from the heap (not mmap), and the heap is never trimmed below 4 GiB free.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
  mallopt(M_ARENA_MAX, 2);  // at most one arena per core: a worker thread's frees stay reusable
}

}  // namespace tf
