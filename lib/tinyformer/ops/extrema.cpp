// Largest and smallest values. A NaN beats every number (it propagates, as in torch); among equal values the first
// index wins.
//   max(a)            out = max_i a_i  []                     da = dout / k at each of the k maxima (torch: ties share)
//   max(a, axis)      values [..., ...] (axis removed), indices  da = dout at each row's index, 0 elsewhere
//   argmax            the indices alone (a constant)
//   maximum(a, b)     out = max(a, b), broadcast               da = sum_to(dout where a > b, dout / 2 where a == b)
//                                                              db = sum_to(dout where b > a, dout / 2 where a == b)
// min, argmin and minimum are the same with the order reversed.
// Along an axis the tensor is seen as [outer, len, inner] (row-major): row (o, i) is a[o, :, i].
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xoperation.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

// Does v beat the best so far? For the largest (Largest) or the smallest; a NaN beats any number.
template <bool Largest, class S>
bool beats(S v, S best) {
  if (std::isnan(best)) return false;
  if (std::isnan(v)) return true;
  return Largest ? v > best : v < best;
}

// Elementwise: does x beat y (a NaN x beats any y)?
template <bool Largest, class X, class Y>
auto wins(const X& x, const Y& y) {
  if constexpr (Largest)
    return xt::isnan(x) || x > y;
  else
    return xt::isnan(x) || x < y;
}

// The position along `axis` of each row's winner: [outer * inner] indices, in the shape with the axis removed.
template <bool Largest, class S>
IndexArray winners(const Array<S>& a, const AxisSlabs& r, const Shape& out_shape) {
  IndexArray idx = IndexArray::from_shape(out_shape);
  const S* x = a.data();
  for (std::size_t o = 0; o < r.outer; ++o)
    for (std::size_t i = 0; i < r.inner; ++i) {
      const S* row = x + o * r.len * r.inner + i;
      std::size_t best = 0;
      for (std::size_t j = 1; j < r.len; ++j)
        if (beats<Largest>(row[j * r.inner], row[best * r.inner])) best = j;
      idx.data()[o * r.inner + i] = static_cast<Index>(best);
    }
  return idx;
}

template <bool Largest, class S>
Var<S> extreme_all(const Var<S>& a, const char* op) {
  check_input(a, op, "a");
  const Array<S>& x = a.value();
  S best = x.data()[0];
  for (std::size_t i = 1; i < x.size(); ++i)
    if (beats<Largest>(x.data()[i], best)) best = x.data()[i];
  Array<S> out = Array<S>::from_shape({});
  out() = best;
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        const S m = self.value();
        // the k elements equal to the result (NaNs when it is NaN) share dout evenly
        Array<S> hit =
            std::isnan(m) ? Array<S>(xt::cast<S>(xt::isnan(in.value))) : Array<S>(xt::cast<S>(xt::equal(in.value, m)));
        const S k = xt::sum(hit, xt::evaluation_strategy::immediate)();
        accumulate_grad(in, hit * (self.grad() / k));
      },
      op);
}

template <bool Largest, class S>
ValuesIndices<S> extreme_along(const Var<S>& a, long axis, bool keepdim, const char* op) {
  check_input(a, op, "a");
  const std::size_t ax = normalize_axis(axis, a.dim(), op);
  const AxisSlabs r = axis_slabs(a.shape(), ax);
  Shape out_shape = a.shape();
  if (keepdim)
    out_shape[ax] = 1;
  else
    out_shape.erase(out_shape.begin() + static_cast<long>(ax));
  IndexArray idx = winners<Largest>(a.value(), r, out_shape);
  Array<S> out = Array<S>::from_shape(out_shape);
  for (std::size_t o = 0; o < r.outer; ++o)
    for (std::size_t i = 0; i < r.inner; ++i) {
      const std::size_t k = o * r.inner + i;
      out.data()[k] = a.value().data()[(o * r.len + static_cast<std::size_t>(idx.data()[k])) * r.inner + i];
    }
  Var<S> values = make_result<S>(
      std::move(out), {a},
      [r, idx](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        Array<S> g = xt::zeros<S>(in.value.shape());  // dout goes to the winner of each row
        for (std::size_t o = 0; o < r.outer; ++o)
          for (std::size_t i = 0; i < r.inner; ++i) {
            const std::size_t k = o * r.inner + i;
            g.data()[(o * r.len + static_cast<std::size_t>(idx.data()[k])) * r.inner + i] += self.grad.data()[k];
          }
        accumulate_grad(in, std::move(g));
      },
      op);
  return {values, idx};
}

