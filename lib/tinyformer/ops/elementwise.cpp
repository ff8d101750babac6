// add, sub, mul, div, remainder (%), floor_divide (//) with NumPy broadcasting; neg; scale by a constant, add a
// constant, a constant divided by a:
//   add_scalar   out = a + c     da = dout
//   scalar_div   out = c / a     da = -dout * c / a^2 = -dout * out / a
// Backward of a broadcast: the output gradient is summed over the axes the input was stretched along.
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xreducer.hpp>

#include "tinyformer/ops/kernels/arrays.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

template <class S>
Array<S> sum_to_shape(const Array<S>& g, const Shape& shape) {
  const Shape gs = to_shape(g.shape());
  if (gs == shape) return g;
  bool fits = shape.size() <= gs.size();  // `shape` must broadcast to g's shape
  for (std::size_t i = 0; fits && i < shape.size(); ++i) {
    const std::size_t d = shape[i], e = gs[gs.size() - shape.size() + i];
    fits = d == e || d == 1;
  }
  if (!fits)
    throw std::invalid_argument(fmt::format("sum_to_shape: shape {} does not broadcast to the gradient's shape {}",
                                            shape_str(shape), shape_str(gs)));
  // Axes to reduce: the leading ones g has in excess, and those where `shape` has 1 but g does not.
  const std::size_t lead = gs.size() - shape.size();
  std::vector<std::size_t> axes;
  for (std::size_t i = 0; i < gs.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && gs[i] != 1)) axes.push_back(i);
  Array<S> reduced = xt::sum(g, axes, xt::evaluation_strategy::immediate);
  reduced.reshape(shape);
  return reduced;
}

namespace {
// Output buffer with the broadcast shape of a and b.
template <class S>
Array<S> broadcast_buffer(const Var<S>& a, const Var<S>& b, const char* op) {
  return Array<S>::from_shape(broadcast_shapes(a.shape(), b.shape(), op));
}
// The residual connection's case: a and b of one shape. Parallel over elements; in the backward both
// gradients are dout itself, so the first input takes the buffer over instead of copying it.
template <class S>
Var<S> add_same_shape(const Var<S>& a, const Var<S>& b) {
  Array<S> out = Array<S>::from_shape(a.value().shape());
  kernels::add_arrays<S>(out.size(), a.value().data(), b.value().data(), out.data());
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        auto& x = *self.inputs[0];
        auto& y = *self.inputs[1];
        if (y.requires_grad) accumulate_grad(y, self.grad);
        if (!x.requires_grad) return;
        if (!x.has_grad && !self.retain_grad && &x != &y) {
          x.grad = std::move(self.grad);  // self's gradient is not read again after its backward
          x.has_grad = true;
          self.grad = Array<S>();
        } else {
          accumulate_grad(x, self.grad);
        }
      },
      "add");
}

}  // namespace

// out = a + b; da = sum_to(dout), db = sum_to(dout)
template <class S>
Var<S> add(const Var<S>& a, const Var<S>& b) {
  check_input(a, "add", "a");
  check_input(b, "add", "b");
  if (a.shape() == b.shape()) return add_same_shape(a, b);
  Array<S> out = broadcast_buffer(a, b, "add");
  xt::noalias(out) = a.value() + b.value();
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        auto& x = *self.inputs[0];
        auto& y = *self.inputs[1];
        if (x.requires_grad) accumulate_grad(x, sum_to_shape(self.grad, to_shape(x.value.shape())));
        if (y.requires_grad) accumulate_grad(y, sum_to_shape(self.grad, to_shape(y.value.shape())));
      },
      "add");
}

// out = a - b; da = sum_to(dout), db = -sum_to(dout)
template <class S>
Var<S> sub(const Var<S>& a, const Var<S>& b) {
  check_input(a, "sub", "a");
  check_input(b, "sub", "b");
  Array<S> out = broadcast_buffer(a, b, "sub");
  xt::noalias(out) = a.value() - b.value();
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        auto& x = *self.inputs[0];
        auto& y = *self.inputs[1];
        if (x.requires_grad) accumulate_grad(x, sum_to_shape(self.grad, to_shape(x.value.shape())));
        if (y.requires_grad) accumulate_grad(y, Array<S>(-sum_to_shape(self.grad, to_shape(y.value.shape()))));
      },
      "sub");
}

// out = a * b; da = sum_to(dout * b), db = sum_to(dout * a)
template <class S>
Var<S> mul(const Var<S>& a, const Var<S>& b) {
  check_input(a, "mul", "a");
  check_input(b, "mul", "b");
  Array<S> out = broadcast_buffer(a, b, "mul");
  xt::noalias(out) = a.value() * b.value();
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        auto& x = *self.inputs[0];
        auto& y = *self.inputs[1];
        if (x.requires_grad) accumulate_grad(x, sum_to_shape(Array<S>(self.grad * y.value), to_shape(x.value.shape())));
        if (y.requires_grad) accumulate_grad(y, sum_to_shape(Array<S>(self.grad * x.value), to_shape(y.value.shape())));
      },
      "mul");
}

