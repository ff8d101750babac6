// Linear layer as one op, R = rows of x (all leading dims), with x [R,in], W [out,in], b [out]:
//   forward   y = x W^T + b          (y is first filled with b per row, then gemm accumulates x W^T)
//   backward  dx = dy W   [R,in]     dW = dy^T x   [out,in]     db = sum over rows of dy   [out]
// Gradients go straight into the inputs' .grad (BLAS beta = 0 for a fresh gradient, 1 to accumulate).
// linear_gelu applies GELU to y in the same op (an MLP's first layer): the backward turns dy into
// dpre = dy * gelu'(pre) in place, so no separate activation gradient is ever allocated.
// In the backward dx and dW run side by side: for large products in four pieces of about equal cost (dx by halves of
// its rows, dW by halves of its sum over rows, the second added after the first), which balance the threads where the
// two products take different times (dW's A^T B ran 5-10% longer than dx's A B at small's shape with AVX2); db sums
// the rows in order.
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/arrays.hpp"
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

namespace {

template <class S>
Var<S> linear_impl(const Var<S>& x, const Var<S>& weight, const Var<S>& bias, bool with_gelu, const char* op) {
  const Shape xs = x.shape(), ws = weight.shape();
  if (xs.empty() || ws.size() != 2 || xs.back() != ws[1])
    throw std::invalid_argument(fmt::format("{}: x {} and weight {}: weight must be [out, in] with in = x's last dim",
                                            op, shape_str(xs), shape_str(ws)));
  const std::size_t in = ws[1], out = ws[0], rows = in == 0 ? 0 : x.numel() / in;
  const bool has_bias = bias.defined();
  if (has_bias && bias.shape() != Shape{out})
    throw std::invalid_argument(fmt::format("{}: bias {} must be [out] = [{}]", op, shape_str(bias.shape()), out));
  Shape ys = xs;
  ys.back() = out;
  Array<S> y = Array<S>::from_shape(ys);
  if (has_bias) kernels::fill_rows<S>(rows, out, bias.value().data(), y.data());
  // y [R,out] (+)= x [R,in] W^T [in,out]
  gemm<S>(false, true, {rows, out, in}, S(1), x.value().data(), weight.value().data(), has_bias ? S(1) : S(0),
          y.data());

  Array<S> slope;  // with GELU: gelu' at the pre-activation, in its place, for the backward
  if (with_gelu) {
    slope = std::move(y);
    y = Array<S>::from_shape(ys);
    kernels::gelu_forward_slope<S>(y.size(), slope.data(), y.data());
  }

  std::vector<Var<S>> inputs{x, weight};
  if (has_bias) inputs.push_back(bias);
  return make_result<S>(
      std::move(y), inputs,
      [rows, in, out, has_bias, with_gelu, slope = std::move(slope)](Node<S>& self) {
        Node<S>& nx = *self.inputs[0];
        Node<S>& nw = *self.inputs[1];
        const S* dy = self.grad.data();
        Array<S> dpre;
        if (with_gelu) {  // dpre = dy * gelu'(pre): in place over dy, unless the caller keeps that gradient
          S* target = self.grad.data();
          if (self.retain_grad) {
            dpre = Array<S>::from_shape(slope.shape());
            target = dpre.data();
          }
          kernels::gelu_backward_slope<S>(slope.size(), slope.data(), dy, target);
          dy = target;
        }
        Node<S>* nb = has_bias && self.inputs[2]->requires_grad ? self.inputs[2].get() : nullptr;
        const S beta_x = nx.requires_grad ? prepare_grad(nx) : S(0);
        const S beta_w = nw.requires_grad ? prepare_grad(nw) : S(0);
        const S beta_b = nb ? prepare_grad(*nb) : S(0);
        // dx by halves of its rows, dW by halves of its sum over rows (the second half into a scratch array, added
        // after): four pieces of about equal cost, claimed by whichever thread is free, when each is worth a thread
        // and there are rows enough that packing W once more (for dx's second half) and the scratch, both [out,in],
        // cost little next to the work, rows x out x in (GPT-2's lm_head at 256 rows made the step slower); whole
        // products (dx and dW side by side) otherwise. The cut depends on the shape alone. The longer pieces (dW's)
        // come first: in the other order the thread that took the last dW half ended later (small's step 2.3% slower).
        const std::size_t macs = rows * in * out;
        const bool halves = macs >= 16 * kMinPieceMacs && rows >= 1024;
        const std::size_t cut = halves ? rows / 2 / 16 * 16 : rows;
        Array<S> dw_rest;
        if (halves && nw.requires_grad) dw_rest = Array<S>::from_shape({out, in});
        parallel_for_balanced(4, macs >= kMinPieceMacs ? 1 : 4, 4, [&](std::size_t first, std::size_t last) {
          for (std::size_t task = first; task < last; ++task) {
            const bool lower = task < 2;  // tasks 0 and 1 take rows [0, cut), 2 and 3 rows [cut, rows)
            const std::size_t r0 = lower ? 0 : cut, r1 = lower ? cut : rows;
            if (task == 3 && nb)  // db [out] (+)= column sums of dy, rows in order (a fresh buffer is overwritten)
              kernels::add_column_sums<S>(rows, out, dy, beta_b != S(0), nb->grad.data());
            if (r0 == r1) continue;
            if (task % 2 == 1 && nx.requires_grad)  // dx [r0:r1, in] (+)= dy [r0:r1, out] W [out,in]
              gemm_whole<S>(false, false, {r1 - r0, in, out}, S(1), dy + r0 * out, nw.value.data(), beta_x,
                            nx.grad.data() + r0 * in);
            if (task % 2 == 0 && nw.requires_grad)  // dW [out,in] (+)= dy[r0:r1]^T [out,R] x [r0:r1, in]
              gemm_whole<S>(true, false, {out, in, r1 - r0}, S(1), dy + r0 * out, nx.value.data() + r0 * in,
                            lower ? beta_w : S(0), lower ? nw.grad.data() : dw_rest.data());
          }
        });
        if (halves && nw.requires_grad) add_values(out * in, dw_rest.data(), nw.grad.data());
      },
      with_gelu ? "linear+gelu" : "linear");
}

}  // namespace

template <class S>
Var<S> linear(const Var<S>& x, const Var<S>& weight, const Var<S>& bias) {
  check_input(x, "linear", "x");
  check_input(weight, "linear", "weight");
  if (bias.defined()) check_input(bias, "linear", "bias");  // optional: undefined means none
  return linear_impl(x, weight, bias, false, "linear");
}

template <class S>
Var<S> linear_gelu(const Var<S>& x, const Var<S>& weight, const Var<S>& bias) {
  check_input(x, "linear_gelu", "x");
  check_input(weight, "linear_gelu", "weight");
  if (bias.defined()) check_input(bias, "linear_gelu", "bias");  // optional: undefined means none
  return linear_impl(x, weight, bias, true, "linear_gelu");
}

template Var<float> linear_gelu<float>(const Var<float>&, const Var<float>&, const Var<float>&);
template Var<double> linear_gelu<double>(const Var<double>&, const Var<double>&, const Var<double>&);
template Var<float> linear<float>(const Var<float>&, const Var<float>&, const Var<float>&);
template Var<double> linear<double>(const Var<double>&, const Var<double>&, const Var<double>&);

}  // namespace tf
