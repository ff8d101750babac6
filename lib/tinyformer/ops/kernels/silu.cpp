// SiLU and SwiGLU kernels: the formulas are in silu.hpp.
#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/kernels/simd.hpp"  // first: see there

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tinyformer/ops/kernels/map.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace TF_KERNEL_NAMESPACE {

namespace {

// Called with xsimd::batch<S> and with S. The argument of exp is clamped to [-1000, 1000], where e^-a is
// already exactly 0 or inf in float and double (so s = 1 or 0, and silu(a) = -0 for a << 0, as torch): xsimd's
// double exp casts its argument to a 64-bit integer with a scalar cast on AVX2, which is undefined behaviour for
// infinities, NaN and huge values (see exp_floor.hpp). A NaN a is clamped too, and comes back through the
// factor a in silu, silu' and the SwiGLU gradients.
template <class S>
struct SiluMath {
  template <class V>
  static V sigmoid(const V& a) {
    using std::exp;
    using xsimd::exp;
    const V lo(S(-1000)), hi(S(1000));
    V m = -a;
    if constexpr (std::is_same_v<V, S>)
      m = m >= lo ? (m <= hi ? m : hi) : lo;
    else
      m = xsimd::select(m >= lo, xsimd::select(m <= hi, m, hi), lo);
    return V(S(1)) / (V(S(1)) + exp(m));
  }
  template <class V>
  static V forward(const V& a) {
    return a * sigmoid(a);
  }
  template <class V>
  static V derivative(const V& a) {
    const V s = sigmoid(a);
    return s * (V(S(1)) + a * (V(S(1)) - s));
  }
};

// One row of the SwiGLU backward: d_gate = dy up silu'(gate), d_up = dy silu(gate), at positions j of the row.
template <class S, class V>
void swiglu_backward_at(const S* gate, const S* up, const S* dy, S* dgate, S* dup, std::size_t j, bool accumulate) {
  auto load = [](const S* p) {
    if constexpr (std::is_same_v<V, S>)
      return *p;
    else
      return V::load_unaligned(p);
  };
  auto store = [accumulate, &load](S* p, V v) {
    if (accumulate) v = v + load(p);
    if constexpr (std::is_same_v<V, S>)
      *p = v;
    else
      v.store_unaligned(p);
  };
  const V a = load(gate + j), u = load(up + j), g = load(dy + j);
  const V s = SiluMath<S>::sigmoid(a);
  store(dgate + j, g * u * (s * (V(S(1)) + a * (V(S(1)) - s))));
  store(dup + j, g * (a * s));
}

}  // namespace

template <class S>
void silu_forward(std::size_t n, const S* x, S* out) {
  map_blocks<S>(n, x, nullptr, out, Combine::value, [](const auto& v) { return SiluMath<S>::forward(v); });
}

template <class S>
void silu_backward(std::size_t n, const S* x, const S* g, S* out, bool accumulate) {
  map_blocks<S>(n, x, g, out, accumulate ? Combine::accumulate_times_grad : Combine::times_grad,
                [](const auto& v) { return SiluMath<S>::derivative(v); });
}

template <class S>
void swiglu_forward(std::size_t R, std::size_t H, const S* x, S* out) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const std::size_t min_rows = std::max<std::size_t>(1, 4096 / std::max<std::size_t>(1, H));
  parallel_for(R, min_rows, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const S* gate = x + r * 2 * H;
      const S* up = gate + H;
      S* y = out + r * H;
      std::size_t j = 0;
      for (; j + W <= H; j += W)  // out = silu(gate) * up
        (SiluMath<S>::forward(B::load_unaligned(gate + j)) * B::load_unaligned(up + j)).store_unaligned(y + j);
      for (; j < H; ++j) y[j] = SiluMath<S>::forward(gate[j]) * up[j];
    }
  });
}

template <class S>
void swiglu_backward(std::size_t R, std::size_t H, const S* x, const S* dy, S* dx, bool accumulate) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  const std::size_t min_rows = std::max<std::size_t>(1, 4096 / std::max<std::size_t>(1, H));
  parallel_for(R, min_rows, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const S* gate = x + r * 2 * H;
      const S* dyr = dy + r * H;
      S* dgate = dx + r * 2 * H;
      std::size_t j = 0;
      for (; j + W <= H; j += W) swiglu_backward_at<S, B>(gate, gate + H, dyr, dgate, dgate + H, j, accumulate);
      for (; j < H; ++j) swiglu_backward_at<S, S>(gate, gate + H, dyr, dgate, dgate + H, j, accumulate);
    }
  });
}

TF_KERNEL_INSTANTIATE(TF_SILU_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
