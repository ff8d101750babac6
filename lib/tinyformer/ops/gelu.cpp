// GELU, tanh approximation (GPT-2 / nanoGPT), with k = sqrt(2/pi) and c = 0.044715:
//   u = k (x + c x^3),  t = tanh(u),  out = 0.5 x (1 + t)
// Derivative (product rule, tanh' = 1 - tanh^2, du/dx = k (1 + 3 c x^2)):
//   dout/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
// The loops are kernels/gelu.cpp (shared with linear_gelu): SIMD, split over the threads in blocks whose
// boundaries depend only on the element count, so every element takes the same path whatever the thread count.
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

template <class S>
Var<S> gelu(const Var<S>& a) {
  check_input(a, "gelu", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  kernels::gelu_forward<S>(out.size(), a.value().data(), out.data());
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        if (!in.requires_grad) return;
        const bool accumulate = prepare_grad(in) != S(0);
        kernels::gelu_backward<S>(in.value.size(), in.value.data(), self.grad.data(), in.grad.data(), accumulate);
      },
      "gelu");
}

template Var<float> gelu<float>(const Var<float>&);
template Var<double> gelu<double>(const Var<double>&);

}  // namespace tf
