// GELU, tanh approximation (GPT-2 / nanoGPT), with k = sqrt(2/pi) and c = 0.044715:
//   u = k (x + c x^3),  t = tanh(u),  out = 0.5 x (1 + t)
// Derivative (product rule, tanh' = 1 - tanh^2, du/dx = k (1 + 3 c x^2)):
//   dout/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
// The backward recomputes t from x instead of keeping it alive between forward and backward.
// Both directions run over SIMD batches (xsimd's tanh), split over the threads in blocks whose
// boundaries depend only on the element count, so every element takes the same path whatever the
// thread count (only the last partial batch of the whole array is scalar).
#include <algorithm>
#include <cmath>

#include <xsimd/xsimd.hpp>

#include "tinyformer/ops/gelu_kernels.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

namespace {

template <class S>
struct GeluMath {
  static constexpr S k = static_cast<S>(0.79788456080286535588);  // sqrt(2/pi)
  static constexpr S c = static_cast<S>(0.044715);

  template <class V>
  static V forward(const V& x) {
    using std::tanh;
    using xsimd::tanh;
    const V t = tanh(V(k) * (x + V(c) * x * x * x));
    return V(S(0.5)) * x * (V(S(1)) + t);
  }
  template <class V>
  static V derivative(const V& x) {
    using std::tanh;
    using xsimd::tanh;
    const V t = tanh(V(k) * (x + V(c) * x * x * x));
    return V(S(0.5)) * (V(S(1)) + t) + V(S(0.5)) * x * (V(S(1)) - t * t) * V(k) * (V(S(1)) + V(S(3) * c) * x * x);
  }
};

// out[i] = f(x[i]) (or g[i] * f(x[i]), or acc[i] + g[i] * f(x[i])) over [0, n), in parallel SIMD blocks.
enum class Combine { value, times_grad, accumulate_times_grad };

template <class S, class F>
void map_blocks(std::size_t n, const S* x, const S* g, S* out, Combine how, F f) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  constexpr std::size_t block = 64 * W;  // elements per work item
  const std::size_t full = n / W * W;    // elements in whole batches
  parallel_for((n + block - 1) / block, 4, [&](std::size_t b0, std::size_t b1) {
    const std::size_t i0 = b0 * block, i1 = std::min(n, b1 * block);
    std::size_t i = i0;
    for (; i < std::min(i1, full); i += W) {
      B r = f(B::load_unaligned(x + i));
      if (how != Combine::value) r = r * B::load_unaligned(g + i);
      if (how == Combine::accumulate_times_grad) r = r + B::load_unaligned(out + i);
      r.store_unaligned(out + i);
    }
    for (; i < i1; ++i) {  // the array's last partial batch, the same scalar code for any split
      S r = f(x[i]);
      if (how != Combine::value) r = r * g[i];
      if (how == Combine::accumulate_times_grad) r = r + out[i];
      out[i] = r;
    }
  });
}

}  // namespace

namespace gelu_kernels {

template <class S>
void forward(std::size_t n, const S* x, S* out) {
  map_blocks<S>(n, x, nullptr, out, Combine::value, [](const auto& v) { return GeluMath<S>::forward(v); });
}

template <class S>
void backward(std::size_t n, const S* x, const S* g, S* out, bool accumulate) {
  map_blocks<S>(n, x, g, out, accumulate ? Combine::accumulate_times_grad : Combine::times_grad,
                [](const auto& v) { return GeluMath<S>::derivative(v); });
}

template void forward<float>(std::size_t, const float*, float*);
template void forward<double>(std::size_t, const double*, double*);
template void backward<float>(std::size_t, const float*, const float*, float*, bool);
template void backward<double>(std::size_t, const double*, const double*, double*, bool);

}  // namespace gelu_kernels

template <class S>
Var<S> gelu(const Var<S>& a) {
  Array<S> out = Array<S>::from_shape(a.value().shape());
  gelu_kernels::forward<S>(out.size(), a.value().data(), out.data());
  return make_result<S>(std::move(out), {a}, [](Node<S>& self) {
    Node<S>& in = *self.inputs[0];
    if (!in.requires_grad) return;
    const bool accumulate = prepare_grad(in) != S(0);
    gelu_kernels::backward<S>(in.value.size(), in.value.data(), self.grad.data(), in.grad.data(), accumulate);
  }, "gelu");
}

template Var<float> gelu<float>(const Var<float>&);
template Var<double> gelu<double>(const Var<double>&);

}  // namespace tf
