#pragma once
// exp over an xtensor expression that may hold -inf (masked attention scores, masked logits), +inf or NaN,
// with the results exp gives: the argument is clamped to [-1000, 1000], where exp is already exactly 0 and
// inf in float and double, and NaN is put back afterwards. Why: xsimd's double-precision exp converts its
// argument to a 64-bit integer with a scalar cast on AVX2 (there is no packed instruction for it), and that
// cast is undefined behaviour for infinities, NaN and huge values (UndefinedBehaviorSanitizer stops on it).
#include <type_traits>

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

namespace tf::kernels {

template <class E>
auto exp_with_floor(const E& x) {
  using S = typename std::decay_t<E>::value_type;
  // The scalars are temporaries, so the expression holds them by value (a named local would be held by
  // reference and be gone when the caller evaluates it). NaN fails both comparisons, so it is clamped to
  // -1000, and the outer where returns it unchanged.
  return xt::where(xt::isnan(x), x, xt::exp(xt::where(x >= S(-1000), xt::where(x <= S(1000), x, S(1000)), S(-1000))));
}

}  // namespace tf::kernels
