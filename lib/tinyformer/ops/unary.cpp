// Elementwise functions of one input; out has a's shape and da = dout * f'(a).
#include <cmath>

#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xoperation.hpp>

#include "tinyformer/ops/kernels/exp_floor.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

// out = e^a; da = dout * out
template <class S>
Var<S> exp(const Var<S>& a) {
  check_input(a, "exp", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = kernels::exp_with_floor(a.value());
  return make_result<S>(
      std::move(out), {a}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad * self.value); }, "exp");
}

// out = ln a (a > 0 is the caller's business: a <= 0 gives nan / -inf); da = dout / a
template <class S>
Var<S> log(const Var<S>& a) {
  check_input(a, "log", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = xt::log(a.value());
  return make_result<S>(
      std::move(out), {a}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad / self.inputs[0]->value); },
      "log");
}

// out = tanh a; da = dout * (1 - out^2)
template <class S>
Var<S> tanh(const Var<S>& a) {
  check_input(a, "tanh", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = xt::tanh(a.value());
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad * (S(1) - self.value * self.value)); }, "tanh");
}

// out = max(a, 0); da = dout where a > 0, else 0 (the derivative at the kink a = 0 is taken as 0)
template <class S>
Var<S> relu(const Var<S>& a) {
  check_input(a, "relu", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = xt::maximum(a.value(), S(0));
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) { accumulate_grad(*self.inputs[0], xt::where(self.inputs[0]->value > S(0), self.grad, S(0))); },
      "relu");
}

#define TF_INSTANTIATE(S)                 \
  template Var<S> exp<S>(const Var<S>&);  \
  template Var<S> log<S>(const Var<S>&);  \
  template Var<S> tanh<S>(const Var<S>&); \
  template Var<S> relu<S>(const Var<S>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
