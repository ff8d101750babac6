#pragma once
// The layouts of the decoder's packed weights (kernels/matvec.hpp), one definition for every ISA level's kernels.
#include <cstddef>

namespace tf::kernels {

inline constexpr std::size_t kMatvecAlign = 16;  // floats: one AVX-512 register, a 64-byte cache line
inline constexpr std::size_t kQ8Group = 32;      // int8 values that share a scale

}  // namespace tf::kernels
