// Comparisons, masks and selection, with NumPy broadcasting.
//   eq ne lt le gt ge   out = 1 where a (relation) b, else 0     a constant: no gradient flows through a comparison
//   isnan isinf isfinite, logical_not / and / or / xor           constants as well (nonzero entries are true)
//   isclose(a, b)       out = 1 where |a - b| <= atol + rtol |b|  a constant
//   where(c, a, b)      out = a where c != 0, else b             da = sum_to(dout where c != 0)
//                                                                db = sum_to(dout where c == 0)
//   masked_fill(a, m, v) out = v where m != 0, else a            da = dout where m == 0   (m broadcasts to a's shape)
//   tril(a, k), triu(a, k) [..., R, C]: out = a where column - row <= k (tril) or >= k (triu), else 0
//                                                                da = dout where kept
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xoperation.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

// A constant 0/1 result of `relation` over a and b broadcast.
template <class S, class F>
Var<S> relation(const Var<S>& a, const Var<S>& b, const char* op, F f) {
  check_input(a, op, "a");
  check_input(b, op, "b");
  Array<S> out = Array<S>::from_shape(broadcast_shapes(a.shape(), b.shape(), op));
  xt::noalias(out) = xt::cast<S>(f(a.value(), b.value()));
  return make_result<S>(std::move(out), {}, nullptr, op);
}

// A constant 0/1 result of `test` on each element of a.
template <class S, class F>
Var<S> elementwise_test(const Var<S>& a, const char* op, F f) {
  check_input(a, op, "a");
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = xt::cast<S>(f(a.value()));
  return make_result<S>(std::move(out), {}, nullptr, op);
}

}  // namespace

// clang-format off
template <class S> Var<S> isclose(const Var<S>& a, const Var<S>& b, double rtol, double atol, bool equal_nan) {
  if (!(rtol >= 0) || !(atol >= 0))
    throw std::invalid_argument(fmt::format("isclose: rtol and atol must be 0 or more, got {} and {}", rtol, atol));
  // One expression of temporaries (held by value) over x and y (a's and b's arrays): a named part would be held by
  // reference and dangle once the lambda returns, before relation() evaluates it (AddressSanitizer found that).
  return relation(a, b, "isclose", [&](const auto& x, const auto& y) {
    // within the tolerance when both are finite; an infinity only equals itself
    return (xt::isfinite(x) && xt::isfinite(y) && xt::abs(x - y) <= S(atol) + S(rtol) * xt::abs(y)) ||
           xt::equal(x, y) || (equal_nan && xt::isnan(x) && xt::isnan(y));
  });
}
template <class S> Var<S> eq(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "eq", [](const auto& x, const auto& y) { return xt::equal(x, y); });
}
template <class S> Var<S> ne(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "ne", [](const auto& x, const auto& y) { return xt::not_equal(x, y); });
}
template <class S> Var<S> lt(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "lt", [](const auto& x, const auto& y) { return x < y; });
}
template <class S> Var<S> le(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "le", [](const auto& x, const auto& y) { return x <= y; });
}
template <class S> Var<S> gt(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "gt", [](const auto& x, const auto& y) { return x > y; });
}
template <class S> Var<S> ge(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "ge", [](const auto& x, const auto& y) { return x >= y; });
}
template <class S> Var<S> logical_and(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "logical_and", [](const auto& x, const auto& y) { return xt::not_equal(x, S(0)) && xt::not_equal(y, S(0)); });
}
template <class S> Var<S> logical_or(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "logical_or", [](const auto& x, const auto& y) { return xt::not_equal(x, S(0)) || xt::not_equal(y, S(0)); });
}
template <class S> Var<S> logical_xor(const Var<S>& a, const Var<S>& b) {
  return relation(a, b, "logical_xor", [](const auto& x, const auto& y) { return xt::not_equal(xt::not_equal(x, S(0)), xt::not_equal(y, S(0))); });
}
template <class S> Var<S> logical_not(const Var<S>& a) {
  return elementwise_test(a, "logical_not", [](const auto& x) { return xt::equal(x, S(0)); });
}
template <class S> Var<S> isnan(const Var<S>& a) {
  return elementwise_test(a, "isnan", [](const auto& x) { return xt::isnan(x); });
}
template <class S> Var<S> isinf(const Var<S>& a) {
  return elementwise_test(a, "isinf", [](const auto& x) { return xt::isinf(x); });
}
template <class S> Var<S> isfinite(const Var<S>& a) {
  return elementwise_test(a, "isfinite", [](const auto& x) { return xt::isfinite(x); });
}
// clang-format on