// out = a / b; da = sum_to(dout / b), db = sum_to(-dout * a / b^2)
template <class S>
Var<S> div(const Var<S>& a, const Var<S>& b) {
  check_input(a, "div", "a");
  check_input(b, "div", "b");
  Array<S> out = broadcast_buffer(a, b, "div");
  xt::noalias(out) = a.value() / b.value();
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        auto& x = *self.inputs[0];
        auto& y = *self.inputs[1];
        if (x.requires_grad) accumulate_grad(x, sum_to_shape(Array<S>(self.grad / y.value), to_shape(x.value.shape())));
        if (y.requires_grad)
          accumulate_grad(
              y, sum_to_shape(Array<S>(-self.grad * x.value / (y.value * y.value)), to_shape(y.value.shape())));
      },
      "div");
}

// torch.remainder (Python's %): out = a - floor(a / b) b, the sign of b's; da = dout, db = -dout floor(a / b)
template <class S>
Var<S> remainder(const Var<S>& a, const Var<S>& b) {
  check_input(a, "remainder", "a");
  check_input(b, "remainder", "b");
  Array<S> out = broadcast_buffer(a, b, "remainder");
  xt::noalias(out) = a.value() - xt::floor(a.value() / b.value()) * b.value();
  return make_result<S>(
      std::move(out), {a, b},
      [](Node<S>& self) {
        auto& x = *self.inputs[0];
        auto& y = *self.inputs[1];
        if (x.requires_grad) accumulate_grad(x, sum_to_shape(self.grad, to_shape(x.value.shape())));
        if (y.requires_grad)
          accumulate_grad(y,
                          sum_to_shape(Array<S>(-self.grad * xt::floor(x.value / y.value)), to_shape(y.value.shape())));
      },
      "remainder");
}

// torch.floor_divide (Python's //): floor(a / b), a constant (no gradient flows through it, as through a comparison)
template <class S>
Var<S> floor_divide(const Var<S>& a, const Var<S>& b) {
  check_input(a, "floor_divide", "a");
  check_input(b, "floor_divide", "b");
  Array<S> out = broadcast_buffer(a, b, "floor_divide");
  xt::noalias(out) = xt::floor(a.value() / b.value());
  return make_result<S>(std::move(out), {}, nullptr, "floor_divide");
}

// out = -a; da = -dout
template <class S>
Var<S> neg(const Var<S>& a) {
  check_input(a, "neg", "a");
  Array<S> out = -a.value();
  return make_result<S>(
      std::move(out), {a}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], -self.grad); }, "neg");
}

// out = a * factor; da = dout * factor
template <class S>
Var<S> scale(const Var<S>& a, S factor) {
  check_input(a, "scale", "a");
  Array<S> out = a.value() * factor;
  return make_result<S>(
      std::move(out), {a}, [factor](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad * factor); }, "scale");
}

// out = a + c; da = dout
template <class S>
Var<S> add_scalar(const Var<S>& a, S c) {
  check_input(a, "add_scalar", "a");
  Array<S> out = a.value() + c;
  return make_result<S>(
      std::move(out), {a}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], self.grad); }, "add_scalar");
}

// out = c / a; da = -dout * c / a^2
template <class S>
Var<S> scalar_div(S c, const Var<S>& a) {
  check_input(a, "scalar_div", "a");
  Array<S> out = c / a.value();
  return make_result<S>(
      std::move(out), {a},
      [c](Node<S>& self) {
        const auto& x = self.inputs[0]->value;
        accumulate_grad(*self.inputs[0], -self.grad * c / (x * x));
      },
      "scalar_div");
}

#define TF_INSTANTIATE(S)                                           \
  template Array<S> sum_to_shape<S>(const Array<S>&, const Shape&); \
  template Var<S> add<S>(const Var<S>&, const Var<S>&);             \
  template Var<S> sub<S>(const Var<S>&, const Var<S>&);             \
  template Var<S> mul<S>(const Var<S>&, const Var<S>&);             \
  template Var<S> div<S>(const Var<S>&, const Var<S>&);             \
  template Var<S> remainder<S>(const Var<S>&, const Var<S>&);       \
  template Var<S> floor_divide<S>(const Var<S>&, const Var<S>&);    \
  template Var<S> neg<S>(const Var<S>&);                            \
  template Var<S> scale<S>(const Var<S>&, S);                       \
  template Var<S> add_scalar<S>(const Var<S>&, S);                  \
  template Var<S> scalar_div<S>(S, const Var<S>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
