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
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>

#include "tinyformer/ops/kernels/exp_floor.hpp"
#include "tinyformer/ops/kernels/rows.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

// Size of the scratch block log_softmax computes exp() into (values): small enough to stay in L1/L2.
constexpr std::size_t kScratchElems = 4096;

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

// out = x - rowmax(x), row by row, x and out [R, C] (kernels::shift_by_row_max: -inf stays -inf; a row with a
// NaN or only -inf becomes NaN).
template <class S>
void subtract_row_max(const S* x, S* out, const Rows& rows) {
  for (std::size_t r = 0; r < rows.count; ++r)
    kernels::shift_by_row_max(x + r * rows.width, out + r * rows.width, rows.width);
}

}  // namespace

// a [..., C] -> y [..., C]; dx = y * (dy - rowsum(dy * y))
template <class S>
Var<S> softmax(const Var<S>& a) {
  check_input(a, "softmax", "a");
  const Rows rows = last_axis_rows(a.shape(), "softmax");
  const std::size_t C = rows.width;
  Array<S> out = Array<S>::from_shape(a.value().shape());
  subtract_row_max(a.value().data(), out.data(), rows);
  xt::noalias(out) = kernels::exp_with_floor(out);  // contiguous, vectorised; exp(-inf) = 0
  S* y = out.data();
  for (std::size_t r = 0; r < rows.count; ++r) {
    S* yr = y + r * C;
    S total = 0;
    for (std::size_t j = 0; j < C; ++j) total += yr[j];
    const S inv = S(1) / total;  // total >= 1: the max entry contributes exp(0)
    for (std::size_t j = 0; j < C; ++j) yr[j] *= inv;
  }

  return make_result<S>(
      std::move(out), {a},
      [rows](Node<S>& self) {
        const std::size_t C = rows.width;
        Array<S> dx = Array<S>::from_shape(self.value.shape());
        const S* y = self.value.data();
        const S* dy = self.grad.data();
        S* g = dx.data();
        for (std::size_t r = 0; r < rows.count; ++r) {
          const S* yr = y + r * C;
          const S* dyr = dy + r * C;
          S* gr = g + r * C;
          S dot = 0;
          for (std::size_t j = 0; j < C; ++j) dot += dyr[j] * yr[j];
          for (std::size_t j = 0; j < C; ++j) gr[j] = yr[j] * (dyr[j] - dot);
        }
        accumulate_grad(*self.inputs[0], std::move(dx));
      },
      "softmax");
}

// a [..., C] -> y [..., C]; dx = dy - exp(y) * rowsum(dy)
template <class S>
Var<S> log_softmax(const Var<S>& a) {
  check_input(a, "log_softmax", "a");
  const Rows rows = last_axis_rows(a.shape(), "log_softmax");
  const std::size_t C = rows.width;
  Array<S> out = Array<S>::from_shape(a.value().shape());
  subtract_row_max(a.value().data(), out.data(), rows);
  // exp(x - m) is needed only for the row sums: it goes through a small scratch block of whole rows (about
  // kScratchElems values, reused), not a second array as large as x.
  const std::size_t block_rows = C == 0 ? 1 : std::max<std::size_t>(1, std::min(rows.count, kScratchElems / C));
  Array<S> scratch = Array<S>::from_shape({block_rows * C});
  S* y = out.data();
  for (std::size_t r0 = 0; r0 < rows.count; r0 += block_rows) {
    const std::size_t nr = std::min(block_rows, rows.count - r0), n = nr * C;
    auto shifted = xt::adapt(y + r0 * C, n, xt::no_ownership(), std::array<std::size_t, 1>{n});
    auto e = xt::adapt(scratch.data(), n, xt::no_ownership(), std::array<std::size_t, 1>{n});
    xt::noalias(e) = kernels::exp_with_floor(shifted);
    for (std::size_t r = 0; r < nr; ++r) {
      const S* er = scratch.data() + r * C;
      S total = 0;
      for (std::size_t j = 0; j < C; ++j) total += er[j];
      const S log_total = std::log(total);  // total >= 1, so log_total >= 0 and finite
      S* yr = y + (r0 + r) * C;
      for (std::size_t j = 0; j < C; ++j) yr[j] -= log_total;
    }
  }

  return make_result<S>(
      std::move(out), {a},
      [rows](Node<S>& self) {
        const std::size_t C = rows.width;
        Array<S> dx = Array<S>::from_shape(self.value.shape());
        xt::noalias(dx) = kernels::exp_with_floor(self.value);  // softmax, recomputed instead of stored
        const S* dy = self.grad.data();
        S* g = dx.data();
        for (std::size_t r = 0; r < rows.count; ++r) {
          const S* dyr = dy + r * C;
          S* gr = g + r * C;
          S total = 0;
          for (std::size_t j = 0; j < C; ++j) total += dyr[j];
          for (std::size_t j = 0; j < C; ++j) gr[j] = dyr[j] - gr[j] * total;
        }
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
