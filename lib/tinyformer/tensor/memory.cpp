#include "tinyformer/tensor/memory.hpp"

#include <malloc.h>

namespace tf {

void keep_freed_memory_in_process() {
  // Blocks up to 1 GiB come from the heap (not mmap), and the heap is never trimmed below 4 GiB free.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
  mallopt(M_ARENA_MAX, 2);  // at most one arena per core: a worker thread's frees stay reusable
}

}  // namespace tf
