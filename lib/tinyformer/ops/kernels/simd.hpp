#pragma once
// xsimd for the kernels. (GCC 12's false "'__Y' may be used uninitialized" inside avx512fintrin.h, where xsimd's
// AVX-512 code is inlined, is handled for every translation unit by cmake/gcc12_intrinsics.hpp.)
#include <xsimd/xsimd.hpp>
