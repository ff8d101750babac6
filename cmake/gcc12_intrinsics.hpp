// Included first in every translation unit compiled with -march=native by GCC 12 (CMakeLists.txt): the x86
// intrinsics headers with -Wmaybe-uninitialized off for their own lines only. GCC 12's _mm*_undefined_*()
// initialise a variable with itself, and once inlined into a caller (xsimd's AVX-512 kernels) it warns
// "'__Y' may be used uninitialized" inside avx512fintrin.h (GCC bug 105593, fixed in GCC 13). The warning stays
// on for every other line, the project's own code included.
#pragma once
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
