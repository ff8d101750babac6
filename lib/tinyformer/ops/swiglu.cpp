// SiLU (as torch.nn.functional.silu) and the fused SwiGLU of a gated MLP (LLaMA), with s = sigmoid(a):
//   silu(a) = a s                    da = dout s (1 + a (1 - s))      (sigmoid' = s (1 - s), product rule)
//   swiglu: x [..., 2H] = [gate | up] on the last axis (the layout of a fused c_fc weight [2H, C] whose first H
//   rows are the gate projection) -> out [..., H]:
//     out_j    = silu(gate_j) up_j
//     d_gate_j = dout_j up_j silu'(gate_j)       d_up_j = dout_j silu(gate_j)
// The loops are kernels/silu.cpp (SIMD, split over whole rows or fixed blocks, so the bits do not depend on the
// thread count); both backwards recompute sigmoid from the input instead of keeping it.
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

// a [...] -> [...]
template <class S>
Var<S> silu(const Var<S>& a) {
  check_input(a, "silu", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  kernels::silu_forward<S>(out.size(), a.value().data(), out.data());
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        if (!in.requires_grad) return;
        const bool accumulate = prepare_grad(in) != S(0);
        kernels::silu_backward<S>(in.value.size(), in.value.data(), self.grad.data(), in.grad.data(), accumulate);
      },
      "silu");
}

// x [..., 2H] -> out [..., H]
template <class S>
Var<S> swiglu(const Var<S>& x) {
  check_input(x, "swiglu", "x");
  const Shape shape = x.shape();
  if (shape.empty() || shape.back() % 2 != 0)
    throw std::invalid_argument(
        fmt::format("swiglu: x has shape {}; expected [..., 2H], a last axis of even length holding gate then up",
                    shape_str(shape)));
  const std::size_t H = shape.back() / 2;
  const std::size_t R = H == 0 ? 0 : x.numel() / (2 * H);
  Shape out_shape = shape;
  out_shape.back() = H;
  Array<S> out = Array<S>::from_shape(out_shape);
  kernels::swiglu_forward<S>(R, H, x.value().data(), out.data());
  return make_result<S>(
      std::move(out), {x},
      [R, H](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        if (!in.requires_grad) return;
        const bool accumulate = prepare_grad(in) != S(0);
        kernels::swiglu_backward<S>(R, H, in.value.data(), self.grad.data(), in.grad.data(), accumulate);
      },
      "swiglu");
}

#define TF_INSTANTIATE(S)                 \
  template Var<S> silu<S>(const Var<S>&); \
  template Var<S> swiglu<S>(const Var<S>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
