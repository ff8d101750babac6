// Elementwise maths beyond unary.cpp; out has a's shape (pow of two tensors: their broadcast shape).
//   pow(a, p)   out = a^p                  da = dout p a^(p-1)          (0 where p = 0, so 0^0 has no inf in it)
//   pow(a, b)   out = a^b                  da = sum_to(dout b a^(b-1))  (0 where b = 0)
//                                          db = sum_to(dout out ln a)   (0 where a = 0 and b >= 0, as torch)
//   sqrt        out = sqrt(a)              da = dout / (2 out)
//   sigmoid     out = 1 / (1 + e^-a)       da = dout out (1 - out)
//   abs         out = |a|                  da = dout sign(a)            (sign(0) = 0)
//   clone       out = a (a new buffer)     da = dout
//   rsqrt       out = 1 / sqrt(a)          da = -dout out^3 / 2
//   clamp       out = min(max(a, lo), hi)  da = dout where lo <= a <= hi
//   round(a, d) out = rint(a 10^d) / 10^d  da = 0                      (halves to even, as torch and NumPy;
//                                                                       d < 0: rint(a / 10^-d) 10^-d)
//   floor, ceil, trunc, sign               da = 0                      (steps: torch's gradient is 0 everywhere)
//   frac        out = a - trunc(a)         da = dout
//   sin         out = sin a                da = dout cos a
//   cos         out = cos a                da = -dout sin a
//   tan         out = tan a                da = dout (1 + out^2)
//   log1p       out = ln(1 + a)            da = dout / (1 + a)         (exact for small a, where log(1 + a) is not)
//   expm1       out = e^a - 1              da = dout (out + 1)
//   erf         out = erf a                da = dout 2/sqrt(pi) e^(-a^2)
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xoperation.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

// a [...] -> [...]
template <class S>
Var<S> pow(const Var<S>& a, S exponent) {
  check_input(a, "pow", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  if (exponent == S(2))
    xt::noalias(out) = a.value() * a.value();
  else
    xt::noalias(out) = xt::pow(a.value(), exponent);
  return make_result<S>(
      std::move(out), {a},
      [exponent](Node<S>& self) {
        Node<S>& x = *self.inputs[0];
        if (exponent == S(0))
          accumulate_grad(x, Array<S>(xt::zeros<S>(x.value.shape())));
        else
          accumulate_grad(x, self.grad * exponent * xt::pow(x.value, exponent - S(1)));
      },
      "pow");
}

// a [...], b [...] (broadcast) -> the broadcast shape
template <class S>
Var<S> pow(const Var<S>& a, const Var<S>& b) {
  check_input(a, "pow", "a");
  check_input(b, "pow", "b");
  Array<S> out = Array<S>::from_shape(broadcast_shapes(a.shape(), b.shape(), "pow"));
  xt::noalias(out) = xt::pow(a.value(), b.value());
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        Node<S>& x = *self.inputs[0];
        Node<S>& y = *self.inputs[1];
        if (x.requires_grad) {
          Array<S> g =
              xt::where(xt::equal(y.value, S(0)), S(0), self.grad * y.value * xt::pow(x.value, y.value - S(1)));
          accumulate_grad(x, sum_to_shape(g, to_shape(x.value.shape())));
        }
        if (y.requires_grad) {
          Array<S> g =
              xt::where(xt::equal(x.value, S(0)) && y.value >= S(0), S(0), self.grad * self.value * xt::log(x.value));
          accumulate_grad(y, sum_to_shape(g, to_shape(y.value.shape())));
        }
      },
      "pow");
}

template <class S>
Var<S> sqrt(const Var<S>& a) {
  check_input(a, "sqrt", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = xt::sqrt(a.value());
  return make_result<S>(
      std::move(out), {a}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad / (S(2) * self.value)); },
      "sqrt");
}

// 1 / (1 + e^-a) is exact at both ends: e^-a overflows to inf (out 0) or underflows to 0 (out 1), never a NaN.
template <class S>
Var<S> sigmoid(const Var<S>& a) {
  check_input(a, "sigmoid", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = S(1) / (S(1) + xt::exp(-a.value()));
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad * self.value * (S(1) - self.value)); }, "sigmoid");
}

template <class S>
Var<S> abs(const Var<S>& a) {
  check_input(a, "abs", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = xt::abs(a.value());
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad * xt::sign(self.inputs[0]->value)); }, "abs");
}

template <class S>
Var<S> clone(const Var<S>& a) {
  check_input(a, "clone", "a");
  Array<S> out = a.value();
  return make_result<S>(
      std::move(out), {a}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad); }, "clone");
}

template <class S>
Var<S> rsqrt(const Var<S>& a) {
  check_input(a, "rsqrt", "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = S(1) / xt::sqrt(a.value());
  return make_result<S>(
      std::move(out), {a},
      [](Node<S>& self) {
        accumulate_grad(*self.inputs[0], S(-0.5) * self.grad * self.value * self.value * self.value);
      },
      "rsqrt");
}

template <class S>
Var<S> clamp(const Var<S>& a, std::optional<S> lo, std::optional<S> hi) {
  check_input(a, "clamp", "a");
  if (!lo && !hi) throw std::invalid_argument("clamp: give min, max or both");
  const S low = lo.value_or(-std::numeric_limits<S>::infinity());
  const S high = hi.value_or(std::numeric_limits<S>::infinity());
  Array<S> out = a.value();
  for (S& v : out) {
    if (v < low) v = low;
    if (v > high) v = high;
  }
  return make_result<S>(
      std::move(out), {a},
      [low, high](Node<S>& self) {
        const auto& x = self.inputs[0]->value;
        accumulate_grad(*self.inputs[0], xt::where(x >= low && x <= high, self.grad, S(0)));
      },
      "clamp");
}

namespace {

// A step of a (round, floor, ...): out = step(a), a gradient of zeros for a (torch's rule, where it is defined).
template <class S, class F>
Var<S> step_op(const Var<S>& a, F step, const char* op) {
  check_input(a, op, "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  std::transform(a.value().begin(), a.value().end(), out.begin(), step);
  return make_result<S>(
      std::move(out), {a}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], xt::zeros_like(self.grad)); }, op);
}

}  // namespace

