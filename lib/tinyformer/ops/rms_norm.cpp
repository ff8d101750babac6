// RMS normalisation over the last axis (as LLaMA's RMSNorm / torch.nn.RMSNorm: a weight, no bias, no mean
// subtracted). x [..., C] is read as R contiguous rows of C; weight [C]. Per row:
//   rstd = 1 / sqrt((1/C) sum_j x_j^2 + eps)     xhat_j = x_j rstd     y_j = xhat_j weight_j
// Backward, with g_j = dy_j weight_j (the gradient reaching xhat):
//   dx_j      = rstd (g_j - xhat_j (1/C) sum_k g_k xhat_k)
//   dweight_j = sum over rows of dy_j xhat_j
// (dx: xhat_k depends on x_j directly (rstd for k = j) and through rstd for every k:
//  d rstd / d x_j = -rstd^3 x_j / C = -rstd^2 xhat_j / C; collecting both terms gives the line above.)
// The forward keeps only rstd per row; the backward recomputes xhat from x. With sum_k g_k xhat_k =
// rstd sum_k dy_k w_k x_k, one three-way row dot per row gives the reduction.
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

// dx = rstd (g - xhat mean(g xhat)), g = dy weight;  dweight = sum over rows of dy xhat
// (the row loops: kernels::rms_norm_backward)
template <class S>
void rms_norm_backward(Node<S>& self, std::size_t R, std::size_t C, const S* rstd) {
  Node<S>& nx = *self.inputs[0];
  Node<S>& nw = *self.inputs[1];
  Array<S> dw;
  const bool accumulate_dx = nx.requires_grad && prepare_grad(nx) != S(0);  // dx goes straight into x's gradient
  if (nw.requires_grad) dw = Array<S>::from_shape({C});
  kernels::rms_norm_backward<S>(R, C, nx.value.data(), nw.value.data(), self.grad.data(), rstd,
                                nx.requires_grad ? nx.grad.data() : nullptr, accumulate_dx,
                                nw.requires_grad ? dw.data() : nullptr);
  if (nw.requires_grad) accumulate_grad(nw, std::move(dw));
}

// x [..., C], weight [C] -> y [..., C]
template <class S>
Var<S> rms_norm(const Var<S>& x, const Var<S>& weight, S eps) {
  check_input(x, "rms_norm", "x");
  check_input(weight, "rms_norm", "weight");
  const Shape shape = x.shape();
  if (shape.empty())
    throw std::invalid_argument("rms_norm: x is a 0-d value; it needs a last axis [..., C] to normalise over");
  const std::size_t C = shape.back();
  const std::size_t R = C == 0 ? 0 : x.numel() / C;
  if (weight.shape() != Shape{C})
    throw std::invalid_argument(fmt::format("rms_norm: weight has shape {}, expected [C] = [{}] for x of shape {}",
                                            shape_str(weight.shape()), C, shape_str(shape)));
  if (!(eps >= 0) || !std::isfinite(eps))
    throw std::invalid_argument(fmt::format("rms_norm: eps = {} must be finite and >= 0", eps));

  // Only rstd per row is kept for the backward; xhat is recomputed from x there.
  Array<S> out = Array<S>::from_shape(x.value().shape());
  Array<S> rstd = Array<S>::from_shape({R});
  kernels::rms_norm_forward<S>(R, C, x.value().data(), weight.value().data(), eps, out.data(), rstd.data());

  return make_result<S>(
      std::move(out), {x, weight},
      [R, C, rstd = std::move(rstd)](Node<S>& self) { rms_norm_backward(self, R, C, rstd.data()); }, "rms_norm");
}

template Var<float> rms_norm<float>(const Var<float>&, const Var<float>&, float);
template Var<double> rms_norm<double>(const Var<double>&, const Var<double>&, double);

}  // namespace tf
