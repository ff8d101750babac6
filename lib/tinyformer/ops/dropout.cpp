// Inverted dropout. In training, each element is kept with probability 1 - p and scaled by 1/(1-p), so the
// expected value is unchanged and evaluation needs no rescaling:
//   mask_i = (u_i >= p) / (1 - p),  u_i = rng.uniform(), one draw per element in row-major order
//   out = a * mask                  da = dout * mask   (the same mask)
// When !training or p == 0 the op is the identity and returns `a` itself (no copy, no rng draws).
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xnoalias.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

// a [...] -> [...] (same shape)
template <class S>
Var<S> dropout(const Var<S>& a, S p, bool training, Rng& rng) {
  check_input(a, "dropout", "a");
  if (!(p >= S(0) && p < S(1)))
    throw std::invalid_argument(
        fmt::format("dropout: p = {} is not a valid drop probability; it must be in [0, 1)", p));
  if (!training || p == S(0)) return a;

  const S keep_scale = S(1) / (S(1) - p);
  Array<S> mask = Array<S>::from_shape(a.value().shape());  // 0 or 1/(1-p)
  Array<S> out = Array<S>::from_shape(a.value().shape());
  const S* x = a.value().data();
  S* m = mask.data();
  S* o = out.data();
  const std::size_t n = mask.size();
  const double p_drop = static_cast<double>(p);
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = rng.uniform() >= p_drop ? keep_scale : S(0);
    o[i] = x[i] * m[i];
  }

  return make_result<S>(
      std::move(out), {a},
      [mask = std::move(mask)](Node<S>& self) {
        Array<S> dx = Array<S>::from_shape(self.grad.shape());
        xt::noalias(dx) = self.grad * mask;
        accumulate_grad(*self.inputs[0], std::move(dx));
      },
      "dropout");
}

template Var<float> dropout<float>(const Var<float>&, float, bool, Rng&);
template Var<double> dropout<double>(const Var<double>&, double, bool, Rng&);

}  // namespace tf
