#pragma once
// xsimd for the kernels. (GCC 12's false "'__Y' may be used uninitialized" inside avx512fintrin.h, where xsimd's
// AVX-512 code is inlined, is turned off for GCC before 13 in CMakeLists.txt.)
#include <xsimd/xsimd.hpp>
