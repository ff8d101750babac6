// Layer normalisation over the last axis (as torch.nn.LayerNorm), forward and fused backward.
// x [..., C] is read as R contiguous rows of C; weight [C], bias [C]. Per row:
//   mu = (1/C) sum_j x_j        var = (1/C) sum_j (x_j - mu)^2   (biased)      rstd = 1 / sqrt(var + eps)
//   xhat_j = (x_j - mu) rstd    y_j = xhat_j weight_j + bias_j
// Backward, with g_j = dy_j weight_j (the gradient reaching xhat):
//   dx_j      = rstd (g_j - (1/C) sum_k g_k - xhat_j (1/C) sum_k g_k xhat_k)
//   dweight_j = sum over rows of dy_j xhat_j
//   dbias_j   = sum over rows of dy_j
// (dx: xhat depends on x_j directly (rstd), through mu (-rstd/C for every k) and through var
//  (d rstd / d x_j = -rstd^3 (x_j - mu) / C = -rstd^2 xhat_j / C); collecting the three terms gives the line above.)
// The forward keeps only mu and rstd per row; the backward recomputes xhat from x.
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy weight;  dweight = sum over rows of dy xhat; dbias = sum of dy
// (the row loops: kernels::layer_norm_backward)
template <class S>
void layer_norm_backward(Node<S>& self, std::size_t R, std::size_t C, const S* mean, const S* rstd) {
  Node<S>& nx = *self.inputs[0];
  Node<S>& nw = *self.inputs[1];
  Node<S>& nb = *self.inputs[2];
  const bool need_params = nw.requires_grad || nb.requires_grad;
  Array<S> dw, db;
  const bool accumulate_dx = nx.requires_grad && prepare_grad(nx) != S(0);  // dx goes straight into x's gradient
  if (need_params) {
    dw = Array<S>::from_shape({C});
    db = Array<S>::from_shape({C});
  }
  kernels::layer_norm_backward<S>(R, C, nx.value.data(), nw.value.data(), self.grad.data(), mean, rstd,
                                  nx.requires_grad ? nx.grad.data() : nullptr, accumulate_dx,
                                  need_params ? dw.data() : nullptr, need_params ? db.data() : nullptr);
  if (need_params) {
    accumulate_grad(nw, std::move(dw));
    accumulate_grad(nb, std::move(db));
  }
}

// x [..., C], weight [C], bias [C] -> y [..., C]
template <class S>
Var<S> layer_norm(const Var<S>& x, const Var<S>& weight, const Var<S>& bias, S eps) {
  check_input(x, "layer_norm", "x");
  check_input(weight, "layer_norm", "weight");
  check_input(bias, "layer_norm", "bias");
  const Shape shape = x.shape();
  if (shape.empty())
    throw std::invalid_argument("layer_norm: x is a 0-d value; it needs a last axis [..., C] to normalise over");
  const std::size_t C = shape.back();
  const std::size_t R = C == 0 ? 0 : x.numel() / C;
  auto check_param = [&](const Var<S>& p, const char* name) {
    if (p.shape() != Shape{C})
      throw std::invalid_argument(fmt::format("layer_norm: {} has shape {}, expected [C] = [{}] for x of shape {}",
                                              name, shape_str(p.shape()), C, shape_str(shape)));
  };
  check_param(weight, "weight");
  check_param(bias, "bias");
  if (!(eps >= 0) || !std::isfinite(eps))
    throw std::invalid_argument(fmt::format("layer_norm: eps = {} must be finite and >= 0", eps));

  // Only mu and rstd per row are kept for the backward (as llm.c); xhat is recomputed from x there.
  Array<S> out = Array<S>::from_shape(x.value().shape());
  Array<S> mean = Array<S>::from_shape({R});
  Array<S> rstd = Array<S>::from_shape({R});
  kernels::layer_norm_forward<S>(R, C, x.value().data(), weight.value().data(), bias.value().data(), eps, out.data(),
                                 mean.data(), rstd.data());

  return make_result<S>(
      std::move(out), {x, weight, bias},
      [R, C, mean = std::move(mean), rstd = std::move(rstd)](Node<S>& self) {
        layer_norm_backward(self, R, C, mean.data(), rstd.data());
      },
      "layer_norm");
}

template Var<float> layer_norm<float>(const Var<float>&, const Var<float>&, const Var<float>&, float);
template Var<double> layer_norm<double>(const Var<double>&, const Var<double>&, const Var<double>&, double);

}  // namespace tf
