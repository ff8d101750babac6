#pragma once
// Gradient check in float64: the analytic gradient from backward() against central finite differences
//   numeric = (L(x + eps) - L(x - eps)) / (2 eps)
// on every element of every input (or a seeded random subset of each large input). A non-scalar
// output is reduced to L = sum(out * W) with a fixed random W, so every output element is checked.
// An element passes when |analytic - numeric| <= atol + rtol * |numeric|.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/autograd/variable.hpp"

namespace tf {

struct GradcheckOptions {
  double eps = 1e-6;   // step: truncation error ~eps^2, rounding ~1e-16/eps, both far below the tolerances
  double rtol = 1e-5;  // relative tolerance on the numeric derivative
  double atol = 1e-8;  // absolute floor, for derivatives that are (close to) zero
  std::size_t max_checks_per_input = 0;  // 0 checks every element; otherwise this many, chosen by `seed`
  std::uint64_t seed = 20261122;
};

struct GradcheckWorst {
  std::string name;         // input or parameter name
  std::size_t checked = 0;  // elements compared
  std::size_t failed = 0;   // elements outside tolerance
  std::size_t index = 0;    // flat index of the worst element
  double analytic = 0, numeric = 0;
  double abs_err = 0, rel_err = 0;  // of the worst element; rel_err = abs_err / max(|numeric|, atol)
  double excess = 0;                // abs_err / (atol + rtol*|numeric|): > 1 fails
};

struct GradcheckResult {
  bool ok = true;
  std::vector<GradcheckWorst> inputs;
  std::string report() const;  // one line per input, worst element first on failure
};

// Checks the gradient of loss() with respect to each named leaf in `params` (their values are perturbed
// in place and restored). loss() may return any shape (see above).
GradcheckResult gradcheck_params(const std::function<Var<double>()>& loss,
                                 const std::vector<std::pair<std::string, Var<double>>>& params,
                                 const GradcheckOptions& options = {});

// Checks f at the given input values; inputs are named x0, x1, ... unless `names` are given.
GradcheckResult gradcheck(const std::function<Var<double>(const std::vector<Var<double>>&)>& f,
                          const std::vector<Array<double>>& inputs, const GradcheckOptions& options = {},
                          std::vector<std::string> names = {});

}  // namespace tf
