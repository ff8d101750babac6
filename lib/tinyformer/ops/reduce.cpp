// sum, mean and var, over everything, one axis or a list of axes (an empty list: all of them, as torch); n elements
// are reduced into each output.
//   out = sum_i a_i                    da = dout broadcast back over the reduced axes
//   out = (1/n) sum_i a_i              da = dout / n
//   out = sum_i (a_i - m)^2 / (n - c)  da = dout 2 (a_i - m) / (n - c)       m = mean over the reduced axes
// (the mean's own derivative drops out of var's: sum_i (a_i - m) = 0). std_dev = sqrt(var), composed.
//   out_i = sum_{j <= i} a_j along one axis (cumsum)      da_j = sum_{i >= j} dout_i, the reversed running sum
//   out = sqrt(sum a^2) (norm)                            da = a dout / out, 0 where out is 0 (as torch)
// logsumexp is composed: m + log sum exp(a - m), m the max as a constant (its derivative drops out: softmax remains).
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xsort.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

std::vector<std::size_t> every_axis(std::size_t rank) {
  std::vector<std::size_t> all(rank);
  for (std::size_t i = 0; i < rank; ++i) all[i] = i;
  return all;
}

// The axes to reduce, normalized and sorted; each at most once. An empty list means every axis (torch's rule).
std::vector<std::size_t> reduced_axes(const std::vector<long>& axes, std::size_t rank, const char* op) {
  if (axes.empty()) return every_axis(rank);
  std::vector<std::size_t> out;
  for (const long axis : axes) {
    const std::size_t ax = normalize_axis(axis, rank, op);
    if (std::find(out.begin(), out.end(), ax) != out.end())
      throw std::invalid_argument(fmt::format("{}: axis {} appears more than once in the list of axes", op, ax));
    out.push_back(ax);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The shape of a reduction's result: the reduced axes kept as 1 (`kept`) or removed.
Shape reduced_shape(const Shape& shape, const std::vector<std::size_t>& axes, bool keep) {
  Shape out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced)
      out.push_back(shape[i]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

std::size_t reduced_count(const Shape& shape, const std::vector<std::size_t>& axes) {
  std::size_t n = 1;
  for (const std::size_t ax : axes) n *= shape[ax];
  return n;
}

// Shared by sum and mean: reduce over `axes` (all of them for a full reduction), times `factor`.
template <class S>
Var<S> reduce_sum(const Var<S>& a, const std::vector<std::size_t>& axes, bool keepdim, S factor, const char* op) {
  const Shape kept_shape = reduced_shape(a.shape(), axes, true);  // the reduced axes kept as 1
  Array<S> out;
  if (axes.size() == a.dim()) {
    out = Array<S>::from_shape({});
    out() = xt::sum(a.value(), xt::evaluation_strategy::immediate)();
  } else {
    out = xt::sum(a.value(), axes, xt::evaluation_strategy::immediate);
  }
  if (factor != S(1)) out *= factor;
  out.reshape(reduced_shape(a.shape(), axes, keepdim));
  return make_result<S>(
      std::move(out), {a},
      [kept_shape, factor](Node<S>& self) {
        Node<S>& x = *self.inputs[0];
        Array<S> g = self.grad;
        g.reshape(kept_shape);
        // g has 1 on the reduced axes: broadcasting stretches it back to x's shape
        accumulate_grad(x, xt::broadcast(g * factor, x.value.shape()));
      },
      op);
}

template <class S>
Var<S> variance(const Var<S>& a, const std::vector<std::size_t>& axes, double correction, bool keepdim) {
  const Shape kept_shape = reduced_shape(a.shape(), axes, true);
  const S n = static_cast<S>(reduced_count(a.shape(), axes));
  const S denominator = std::max(S(0), n - static_cast<S>(correction));
  Array<S> mean_kept = xt::sum(a.value(), axes, xt::evaluation_strategy::immediate);
  mean_kept /= n;
  mean_kept.reshape(kept_shape);
  Array<S> centred = a.value() - mean_kept;
  Array<S> out = xt::sum(centred * centred, axes, xt::evaluation_strategy::immediate);
  out /= denominator;
  out.reshape(reduced_shape(a.shape(), axes, keepdim));
  return make_result<S>(
      std::move(out), {a},
      [kept_shape, denominator, centred = std::move(centred)](Node<S>& self) {
        Array<S> g = self.grad;
        g.reshape(kept_shape);
        accumulate_grad(*self.inputs[0], centred * (g * (S(2) / denominator)));
      },
      "var");
}

// A running sum along `axis` of a row-major array seen as [outer, n, inner], forwards or (reverse) backwards.
template <class S>
void running_sum(const Shape& shape, std::size_t axis, const S* in, S* out, bool reverse) {
  const std::size_t n = shape[axis];
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < inner; ++k) {
      S total = 0;
      for (std::size_t step = 0; step < n; ++step) {
        const std::size_t i = reverse ? n - 1 - step : step;
        const std::size_t at = (o * n + i) * inner + k;
        total += in[at];
        out[at] = total;
      }
    }
}

}  // namespace

template <class S>
Var<S> cumsum(const Var<S>& a, long axis) {
  check_input(a, "cumsum", "a");
  if (a.dim() == 0) return scale(a, S(1));  // torch: a 0-d tensor's cumsum is itself
  const std::size_t ax = normalize_axis(axis, a.dim(), "cumsum");
  const Shape shape = a.shape();
  Array<S> out = Array<S>::from_shape(shape);
  const Array<S>& in = a.value();  // contiguous
  running_sum<S>(shape, ax, in.data(), out.data(), false);
  return make_result<S>(
      std::move(out), {a},
      [shape, ax](Node<S>& self) {
        Array<S> g = Array<S>::from_shape(shape);
        const Array<S> dout = self.grad;
        running_sum<S>(shape, ax, dout.data(), g.data(), true);
        accumulate_grad(*self.inputs[0], g);
      },
      "cumsum");
}

template <class S>
Var<S> logsumexp(const Var<S>& a, const std::vector<long>& axes, bool keepdim) {
  check_input(a, "logsumexp", "a");
  const std::vector<std::size_t> ax = reduced_axes(axes, a.dim(), "logsumexp");
  if (reduced_count(a.shape(), ax) == 0) throw std::invalid_argument("logsumexp: the reduced axes hold no element");
  Array<S> m = xt::amax(a.value(), ax, xt::evaluation_strategy::immediate);
  m = xt::where(xt::isfinite(m), m, S(0));  // a row of -inf (or inf) keeps its own value through exp and log
  m.reshape(reduced_shape(a.shape(), ax, true));
  const Var<S> shift(m);
  Var<S> out = add(log(sum(exp(sub(a, shift)), std::vector<long>(ax.begin(), ax.end()), true)), shift);
  if (keepdim) return out;
  const Shape kept = reduced_shape(a.shape(), ax, false);
  return reshape(out, std::vector<long>(kept.begin(), kept.end()));
}

template <class S>
Var<S> norm(const Var<S>& a, const std::vector<long>& axes, bool keepdim) {
  check_input(a, "norm", "a");
  const std::vector<std::size_t> ax = reduced_axes(axes, a.dim(), "norm");
  const Shape kept_shape = reduced_shape(a.shape(), ax, true);
  Array<S> n = xt::sqrt(xt::sum(a.value() * a.value(), ax, xt::evaluation_strategy::immediate));
  n.reshape(kept_shape);
  Array<S> out = n;
  out.reshape(reduced_shape(a.shape(), ax, keepdim));
  return make_result<S>(
      std::move(out), {a},
      [kept_shape, n = std::move(n)](Node<S>& self) {
        Array<S> g = self.grad;
        g.reshape(kept_shape);
        const Array<S> per = xt::where(xt::equal(n, S(0)), S(0), g / n);  // a zero norm passes no gradient (torch)
        accumulate_grad(*self.inputs[0], self.inputs[0]->value * per);
      },
      "norm");
}

template <class S>
Var<S> sum(const Var<S>& a) {
  check_input(a, "sum", "a");
  return reduce_sum<S>(a, every_axis(a.dim()), false, S(1), "sum");
}

template <class S>
Var<S> sum(const Var<S>& a, long axis, bool keepdim) {
  check_input(a, "sum", "a");
  return reduce_sum<S>(a, {normalize_axis(axis, a.dim(), "sum")}, keepdim, S(1), "sum");
}

template <class S>
Var<S> sum(const Var<S>& a, const std::vector<long>& axes, bool keepdim) {
  check_input(a, "sum", "a");
  return reduce_sum<S>(a, reduced_axes(axes, a.dim(), "sum"), keepdim, S(1), "sum");
}

template <class S>
Var<S> mean(const Var<S>& a) {
  check_input(a, "mean", "a");
  return reduce_sum<S>(a, every_axis(a.dim()), false, S(1) / static_cast<S>(a.numel()), "mean");
}

template <class S>
Var<S> mean(const Var<S>& a, long axis, bool keepdim) {
  check_input(a, "mean", "a");
  const std::size_t ax = normalize_axis(axis, a.dim(), "mean");
  return reduce_sum<S>(a, {ax}, keepdim, S(1) / static_cast<S>(a.shape()[ax]), "mean");
}

template <class S>
Var<S> mean(const Var<S>& a, const std::vector<long>& axes, bool keepdim) {
  check_input(a, "mean", "a");
  const std::vector<std::size_t> ax = reduced_axes(axes, a.dim(), "mean");
  return reduce_sum<S>(a, ax, keepdim, S(1) / static_cast<S>(reduced_count(a.shape(), ax)), "mean");
}

template <class S>
Var<S> var(const Var<S>& a, double correction) {
  check_input(a, "var", "a");
  return variance(a, every_axis(a.dim()), correction, false);
}

template <class S>
Var<S> var(const Var<S>& a, const std::vector<long>& axes, double correction, bool keepdim) {
  check_input(a, "var", "a");
  return variance(a, reduced_axes(axes, a.dim(), "var"), correction, keepdim);
}

template <class S>
Var<S> std_dev(const Var<S>& a, double correction) {
  return sqrt(var(a, correction));
}

template <class S>
Var<S> std_dev(const Var<S>& a, const std::vector<long>& axes, double correction, bool keepdim) {
  return sqrt(var(a, axes, correction, keepdim));
}

#define TF_INSTANTIATE(S)                                                            \
  template Var<S> sum<S>(const Var<S>&);                                             \
  template Var<S> sum<S>(const Var<S>&, long, bool);                                 \
  template Var<S> sum<S>(const Var<S>&, const std::vector<long>&, bool);             \
  template Var<S> mean<S>(const Var<S>&);                                            \
  template Var<S> mean<S>(const Var<S>&, long, bool);                                \
  template Var<S> mean<S>(const Var<S>&, const std::vector<long>&, bool);            \
  template Var<S> var<S>(const Var<S>&, double);                                     \
  template Var<S> var<S>(const Var<S>&, const std::vector<long>&, double, bool);     \
  template Var<S> std_dev<S>(const Var<S>&, double);                                 \
  template Var<S> std_dev<S>(const Var<S>&, const std::vector<long>&, double, bool); \
  template Var<S> cumsum<S>(const Var<S>&, long);                                    \
  template Var<S> logsumexp<S>(const Var<S>&, const std::vector<long>&, bool);       \
  template Var<S> norm<S>(const Var<S>&, const std::vector<long>&, bool);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
