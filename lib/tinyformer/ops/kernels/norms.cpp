// Layer norm and RMSNorm row kernels: the formulas are in ops/layer_norm.cpp and ops/rms_norm.cpp.
#include "tinyformer/ops/kernels/simd.hpp"  // first: see simd.hpp

#include "tinyformer/ops/kernels/norms.hpp"

#include <array>
#include <cmath>

#include "tinyformer/ops/kernels/rows.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace TF_KERNEL_NAMESPACE {

namespace {

// sum_j dy[j] w[j] and sum_j dy[j] w[j] (x[j] - mu) rs
template <class S>
void layer_norm_grad_sums(const S* dy, const S* w, const S* x, S mu, S rs, std::size_t n, S& sum_g, S& sum_gh) {
  using B = xsimd::batch<S>;
  constexpr std::size_t W = B::size;
  B acc_g(S(0)), acc_gh(S(0));
  const B m(mu), r(rs);
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    const B g = B::load_unaligned(dy + j) * B::load_unaligned(w + j);
    acc_g += g;
    acc_gh = xsimd::fma(g, (B::load_unaligned(x + j) - m) * r, acc_gh);
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

// x [R, C] -> y [R, C], mean [R], rstd [R]
template <class S>
void layer_norm_forward(std::size_t R, std::size_t C, const S* x, const S* weight, const S* bias, S eps, S* y, S* mean,
                        S* rstd) {
  const S inv_c = S(1) / static_cast<S>(C);
  parallel_for(R, 64, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const S* xr = x + r * C;
      S* yr = y + r * C;
      const S mu = row_sum(xr, C) * inv_c;
      const S var = row_squared_deviation(xr, mu, C) * inv_c;
      const S rs = S(1) / std::sqrt(var + eps);
      mean[r] = mu;
      rstd[r] = rs;
      for (std::size_t j = 0; j < C; ++j) yr[j] = (xr[j] - mu) * rs * weight[j] + bias[j];
    }
  });
}

// x, dy [R, C] -> dx [R, C] (written, or added to), dweight [C], dbias [C]
template <class S>
void layer_norm_backward(std::size_t R, std::size_t C, const S* x, const S* weight, const S* dy, const S* mean,
                         const S* rstd, S* dx, bool accumulate_dx, S* dweight, S* dbias) {
  const S inv_c = S(1) / static_cast<S>(C);
  const std::array<S*, 2> sums{dweight, dweight ? dbias : nullptr};
  rows_with_column_sums<S, 2>(R, C, sums, [&](std::size_t r, const std::array<S*, 2>& part) {
    const S* xr = x + r * C;
    const S* dyr = dy + r * C;
    const S mu = mean[r], rs = rstd[r];
    if (part[0]) {  // dweight += dy xhat, dbias += dy
      for (std::size_t j = 0; j < C; ++j) {
        part[0][j] += dyr[j] * (xr[j] - mu) * rs;
        part[1][j] += dyr[j];
      }
    }
    if (dx) {
      S mean_g, mean_gh;
      layer_norm_grad_sums(dyr, weight, xr, mu, rs, C, mean_g, mean_gh);
      mean_g *= inv_c;
      mean_gh *= inv_c;
      S* dxr = dx + r * C;
      for (std::size_t j = 0; j < C; ++j) {
        const S d = rs * (dyr[j] * weight[j] - mean_g - (xr[j] - mu) * rs * mean_gh);
        dxr[j] = accumulate_dx ? dxr[j] + d : d;
      }
    }
  });
}

// x [R, C] -> y [R, C], rstd [R]
template <class S>
void rms_norm_forward(std::size_t R, std::size_t C, const S* x, const S* weight, S eps, S* y, S* rstd) {
  const S inv_c = S(1) / static_cast<S>(C);
  parallel_for(R, 64, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const S* xr = x + r * C;
      S* yr = y + r * C;
      const S rs = S(1) / std::sqrt(row_dot(xr, xr, C) * inv_c + eps);
      rstd[r] = rs;
      for (std::size_t j = 0; j < C; ++j) yr[j] = xr[j] * rs * weight[j];
    }
  });
}

// x, dy [R, C] -> dx [R, C] (written, or added to), dweight [C]
template <class S>
void rms_norm_backward(std::size_t R, std::size_t C, const S* x, const S* weight, const S* dy, const S* rstd, S* dx,
                       bool accumulate_dx, S* dweight) {
  const S inv_c = S(1) / static_cast<S>(C);
  const std::array<S*, 1> sums{dweight};
  rows_with_column_sums<S, 1>(R, C, sums, [&](std::size_t r, const std::array<S*, 1>& part) {
    const S* xr = x + r * C;
    const S* dyr = dy + r * C;
    const S rs = rstd[r];
    if (part[0])  // dweight += dy xhat
      for (std::size_t j = 0; j < C; ++j) part[0][j] += dyr[j] * xr[j] * rs;
    if (dx) {
      // mean_k(g_k xhat_k) = rstd (1/C) sum_k dy_k w_k x_k
      const S mean_gh = rs * row_dot(dyr, weight, xr, C) * inv_c;
      S* dxr = dx + r * C;
      for (std::size_t j = 0; j < C; ++j) {
        const S d = rs * (dyr[j] * weight[j] - xr[j] * rs * mean_gh);
        dxr[j] = accumulate_dx ? dxr[j] + d : d;
      }
    }
  });
}

TF_KERNEL_INSTANTIATE(TF_NORM_KERNELS)

}  // namespace TF_KERNEL_NAMESPACE
