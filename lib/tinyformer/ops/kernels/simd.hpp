#pragma once
// xsimd for the kernels, with one false warning of GCC 12 silenced for the compiler's intrinsics headers only.
// With -march=native on an AVX-512 machine, GCC 12 reports "'__Y' may be used uninitialized" inside
// avx512fintrin.h wherever xsimd's exp, nearbyint or hadd get inlined: _mm512_undefined_pd() and friends
// initialise a value from itself on purpose (GCC bug 105593). The pragma covers only the
// text of the headers included here (xsimd includes <immintrin.h>), so it must be the first include of a
// translation unit, before anything that pulls in xtensor or xsimd; warnings in our own code stay on.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
