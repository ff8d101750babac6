// softmax and log_softmax over the last axis, and the causal mask that feeds attention scores to softmax.
// x [..., C] is read as R contiguous rows of C (R = product of the leading dims), m = max_k x_k per row:
//   softmax      y_j = exp(x_j - m) / sum_k exp(x_k - m)        (an entry of -inf gets weight exactly 0)
//                dx_j = y_j (dy_j - sum_k dy_k y_k)
//   log_softmax  y_j = x_j - m - log(sum_k exp(x_k - m))         (an entry of -inf stays -inf)
//                dx_j = dy_j - softmax_j sum_k dy_k,  softmax_j = exp(y_j)
//   causal_mask  scores [..., Tq, Tk]: y_ij = x_ij where j <= i (np.tril), -inf where j > i
//                dx_ij = dy_ij where j <= i, 0 where j > i
// A row whose entries are all -inf, or that holds a NaN, has no softmax (0/0): softmax and log_softmax give NaN
// for the whole row (as PyTorch does), so that training detects it as a non-finite loss. causal_mask never
// makes such a row, because column 0 is always kept.
#include <cstddef>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/softmax_rows.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

// Rows of the last axis: x [..., C] -> R rows of C.
struct Rows {
  std::size_t count = 1;  // R
  std::size_t width = 0;  // C
};

Rows last_axis_rows(const Shape& shape, const char* op) {
  if (shape.empty())
    throw std::invalid_argument(
        fmt::format("{}: the input is a 0-d value; it needs at least 1 dimension (the last axis is normalised)", op));
  Rows r;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) r.count *= shape[i];
  r.width = shape.back();
  return r;
}

}  // namespace

// a [..., C] -> y [..., C]; dx = y * (dy - rowsum(dy * y))   (the row loops: kernels::softmax_forward, _backward)
template <class S>
Var<S> softmax(const Var<S>& a) {
  check_input(a, "softmax", "a");
  const Rows rows = last_axis_rows(a.shape(), "softmax");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  kernels::softmax_forward<S>(rows.count, rows.width, a.value().data(), out.data());

  return make_result<S>(
      std::move(out), {a},
      [rows](Node<S>& self) {
        Array<S> dx = Array<S>::from_shape(self.value.shape());
        kernels::softmax_backward<S>(rows.count, rows.width, self.value.data(), self.grad.data(), dx.data());
        accumulate_grad(*self.inputs[0], std::move(dx));
      },
      "softmax");
}

// a [..., C] -> y [..., C]; dx = dy - exp(y) * rowsum(dy)   (the row loops: kernels::log_softmax_forward, _backward)
template <class S>
Var<S> log_softmax(const Var<S>& a) {
  check_input(a, "log_softmax", "a");
  const Rows rows = last_axis_rows(a.shape(), "log_softmax");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  kernels::log_softmax_forward<S>(rows.count, rows.width, a.value().data(), out.data());

  return make_result<S>(
      std::move(out), {a},
      [rows](Node<S>& self) {
        Array<S> dx = Array<S>::from_shape(self.value.shape());
        kernels::log_softmax_backward<S>(rows.count, rows.width, self.value.data(), self.grad.data(), dx.data());
        accumulate_grad(*self.inputs[0], std::move(dx));
      },
      "log_softmax");
}

// scores [..., Tq, Tk] -> [..., Tq, Tk] with (i, j > i) = -inf; the gradient passes only where kept.
template <class S>
Var<S> causal_mask(const Var<S>& scores) {
  check_input(scores, "causal_mask", "scores");
  const Shape shape = scores.shape();
  if (shape.size() < 2)
    throw std::invalid_argument(fmt::format(
        "causal_mask: scores must have at least 2 dimensions [..., Tq, Tk], got shape {}", shape_str(shape)));
  const std::size_t Tq = shape[shape.size() - 2], Tk = shape.back();
  std::size_t batch = 1;
  for (std::size_t i = 0; i + 2 < shape.size(); ++i) batch *= shape[i];

  // Sets (i, j) for j > i in every [Tq, Tk] block of p to `fill`.
  auto fill_upper = [batch, Tq, Tk](S* p, S fill) {
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < Tq; ++i) {
        S* row = p + (b * Tq + i) * Tk;
        for (std::size_t j = i + 1; j < Tk; ++j) row[j] = fill;
      }
  };

  Array<S> out = scores.value();
  fill_upper(out.data(), -std::numeric_limits<S>::infinity());
  return make_result<S>(
      std::move(out), {scores},
      [fill_upper](Node<S>& self) {
        Array<S> dx = self.grad;
        fill_upper(dx.data(), S(0));
        accumulate_grad(*self.inputs[0], std::move(dx));
      },
      "causal_mask");
}

#define TF_INSTANTIATE(S)                        \
  template Var<S> softmax<S>(const Var<S>&);     \
  template Var<S> log_softmax<S>(const Var<S>&); \
  template Var<S> causal_mask<S>(const Var<S>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