template <class S>
Var<S> round(const Var<S>& a, int decimals) {
  if (decimals == 0)
    return step_op(
        a, [](S v) { return std::nearbyint(v); }, "round");
  const S scale = static_cast<S>(std::pow(10.0, std::abs(decimals)));  // a whole number: exact up to 10^22
  if (decimals < 0)
    return step_op(
        a, [scale](S v) { return std::nearbyint(v / scale) * scale; }, "round");
  return step_op(
      a, [scale](S v) { return std::nearbyint(v * scale) / scale; }, "round");
}

template <class S>
Var<S> floor(const Var<S>& a) {
  return step_op(
      a, [](S v) { return std::floor(v); }, "floor");
}

template <class S>
Var<S> ceil(const Var<S>& a) {
  return step_op(
      a, [](S v) { return std::ceil(v); }, "ceil");
}

template <class S>
Var<S> trunc(const Var<S>& a) {
  return step_op(
      a, [](S v) { return std::trunc(v); }, "trunc");
}

template <class S>
Var<S> sign(const Var<S>& a) {  // NaN stays NaN
  return step_op(
      a, [](S v) { return v > 0   ? S(1)
                          : v < 0 ? S(-1)
                                  : v; }, "sign");
}

namespace {

// out = f(a) elementwise; da = dout df(a, out).
template <class S, class F, class D>
Var<S> smooth_op(const Var<S>& a, F f, D df, const char* op) {
  check_input(a, op, "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  std::transform(a.value().begin(), a.value().end(), out.begin(), f);
  return make_result<S>(
      std::move(out), {a},
      [df](Node<S>& self) {
        const Array<S>& x = self.inputs[0]->value;
        Array<S> g = Array<S>::from_shape(x.shape());
        for (std::size_t i = 0; i < g.size(); ++i) g.flat(i) = self.grad.flat(i) * df(x.flat(i), self.value.flat(i));
        accumulate_grad(*self.inputs[0], std::move(g));
      },
      op);
}

}  // namespace

template <class S>
Var<S> frac(const Var<S>& a) {
  return smooth_op(
      a, [](S v) { return v - std::trunc(v); }, [](S, S) { return S(1); }, "frac");
}

template <class S>
Var<S> sin(const Var<S>& a) {
  return smooth_op(
      a, [](S v) { return std::sin(v); }, [](S v, S) { return std::cos(v); }, "sin");
}

template <class S>
Var<S> cos(const Var<S>& a) {
  return smooth_op(
      a, [](S v) { return std::cos(v); }, [](S v, S) { return -std::sin(v); }, "cos");
}

template <class S>
Var<S> tan(const Var<S>& a) {
  return smooth_op(
      a, [](S v) { return std::tan(v); }, [](S, S out) { return S(1) + out * out; }, "tan");
}

template <class S>
Var<S> log1p(const Var<S>& a) {
  return smooth_op(
      a, [](S v) { return std::log1p(v); }, [](S v, S) { return S(1) / (S(1) + v); }, "log1p");
}

template <class S>
Var<S> expm1(const Var<S>& a) {
  return smooth_op(
      a, [](S v) { return std::expm1(v); }, [](S, S out) { return out + S(1); }, "expm1");
}

template <class S>
Var<S> erf(const Var<S>& a) {
  constexpr S two_over_sqrt_pi = S(1.1283791670955125738961589031215452);
  return smooth_op(
      a, [](S v) { return std::erf(v); }, [](S v, S) { return two_over_sqrt_pi * std::exp(-v * v); }, "erf");
}

#define TF_INSTANTIATE(S)                               \
  template Var<S> sin<S>(const Var<S>&);                \
  template Var<S> cos<S>(const Var<S>&);                \
  template Var<S> tan<S>(const Var<S>&);                \
  template Var<S> log1p<S>(const Var<S>&);              \
  template Var<S> expm1<S>(const Var<S>&);              \
  template Var<S> erf<S>(const Var<S>&);                \
  template Var<S> round<S>(const Var<S>&, int);         \
  template Var<S> floor<S>(const Var<S>&);              \
  template Var<S> ceil<S>(const Var<S>&);               \
  template Var<S> trunc<S>(const Var<S>&);              \
  template Var<S> sign<S>(const Var<S>&);               \
  template Var<S> frac<S>(const Var<S>&);               \
  template Var<S> pow<S>(const Var<S>&, S);             \
  template Var<S> pow<S>(const Var<S>&, const Var<S>&); \
  template Var<S> sqrt<S>(const Var<S>&);               \
  template Var<S> sigmoid<S>(const Var<S>&);            \
  template Var<S> abs<S>(const Var<S>&);                \
  template Var<S> clone<S>(const Var<S>&);              \
  template Var<S> rsqrt<S>(const Var<S>&);              \
  template Var<S> clamp<S>(const Var<S>&, std::optional<S>, std::optional<S>);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