template <bool Largest, class S>
IndexArray extreme_index_all(const Var<S>& a, const char* op) {
  check_input(a, op, "a");
  const Array<S>& x = a.value();
  std::size_t best = 0;
  for (std::size_t i = 1; i < x.size(); ++i)
    if (beats<Largest>(x.data()[i], x.data()[best])) best = i;
  IndexArray out = IndexArray::from_shape({});
  out() = static_cast<Index>(best);
  return out;
}

template <bool Largest, class S>
IndexArray extreme_index_along(const Var<S>& a, long axis, bool keepdim, const char* op) {
  check_input(a, op, "a");
  const std::size_t ax = normalize_axis(axis, a.dim(), op);
  Shape out_shape = a.shape();
  if (keepdim)
    out_shape[ax] = 1;
  else
    out_shape.erase(out_shape.begin() + static_cast<long>(ax));
  return winners<Largest>(a.value(), axis_slabs(a.shape(), ax), out_shape);
}

// The winner of a and b, elementwise; ties split dout in two.
template <bool Largest, class S>
Var<S> extreme_of_two(const Var<S>& a, const Var<S>& b, const char* op) {
  check_input(a, op, "a");
  check_input(b, op, "b");
  Array<S> out = Array<S>::from_shape(broadcast_shapes(a.shape(), b.shape(), op));
  const auto& x = a.value();
  const auto& y = b.value();
  xt::noalias(out) = xt::where(wins<Largest>(x, y) || xt::equal(x, y), x, y);
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        Node<S>& p = *self.inputs[0];
        Node<S>& q = *self.inputs[1];
        // a's share of dout: 1 where it won alone (a NaN wins), 1/2 on a tie, 0 where b won; b's the same way round
        const Array<S>& x = p.value;
        const Array<S>& y = q.value;
        const auto tie = xt::equal(x, y);
        if (p.requires_grad) {
          const Array<S> share = xt::where(tie, S(0.5), xt::cast<S>(wins<Largest>(x, y)));
          accumulate_grad(p, sum_to_shape(Array<S>(self.grad * share), to_shape(x.shape())));
        }
        if (q.requires_grad) {
          const Array<S> share = xt::where(tie, S(0.5), xt::cast<S>(wins<Largest>(y, x)));
          accumulate_grad(q, sum_to_shape(Array<S>(self.grad * share), to_shape(y.shape())));
        }
      },
      op);
}

}  // namespace

template <class S>
Var<S> max(const Var<S>& a) {
  return extreme_all<true>(a, "max");
}
template <class S>
Var<S> min(const Var<S>& a) {
  return extreme_all<false>(a, "min");
}
template <class S>
ValuesIndices<S> max(const Var<S>& a, long axis, bool keepdim) {
  return extreme_along<true>(a, axis, keepdim, "max");
}
template <class S>
ValuesIndices<S> min(const Var<S>& a, long axis, bool keepdim) {
  return extreme_along<false>(a, axis, keepdim, "min");
}
template <class S>
IndexArray argmax(const Var<S>& a) {
  return extreme_index_all<true>(a, "argmax");
}
template <class S>
IndexArray argmin(const Var<S>& a) {
  return extreme_index_all<false>(a, "argmin");
}
template <class S>
IndexArray argmax(const Var<S>& a, long axis, bool keepdim) {
  return extreme_index_along<true>(a, axis, keepdim, "argmax");
}
template <class S>
IndexArray argmin(const Var<S>& a, long axis, bool keepdim) {
  return extreme_index_along<false>(a, axis, keepdim, "argmin");
}
template <class S>
Var<S> maximum(const Var<S>& a, const Var<S>& b) {
  return extreme_of_two<true>(a, b, "maximum");
}
template <class S>
Var<S> minimum(const Var<S>& a, const Var<S>& b) {
  return extreme_of_two<false>(a, b, "minimum");
}

#define TF_INSTANTIATE(S)                                      \
  template Var<S> max<S>(const Var<S>&);                       \
  template Var<S> min<S>(const Var<S>&);                       \
  template ValuesIndices<S> max<S>(const Var<S>&, long, bool); \
  template ValuesIndices<S> min<S>(const Var<S>&, long, bool); \
  template IndexArray argmax<S>(const Var<S>&);                \
  template IndexArray argmin<S>(const Var<S>&);                \
  template IndexArray argmax<S>(const Var<S>&, long, bool);    \
  template IndexArray argmin<S>(const Var<S>&, long, bool);    \
  template Var<S> maximum<S>(const Var<S>&, const Var<S>&);    \
  template Var<S> minimum<S>(const Var<S>&, const Var<S>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
