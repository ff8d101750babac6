// Included first in every translation unit that GCC 12 compiles for a CPU with AVX-512 code in reach: a native build
// (-march=native), each target of the compile matrix (scripts/check_matrix.py) and the portable build's x86-64-v4
// kernels (CMakeLists.txt, lib/CMakeLists.txt). GCC 12's _mm*_undefined_*() initialise a variable with itself; once
// inlined into xsimd's AVX-512 kernels it is reported inside avx512fintrin.h, as "'__Y' may be used uninitialized" on
// one CPU and as "'__Y' is used uninitialized" on another (GCC bug 105593, fixed in GCC 13). Both names are off for
// the intrinsics headers' own lines only; they stay on for every other line, the project's own code included.
#pragma once
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
