// GELU kernels: the formulas are in gelu.hpp.
#include "tinyformer/ops/kernels/gelu.hpp"

#include <cmath>

#include <xsimd/xsimd.hpp>

#include "tinyformer/ops/kernels/map.hpp"

namespace TF_KERNEL_NAMESPACE {

namespace {

template <class S>
struct GeluMath {
  static constexpr S k = static_cast<S>(0.79788456080286535588);  // sqrt(2/pi)
  static constexpr S c = static_cast<S>(0.044715);

  // e = exp(-2u): one exp, where tanh would cost an exp, a division and a polynomial for small |u|
  template <class V>
  static V exp_minus_2u(const V& x) {
    using std::exp;
    using xsimd::exp;
    return exp(V(S(-2) * k) * (x + V(c) * x * x * x));
  }
  template <class V>
  static V forward(const V& x) {
    return forward_at(x, exp_minus_2u(x));
  }
  // gelu(x) = x s from e = exp(-2u)
  template <class V>
  static V forward_at(const V& x, const V& e) {
    return x / (V(S(1)) + e);
  }
  template <class V>
  static V derivative(const V& x) {
    return derivative_at(x, V(S(1)) / (V(S(1)) + exp_minus_2u(x)));
  }
  // gelu'(x) from s = 1 / (1 + exp(-2u))
  template <class V>
  static V derivative_at(const V& x, const V& s) {
    return s + V(S(2) * k) * x * s * (V(S(1)) - s) * (V(S(1)) + V(S(3) * c) * x * x);
  }
};

}  // namespace

template <class S>
void gelu_forward(std::size_t n, const S* x, S* out) {
  map_blocks<S>(n, x, nullptr, out, Combine::value, [](const auto& v) { return GeluMath<S>::forward(v); });
}

template <class S>
void gelu_backward(std::size_t n, const S* x, const S* g, S* out, bool accumulate) {
  map_blocks<S>(n, x, g, out, accumulate ? Combine::accumulate_times_grad : Combine::times_grad,
                [](const auto& v) { return GeluMath<S>::derivative(v); });
}

template <class S>
void gelu_forward_slope(std::size_t n, S* x, S* out) {
  for_batches<S>(n, [&](auto tag, std::size_t i) {
    using V = decltype(tag);
    const V xv = load_as<V>(x + i), e = GeluMath<S>::exp_minus_2u(xv);
    store_as(GeluMath<S>::forward_at(xv, e), out + i);
    store_as(GeluMath<S>::derivative_at(xv, V(S(1)) / (V(S(1)) + e)), x + i);
  });
}

template <class S>
void gelu_backward_slope(std::size_t n, const S* slope, const S* g, S* out) {
  map_blocks<S>(n, slope, g, out, Combine::times_grad, [](const auto& v) { return v; });
}

TF_KERNEL_INSTANTIATE(TF_GELU_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
