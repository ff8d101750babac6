#include "tinyformer/autograd/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "tinyformer/tensor/random.hpp"

namespace tf {

namespace {

// Fixed random projection weights in [0.5, 1.5) with random sign: no output element is ignored.
Array<double> projection_weights(const Shape& shape, std::uint64_t seed) {
  Rng rng(seed);
  Array<double> w = Array<double>::from_shape(shape);
  for (auto& v : w) v = (rng.uniform() < 0.5 ? -1.0 : 1.0) * rng.uniform(0.5, 1.5);
  return w;
}

double projected(const Array<double>& out, const Array<double>& w) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += out.data()[i] * w.data()[i];
  return s;
}

std::vector<std::size_t> chosen_elements(std::size_t n, std::size_t max_checks, Rng& rng) {
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  if (max_checks == 0 || max_checks >= n) return idx;
  for (std::size_t i = 0; i < max_checks; ++i) std::swap(idx[i], idx[i + rng.below(n - i)]);  // partial shuffle
  idx.resize(max_checks);
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace

std::string GradcheckResult::report() const {
  std::string text;
  for (const auto& w : inputs) {
    text += fmt::format("{:<6} {:<40} checked {:>6}  failed {:>6}  worst [{}]: analytic {:.10g}  numeric {:.10g}  "
                        "abs err {:.3g}  rel err {:.3g}\n",
                        w.failed ? "FAIL" : "ok", w.name, w.checked, w.failed, w.index, w.analytic, w.numeric,
                        w.abs_err, w.rel_err);
  }
  return text;
}

GradcheckResult gradcheck_params(const std::function<Var<double>()>& loss,
                                 const std::vector<std::pair<std::string, Var<double>>>& params,
                                 const GradcheckOptions& options) {
  // Analytic gradients.
  for (auto [name, p] : params) {
    p.zero_grad();
    p.set_requires_grad(true);
  }
  Var<double> out = loss();
  const Array<double> w = projection_weights(out.shape(), options.seed);
  out.backward(w);

  GradcheckResult result;
  Rng pick(options.seed + 1);
  NoGradGuard no_grad;
  for (auto [name, p] : params) {
    GradcheckWorst worst;
    worst.name = name;
    const std::size_t n = p.numel();
    // A parameter the loss does not depend on has no gradient: its analytic derivative is zero.
    const Array<double> analytic = p.has_grad() ? p.grad() : Array<double>(xt::zeros<double>(p.shape()));
    double* x = p.mutable_value().data();
    for (std::size_t i : chosen_elements(n, options.max_checks_per_input, pick)) {
      const double saved = x[i];
      x[i] = saved + options.eps;
      const double up = projected(loss().value(), w);
      x[i] = saved - options.eps;
      const double down = projected(loss().value(), w);
      x[i] = saved;
      const double numeric = (up - down) / (2 * options.eps);
      const double a = analytic.data()[i];
      const double abs_err = std::abs(a - numeric);
      const double allowed = options.atol + options.rtol * std::abs(numeric);
      const double excess = abs_err / allowed;
      ++worst.checked;
      if (!(excess <= 1.0)) ++worst.failed;  // NaN counts as a failure
      if (worst.checked == 1 || excess > worst.excess || std::isnan(excess)) {
        worst.index = i;
        worst.analytic = a;
        worst.numeric = numeric;
        worst.abs_err = abs_err;
        worst.rel_err = abs_err / std::max(std::abs(numeric), options.atol);
        worst.excess = std::isnan(excess) ? INFINITY : excess;
      }
    }
    result.ok = result.ok && worst.failed == 0;
    result.inputs.push_back(worst);
  }
  return result;
}

GradcheckResult gradcheck(const std::function<Var<double>(const std::vector<Var<double>>&)>& f,
                          const std::vector<Array<double>>& inputs, const GradcheckOptions& options,
                          std::vector<std::string> names) {
  std::vector<std::pair<std::string, Var<double>>> params;
  std::vector<Var<double>> vars;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Var<double> v(inputs[i], true);
    vars.push_back(v);
    params.emplace_back(i < names.size() ? names[i] : fmt::format("x{}", i), v);
  }
  return gradcheck_params([&] { return f(vars); }, params, options);
}

}  // namespace tf
