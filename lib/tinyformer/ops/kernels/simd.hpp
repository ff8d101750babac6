#pragma once
// xsimd for the kernels. (GCC 12's false "'__Y' may be used uninitialized" inside avx512fintrin.h, where xsimd's
// AVX-512 code is inlined, is handled for every translation unit by cmake/gcc12_intrinsics.hpp.)
#include <cstddef>

#include <xsimd/xsimd.hpp>

namespace tf::kernels {
// Software prefetch of the bytes [p, p + bytes) into the L1 cache, one request per 64-byte line: a hint, with no
// effect on any result. The kernels that walk rows the hardware's prefetchers do not follow ask for them ahead.
inline void prefetch(const void* p, std::size_t bytes = 1) {
  for (std::size_t i = 0; i < bytes; i += 64) __builtin_prefetch(static_cast<const char*>(p) + i, 0, 3);
}
}  // namespace tf::kernels
