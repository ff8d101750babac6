// Rotary position embedding (RoPE) on the q and k parts of a fused qkv tensor, in place of learned positions.
// qkv [B,T,(H+2Hkv)D] holds q (H heads of D columns), k and v (Hkv heads each) side by side on the last axis
// (the layout ops/fused_attention.cpp reads; Hkv = H: [B,T,3C]). For each head of q and of k (v untouched), at position
// p = pos0 + t and for i in [0, D/2), the "rotate_half" pairs (GPT-NeoX, HF LLaMA) turn by angle = p theta_i:
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

// Rows of [B*T, ld]: the first `heads` heads of D (q's, then k's) rotated (inverse: back), v copied. Rows split over
// the threads.
template <class S>
void rotate_qk_rows(const S* in, S* out, std::size_t B, std::size_t T, std::size_t ld, std::size_t D, std::size_t heads,
                    const kernels::RotaryTables<S>& tables, bool inverse) {
  parallel_for(
      B * T, std::max<std::size_t>(1, 2048 / std::max<std::size_t>(1, ld)), [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const std::size_t t = r % T;
          const S* x = in + r * ld;
          S* y = out + r * ld;
          for (std::size_t h = 0; h < heads; ++h)  // the H heads of q, then the Hkv heads of k
            kernels::rotate_half_pairs(x + h * D, y + h * D, tables.cos_at(t), tables.sin_at(t), D / 2, inverse);
          std::copy(x + heads * D, x + ld, y + heads * D);  // v
        }
      });
}

}  // namespace

// qkv [B,T,(H+2Hkv)D] -> the same shape
template <class S>
Var<S> rotary_qk(const Var<S>& qkv, std::size_t n_head, double base, std::size_t pos0, std::size_t n_kv_head) {
  check_input(qkv, "rotary_qk", "qkv");
  const Shape shape = qkv.shape();
  const std::size_t H = n_head, Hkv = n_kv_head == 0 ? n_head : n_kv_head;
  if (H == 0 || H % Hkv != 0)
    throw std::invalid_argument(
        fmt::format("rotary_qk: n_kv_head = {} must divide n_head = {} (both at least 1)", Hkv, H));
  if (shape.size() != 3 || shape[2] == 0 || shape[2] % (H + 2 * Hkv) != 0)
    throw std::invalid_argument(
        fmt::format("rotary_qk: qkv must be [B,T,3C] (q, k, v side by side) with C divisible "
                    "by n_head = {}; with n_kv_head = {}: [B,T,(n_head + 2 n_kv_head) D]; got {}",
                    H, Hkv, shape_str(shape)));
  const std::size_t B = shape[0], T = shape[1], ld = shape[2], D = ld / (H + 2 * Hkv);
  if (D % 2 != 0)
    throw std::invalid_argument(
        fmt::format("rotary_qk: head size D = C / n_head = {} / {} = {} is odd (qkv {}); rotary pairs need an even D",
                    H * D, H, D, shape_str(shape)));
  if (!(base > 0) || !std::isfinite(base))
    throw std::invalid_argument(fmt::format("rotary_qk: base = {} must be finite and > 0", base));

  auto tables = kernels::rotary_tables<S>(T, D, base, pos0);  // cos, sin [T, D/2]
  Array<S> out = Array<S>::from_shape(shape);
  const std::size_t heads = H + Hkv;
  rotate_qk_rows(qkv.value().data(), out.data(), B, T, ld, D, heads, tables, false);
  return make_result<S>(
      std::move(out), {qkv},
      [B, T, ld, D, heads, tables = std::move(tables)](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        if (!in.requires_grad) return;
        Array<S> dqkv = Array<S>::from_shape(in.value.shape());
        rotate_qk_rows(self.grad.data(), dqkv.data(), B, T, ld, D, heads, tables,
                       true);  // dq, dk turned back; dv = dy_v
        accumulate_grad(in, std::move(dqkv));
      },
      "rotary_qk");
}

template Var<float> rotary_qk<float>(const Var<float>&, std::size_t, double, std::size_t, std::size_t);
template Var<double> rotary_qk<double>(const Var<double>&, std::size_t, double, std::size_t, std::size_t);

}  // namespace tf
