// sum and mean, over everything or over one axis.
//   out = sum_i a_i            da = dout broadcast back over the reduced axis
//   out = (1/n) sum_i a_i      da = dout / n
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xreducer.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

// Shared by sum and mean: reduce over `axis` (or all axes when axis is null), times `factor`.
template <class S>
Var<S> reduce_sum(const Var<S>& a, const std::size_t* axis, bool keepdim, S factor, const char* op) {
  Array<S> out;
  Shape kept_shape = a.shape();  // the shape of out with the reduced axis kept as 1
  if (axis) {
    out = xt::sum(a.value(), {*axis}, xt::evaluation_strategy::immediate);
    kept_shape[*axis] = 1;
  } else {
    out = Array<S>::from_shape({});
    out() = xt::sum(a.value(), xt::evaluation_strategy::immediate)();
    for (auto& d : kept_shape) d = 1;
  }
  if (factor != S(1)) out *= factor;
  if (axis && keepdim) out.reshape(kept_shape);
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

}  // namespace

template <class S>
Var<S> sum(const Var<S>& a) {
  check_input(a, "sum", "a");
  return reduce_sum<S>(a, nullptr, false, S(1), "sum");
}

template <class S>
Var<S> sum(const Var<S>& a, long axis, bool keepdim) {
  check_input(a, "sum", "a");
  const std::size_t ax = normalize_axis(axis, a.dim(), "sum");
  return reduce_sum<S>(a, &ax, keepdim, S(1), "sum");
}

template <class S>
Var<S> mean(const Var<S>& a) {
  check_input(a, "mean", "a");
  return reduce_sum<S>(a, nullptr, false, S(1) / static_cast<S>(a.numel()), "mean");
}

template <class S>
Var<S> mean(const Var<S>& a, long axis, bool keepdim) {
  check_input(a, "mean", "a");
  const std::size_t ax = normalize_axis(axis, a.dim(), "mean");
  return reduce_sum<S>(a, &ax, keepdim, S(1) / static_cast<S>(a.shape()[ax]), "mean");
}

#define TF_INSTANTIATE(S)                            \
  template Var<S> sum<S>(const Var<S>&);             \
  template Var<S> sum<S>(const Var<S>&, long, bool); \
  template Var<S> mean<S>(const Var<S>&);            \
  template Var<S> mean<S>(const Var<S>&, long, bool);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
