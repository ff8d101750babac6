// Rotary position embedding (RoPE) on the q and k parts of a fused qkv tensor, in place of learned positions.
// qkv [B,T,3C] holds q, k, v side by side on the last axis, each split into H heads of D = C/H columns
// (the layout ops/fused_attention.cpp reads). For each head of q and of k (v untouched), at position p = pos0 + t
// and for i in [0, D/2), the "rotate_half" pairs (GPT-NeoX, HF LLaMA) turn by angle = p theta_i:
//   theta_i = base^(-2i/D)
//   forward   y_i = x_i cos - x_{i+D/2} sin          y_{i+D/2} = x_{i+D/2} cos + x_i sin
//   backward  dx_i = dy_i cos + dy_{i+D/2} sin       dx_{i+D/2} = dy_{i+D/2} cos - dy_i sin
// (a rotation's Jacobian is orthogonal: the backward is the inverse rotation, angle -> -angle); dv = dy_v.
// cos and sin come from kernels/rotary.hpp, computed in double and rounded to S once, [T, D/2].
#include "tinyformer/ops/kernels/rotary.hpp"  // first: it includes kernels/simd.hpp

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

namespace {

// Rows of [B*T, 3C]: q and k heads rotated (inverse: back), v copied. Rows split over the threads.
template <class S>
void rotate_qk_rows(const S* in, S* out, std::size_t B, std::size_t T, std::size_t C, std::size_t H,
                    const kernels::RotaryTables<S>& tables, bool inverse) {
  const std::size_t D = C / H, ld = 3 * C;
  parallel_for(
      B * T, std::max<std::size_t>(1, 2048 / std::max<std::size_t>(1, ld)), [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const std::size_t t = r % T;
          const S* x = in + r * ld;
          S* y = out + r * ld;
          for (std::size_t h = 0; h < 2 * H; ++h)  // the H heads of q, then the H heads of k
            kernels::rotate_half_pairs(x + h * D, y + h * D, tables.cos_at(t), tables.sin_at(t), D / 2, inverse);
          std::copy(x + 2 * C, x + 3 * C, y + 2 * C);  // v
        }
      });
}

}  // namespace

// qkv [B,T,3C] -> [B,T,3C]
template <class S>
Var<S> rotary_qk(const Var<S>& qkv, std::size_t n_head, double base, std::size_t pos0) {
  check_input(qkv, "rotary_qk", "qkv");
  const Shape shape = qkv.shape();
  if (shape.size() != 3 || shape[2] % 3 != 0)
    throw std::invalid_argument(
        fmt::format("rotary_qk: qkv must be [B,T,3C] (q, k, v side by side), got {}", shape_str(shape)));
  const std::size_t B = shape[0], T = shape[1], C = shape[2] / 3;
  if (n_head == 0 || C % n_head != 0)
    throw std::invalid_argument(
        fmt::format("rotary_qk: C = {} (qkv {}) is not divisible by n_head = {}", C, shape_str(shape), n_head));
  const std::size_t H = n_head, D = C / H;
  if (D % 2 != 0)
    throw std::invalid_argument(
        fmt::format("rotary_qk: head size D = C / n_head = {} / {} = {} is odd (qkv {}); rotary pairs need an even D",
                    C, H, D, shape_str(shape)));
  if (!(base > 0) || !std::isfinite(base))
    throw std::invalid_argument(fmt::format("rotary_qk: base = {} must be finite and > 0", base));

  auto tables = kernels::rotary_tables<S>(T, D, base, pos0);  // cos, sin [T, D/2]
  Array<S> out = Array<S>::from_shape(shape);
  rotate_qk_rows(qkv.value().data(), out.data(), B, T, C, H, tables, false);
  return make_result<S>(
      std::move(out), {qkv},
      [B, T, C, H, tables = std::move(tables)](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        if (!in.requires_grad) return;
        Array<S> dqkv = Array<S>::from_shape(in.value.shape());
        rotate_qk_rows(self.grad.data(), dqkv.data(), B, T, C, H, tables, true);  // dq, dk turned back; dv = dy_v
        accumulate_grad(in, std::move(dqkv));
      },
      "rotary_qk");
}

template Var<float> rotary_qk<float>(const Var<float>&, std::size_t, double, std::size_t);
template Var<double> rotary_qk<double>(const Var<double>&, std::size_t, double, std::size_t);

}  // namespace tf