// cond, a, b [...] (broadcast together) -> the broadcast shape
template <class S>
Var<S> where(const Var<S>& cond, const Var<S>& a, const Var<S>& b) {
  check_input(cond, "where", "cond");
  check_input(a, "where", "a");
  check_input(b, "where", "b");
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Array<S> out = Array<S>::from_shape(shape);
  xt::noalias(out) = xt::where(xt::not_equal(cond.value(), S(0)), a.value(), b.value());
  Array<S> chosen = cond.value();  // kept for the backward (cond takes no gradient, so its node may be dropped)
  return make_result<S>(
      std::move(out), {a, b},
      [chosen = std::move(chosen)](Node<S>& self) {
        Node<S>& x = *self.inputs[0];
        Node<S>& y = *self.inputs[1];
        const auto picked = xt::not_equal(chosen, S(0));
        if (x.requires_grad)
          accumulate_grad(x, sum_to_shape(Array<S>(xt::where(picked, self.grad, S(0))), to_shape(x.value.shape())));
        if (y.requires_grad)
          accumulate_grad(y, sum_to_shape(Array<S>(xt::where(picked, S(0), self.grad)), to_shape(y.value.shape())));
      },
      "where");
}

// a [...], mask broadcasting to a's shape -> a's shape
template <class S>
Var<S> masked_fill(const Var<S>& a, const Var<S>& mask, S value) {
  check_input(a, "masked_fill", "a");
  check_input(mask, "masked_fill", "mask");
  if (broadcast_shapes(a.shape(), mask.shape(), "masked_fill") != a.shape())
    throw std::invalid_argument(fmt::format("masked_fill: the mask of shape {} does not broadcast to the shape {} of "
                                            "the tensor it fills (only the mask is stretched)",
                                            shape_str(mask.shape()), shape_str(a.shape())));
  Array<S> out = Array<S>::from_shape(a.value().shape());
  xt::noalias(out) = xt::where(xt::not_equal(mask.value(), S(0)), value, a.value());
  Array<S> filled = mask.value();
  return make_result<S>(
      std::move(out), {a},
      [filled = std::move(filled)](Node<S>& self) {
        accumulate_grad(*self.inputs[0], xt::where(xt::not_equal(filled, S(0)), S(0), self.grad));
      },
      "masked_fill");
}

namespace {

// Zeroes the entries of x [..., R, C] that the triangle leaves out: those with column - row above `diagonal` (lower),
// or below it (upper).
template <class S>
void zero_outside_triangle(Array<S>& x, long diagonal, bool lower) {
  const std::size_t n = x.dimension(), rows = x.shape()[n - 2], cols = x.shape()[n - 1];
  if (x.size() == 0) return;
  const std::size_t matrices = x.size() / (rows * cols);
  for (std::size_t m = 0; m < matrices; ++m)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) {
        const long offset = static_cast<long>(j) - static_cast<long>(i);
        if (lower ? offset > diagonal : offset < diagonal) x.data()[(m * rows + i) * cols + j] = S(0);
      }
}

// a [..., R, C] -> [..., R, C]
template <class S>
Var<S> triangle(const Var<S>& a, long diagonal, bool lower, const char* op) {
  check_input(a, op, "a");
  if (a.dim() < 2)
    throw std::invalid_argument(
        fmt::format("{}: a of shape {} has fewer than the 2 dims of a matrix", op, shape_str(a.shape())));
  Array<S> out = a.value();
  zero_outside_triangle(out, diagonal, lower);
  return make_result<S>(
      std::move(out), {a},
      [diagonal, lower](Node<S>& self) {
        Array<S> g = self.grad;
        zero_outside_triangle(g, diagonal, lower);
        accumulate_grad(*self.inputs[0], std::move(g));
      },
      op);
}

}  // namespace

template <class S>
Var<S> tril(const Var<S>& a, long diagonal) {
  return triangle(a, diagonal, true, "tril");
}

template <class S>
Var<S> triu(const Var<S>& a, long diagonal) {
  return triangle(a, diagonal, false, "triu");
}

#define TF_INSTANTIATE(S)                                                         \
  template Var<S> isclose<S>(const Var<S>&, const Var<S>&, double, double, bool); \
  template Var<S> eq<S>(const Var<S>&, const Var<S>&);                            \
  template Var<S> ne<S>(const Var<S>&, const Var<S>&);                            \
  template Var<S> lt<S>(const Var<S>&, const Var<S>&);                            \
  template Var<S> le<S>(const Var<S>&, const Var<S>&);                            \
  template Var<S> gt<S>(const Var<S>&, const Var<S>&);                            \
  template Var<S> ge<S>(const Var<S>&, const Var<S>&);                            \
  template Var<S> isnan<S>(const Var<S>&);                                        \
  template Var<S> isinf<S>(const Var<S>&);                                        \
  template Var<S> isfinite<S>(const Var<S>&);                                     \
  template Var<S> logical_not<S>(const Var<S>&);                                  \
  template Var<S> logical_and<S>(const Var<S>&, const Var<S>&);                   \
  template Var<S> logical_or<S>(const Var<S>&, const Var<S>&);                    \
  template Var<S> logical_xor<S>(const Var<S>&, const Var<S>&);                   \
  template Var<S> where<S>(const Var<S>&, const Var<S>&, const Var<S>&);          \
  template Var<S> masked_fill<S>(const Var<S>&, const Var<S>&, S);                \
  template Var<S> tril<S>(const Var<S>&, long);                                   \
  template Var<S> triu<S>(const Var<S>&, long);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
