// Included first in the portable build's x86-64-v4 kernels (lib/CMakeLists.txt), as cmake/gcc12_intrinsics.hpp is in
// a native build: GCC 12's _mm*_undefined_*() initialise a variable with itself, and inlined into xsimd's AVX-512
// kernels it is reported inside avx512fintrin.h as "'__Y' is used uninitialized" (with -march=x86-64-v4; "may be
// used" with -march=native). GCC bug 105593, fixed in GCC 13. Both warnings stay on for every other line.
#pragma once
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
