#pragma once
// Rotary position embedding (RoPE) kernels, shared by the rotary_qk op and by a decoder that rotates one new
// position at a time. Convention "rotate_half" (GPT-NeoX, HF LLaMA): a head of D values is two halves, and
// pair i pairs x_i with x_{i+D/2}, for i in [0, D/2). At position p:
//   theta_i = base^(-2i/D)     angle = p theta_i
//   (x_i, x_{i+D/2}) -> (x_i cos - x_{i+D/2} sin,  x_{i+D/2} cos + x_i sin)
// The inverse rotation (angle -> -angle, the backward of the forward) flips the sign of sin.
// The tables are computed in double and rounded to S once.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see there

#include <cmath>
#include <cstddef>
#include <vector>

namespace tf::kernels {

// cos and sin of the angles of positions pos0 .. pos0 + T - 1, each row D/2 wide: [T, D/2], row-major.
template <class S>
struct RotaryTables {
  std::size_t half = 0;  // D/2
  std::vector<S> cos, sin;
  const S* cos_at(std::size_t t) const { return cos.data() + t * half; }
  const S* sin_at(std::size_t t) const { return sin.data() + t * half; }
};

// D even (the caller checks), base > 0.
template <class S>
RotaryTables<S> rotary_tables(std::size_t T, std::size_t D, double base, std::size_t pos0) {
  RotaryTables<S> tables;
  tables.half = D / 2;
  tables.cos.resize(T * tables.half);
  tables.sin.resize(T * tables.half);
  for (std::size_t i = 0; i < tables.half; ++i) {
    const double theta = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    for (std::size_t t = 0; t < T; ++t) {
      const double angle = static_cast<double>(pos0 + t) * theta;
      tables.cos[t * tables.half + i] = static_cast<S>(std::cos(angle));
      tables.sin[t * tables.half + i] = static_cast<S>(std::sin(angle));
    }
  }
  return tables;
}

// One head: x [D] -> out [D] rotated by the angles whose cos/sin are c, s [D/2] (inverse: by minus them).
// out may be x itself (in place). Each value's arithmetic depends only on its position in the head.
template <class S>
void rotate_half_pairs(const S* x, S* out, const S* c, const S* s, std::size_t half, bool inverse) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const S sign = inverse ? S(-1) : S(1);
  const B sign_b(sign);
  std::size_t i = 0;
  for (; i + W <= half; i += W) {
    const B x1 = B::load_unaligned(x + i), x2 = B::load_unaligned(x + half + i);
    const B cb = B::load_unaligned(c + i), sb = sign_b * B::load_unaligned(s + i);
    (x1 * cb - x2 * sb).store_unaligned(out + i);
    (x2 * cb + x1 * sb).store_unaligned(out + half + i);
  }
  for (; i < half; ++i) {
    const S x1 = x[i], x2 = x[half + i], si = sign * s[i];
    out[i] = x1 * c[i] - x2 * si;
    out[half + i] = x2 * c[i] + x1 * si;
  }
}

}  // namespace tf::kernels
