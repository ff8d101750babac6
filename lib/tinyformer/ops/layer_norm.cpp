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
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <xsimd/xsimd.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xnoalias.hpp>

#include "tinyformer/ops/kernels/rows.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

namespace {
using xsimd::batch;

// sum_j dy[j] w[j] and sum_j dy[j] w[j] (x[j] - mu) rs
template <class S>
void row_grad_sums(const S* dy, const S* w, const S* x, S mu, S rs, std::size_t n, S& sum_g, S& sum_gh) {
  constexpr std::size_t W = batch<S>::size;
  batch<S> acc_g(S(0)), acc_gh(S(0));
  const batch<S> m(mu), r(rs);
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    const batch<S> g = batch<S>::load_unaligned(dy + j) * batch<S>::load_unaligned(w + j);
    acc_g += g;
    acc_gh = xsimd::fma(g, (batch<S>::load_unaligned(x + j) - m) * r, acc_gh);
  }
  sum_g = xsimd::hadd(acc_g);
  sum_gh = xsimd::hadd(acc_gh);
  for (; j < n; ++j) {
    const S g = dy[j] * w[j];
    sum_g += g;
    sum_gh = std::fma(g, (x[j] - mu) * rs, sum_gh);
  }
}
}  // namespace

// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy weight;  dweight = sum over rows of dy xhat; dbias = sum of dy
template <class S>
void layer_norm_backward(Node<S>& self, std::size_t R, std::size_t C, const S* mean, const S* rstd) {
  Node<S>& nx = *self.inputs[0];
  Node<S>& nw = *self.inputs[1];
  Node<S>& nb = *self.inputs[2];
  const bool need_params = nw.requires_grad || nb.requires_grad;
  const S* xv = nx.value.data();
  const S* w = nw.value.data();
  const S* dy = self.grad.data();
  const S inv_c = S(1) / static_cast<S>(C);
  Array<S> dx, dw, db;
  if (nx.requires_grad) dx = Array<S>::from_shape(nx.value.shape());
  if (need_params) {
    dw = Array<S>::from_shape({C});
    db = Array<S>::from_shape({C});
  }
  const std::array<S*, 2> sums{need_params ? dw.data() : nullptr, need_params ? db.data() : nullptr};
  kernels::rows_with_column_sums<S, 2>(R, C, sums, [&](std::size_t r, const std::array<S*, 2>& part) {
    const S* xr = xv + r * C;
    const S* dyr = dy + r * C;
    const S mu = mean[r], rs = rstd[r];
    if (part[0]) {  // dweight += dy xhat, dbias += dy
      for (std::size_t j = 0; j < C; ++j) {
        part[0][j] += dyr[j] * (xr[j] - mu) * rs;
        part[1][j] += dyr[j];
      }
    }
    if (nx.requires_grad) {
      S mean_g, mean_gh;
      row_grad_sums(dyr, w, xr, mu, rs, C, mean_g, mean_gh);
      mean_g *= inv_c;
      mean_gh *= inv_c;
      S* dxr = dx.data() + r * C;
      for (std::size_t j = 0; j < C; ++j) dxr[j] = rs * (dyr[j] * w[j] - mean_g - (xr[j] - mu) * rs * mean_gh);
    }
  });
  if (nx.requires_grad) accumulate_grad(nx, std::move(dx));
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
  const S* xv = x.value().data();
  const S* w = weight.value().data();
  const S* b = bias.value().data();
  const S inv_c = S(1) / static_cast<S>(C);
  parallel_for(R, 64, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const S* xr = xv + r * C;
      S* yr = out.data() + r * C;
      const S mu = kernels::row_sum(xr, C) * inv_c;
      const S var = kernels::row_squared_deviation(xr, mu, C) * inv_c;
      const S rs = S(1) / std::sqrt(var + eps);
      mean.data()[r] = mu;
      rstd.data()[r] = rs;
      for (std::size_t j = 0; j < C; ++j) yr[j] = (xr[j] - mu) * rs * w[j] + b[j];
    }
  });

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
