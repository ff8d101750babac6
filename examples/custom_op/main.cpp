// custom_op: a differentiable op written outside the library, its backward, and the float64 gradient check that
// proves it; then the same op with a deliberately wrong backward, and what the check reports.
//
// Swish with a learnable slope per channel (Ramachandran et al. 2017), with s = sigmoid(beta x):
//   y     = x s                                      x [..., C], beta [C] broadcast over the leading axes
//   dx    = dy (s + beta x s (1 - s))                product rule, sigmoid' = s (1 - s)
//   dbeta = sum over the leading axes of dy x^2 s (1 - s)
// With beta = 1 it is SiLU, so the forward is also compared with the library's tf::silu.
// Exit status 0 only when the right backward passes the check and the wrong one is caught.
#include <cstdio>
#include <stdexcept>
#include <vector>

#include <xtensor/xmath.hpp>

#include <tinyformer/autograd/gradcheck.hpp>
#include <tinyformer/ops/ops.hpp>
#include <tinyformer/tensor/random.hpp>

// Written once for float (training) and double (gradient checks), like the library's own ops.
// `forget_dsdx` gives the wrong backward: it treats s as a constant, a typical slip (dx = dy s).
template <class S>
tf::Var<S> swish(const tf::Var<S>& x, const tf::Var<S>& beta, bool forget_dsdx = false) {
  const tf::Shape xs = x.shape();
  if (xs.empty() || beta.shape() != tf::Shape{xs.back()})
    throw std::invalid_argument("swish: x [..., C] needs beta [C]; got x " + tf::shape_str(xs) + " and beta " +
                                tf::shape_str(beta.shape()));
  tf::Array<S> s = S(1) / (S(1) + xt::exp(-(beta.value() * x.value())));
  tf::Array<S> y = x.value() * s;
  // The backward closure keeps s; self.grad is dy, self.inputs are {x, beta}. accumulate_grad adds (+=) into each
  // input that requires a gradient and skips the others.
  return tf::make_result<S>(
      std::move(y), {x, beta},
      [s = std::move(s), forget_dsdx](tf::Node<S>& self) {
        const tf::Array<S>& xv = self.inputs[0]->value;
        const tf::Array<S>& bv = self.inputs[1]->value;
        const tf::Array<S> ds = s * (S(1) - s);
        if (forget_dsdx)
          tf::accumulate_grad(*self.inputs[0], self.grad * s);
        else
          tf::accumulate_grad(*self.inputs[0], self.grad * (s + bv * xv * ds));
        // beta was broadcast over the leading axes, so its gradient is summed back to [C].
        const tf::Array<S> dbeta_full = self.grad * xv * xv * ds;
        tf::accumulate_grad(*self.inputs[1], tf::sum_to_shape(dbeta_full, tf::to_shape(bv.shape())));
      },
      "swish");
}

int main() {
  using tf::Array;
  using Inputs = std::vector<tf::Var<double>>;
  tf::Rng rng(7);
  Array<double> x = Array<double>::from_shape({4, 6});  // [B, C]
  for (double& v : x) v = rng.uniform(-3.0, 3.0);
  Array<double> beta = Array<double>::from_shape({6});
  for (double& v : beta) v = rng.uniform(0.5, 2.0);

  // 1. The forward at beta = 1 is the library's SiLU.
  const Array<double> ones = xt::ones<double>({6});
  const Array<double> ours = swish(tf::Var<double>(x), tf::Var<double>(ones)).value();
  const Array<double> silu = tf::silu(tf::Var<double>(x)).value();
  const double forward_err = xt::amax(xt::abs(ours - silu), xt::evaluation_strategy::immediate)();
  std::printf("forward: max |swish(x, beta = 1) - silu(x)| = %.3g\n", forward_err);

  // 2. The gradient check, in float64: every element of x and of beta, central differences against backward().
  const tf::GradcheckResult right =
      tf::gradcheck([](const Inputs& in) { return swish(in[0], in[1]); }, {x, beta}, {}, {"x", "beta"});
  std::printf("\ngradcheck of swish:\n%s", right.report().c_str());

  // 3. The wrong backward: the check fails and names the input and its worst element.
  const tf::GradcheckResult wrong = tf::gradcheck(
      [](const Inputs& in) { return swish(in[0], in[1], /*forget_dsdx=*/true); }, {x, beta}, {}, {"x", "beta"});
  std::printf("\ngradcheck of swish with dx = dy s (s treated as a constant):\n%s", wrong.report().c_str());

  const bool caught = !wrong.ok && wrong.inputs.at(0).failed > 0 && wrong.inputs.at(1).failed == 0;
  const bool ok = forward_err < 1e-12 && right.ok && caught;
  std::printf("\n%s\n", ok ? "custom_op: the right backward passes, the wrong one is caught (only x fails)"
                           : "custom_op: FAILED");
  return ok ? 0 : 1;
}
