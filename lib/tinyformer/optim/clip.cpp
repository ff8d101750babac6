// Global gradient-norm clipping: torch.nn.utils.clip_grad_norm_ with the 2-norm.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/optim/clip.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf::optim {

namespace {

// The parameters with a gradient, each Var once (a tied weight listed twice counts once, as in torch). An undefined
// Var among them is refused.
template <class S>
std::vector<Var<S>> with_gradient(const std::vector<Var<S>>& params) {
  std::vector<Var<S>> out;
  std::unordered_set<const Node<S>*> seen;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Var<S>& p = params[i];
    if (!p.defined())
      throw std::invalid_argument(
          fmt::format("grad_norm / clip_grad_norm: params[{}] is an undefined Var (default-constructed)", i));
    if (p.has_grad() && seen.insert(&p.node()).second) out.push_back(p);
  }
  return out;
}

// sum_i x[i]^2 over [0, n) in float64, in an order fixed by n alone (the same bits at any thread count): blocks of
// kNormBlock values, each summed in kLanes interleaved lanes (lane k takes the i with i mod kLanes == k) that are then
// added in lane order, and the blocks' sums added in block order. One chain of additions over all of a parameter
// ran at about 4 cycles a value: GPT-2 124M's grad_norm and weight_norm took 0.2-0.3 s a step each, on one thread.
template <class S>
double block_sum_of_squares(const S* x, std::size_t n) {
  constexpr std::size_t kLanes = 8;
  double lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t k = 0; k < kLanes; ++k) {
      const double v = static_cast<double>(x[i + k]);
      lane[k] += v * v;
    }
  for (std::size_t k = 0; i + k < n; ++k) {
    const double v = static_cast<double>(x[i + k]);
    lane[k] += v * v;
  }
  double sum = 0.0;
  for (const double l : lane) sum += l;
  return sum;
}

template <class S>
double sum_of_squares(const S* x, std::size_t n) {
  constexpr std::size_t kNormBlock = std::size_t{1} << 14;
  const std::size_t blocks = (n + kNormBlock - 1) / kNormBlock;
  if (blocks <= 1) return block_sum_of_squares(x, n);
  std::vector<double> sums(blocks);
  parallel_for(blocks, std::max<std::size_t>(1, kMinPieceMacs / kNormBlock), [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b)
      sums[b] = block_sum_of_squares(x + b * kNormBlock, std::min(kNormBlock, n - b * kNormBlock));
  });
  double sum = 0.0;
  for (const double s : sums) sum += s;
  return sum;
}

// sqrt(sum_p sum_i g_p[i]^2) in float64, parameters in order, each as sum_of_squares adds it.
template <class S>
double norm_of(const std::vector<Var<S>>& with_grad) {
  double sum_sq = 0.0;
  for (const Var<S>& p : with_grad) sum_sq += sum_of_squares(p.grad().data(), p.grad().size());
  return std::sqrt(sum_sq);
}

template <class S>
std::vector<Var<S>> vars_of(const NamedVars<S>& params) {
  std::vector<Var<S>> vars;
  vars.reserve(params.size());
  for (const auto& named : params) vars.push_back(named.second);
  return vars;
}

}  // namespace

template <class S>
double grad_norm(const std::vector<Var<S>>& params) {
  return norm_of(with_gradient(params));
}

template <class S>
double grad_norm(const NamedVars<S>& params) {
  return grad_norm(vars_of(params));
}

template <class S>
double weight_norm(const NamedVars<S>& params) {
  double sum_sq = 0.0;
  std::unordered_set<const Node<S>*> seen;
  for (const auto& [name, p] : params) {
    if (!seen.insert(&p.node()).second) continue;
    sum_sq += sum_of_squares(p.value().data(), p.value().size());
  }
  return std::sqrt(sum_sq);
}

// total = sqrt(sum_p sum_i g_p[i]^2)  (float64, parameters in order, elements in order)
// coef  = max_norm / (total + 1e-6);  g_p *= coef  when coef < 1
template <class S>
double clip_grad_norm(const std::vector<Var<S>>& params, double max_norm) {
  if (!(std::isfinite(max_norm) && max_norm > 0))
    throw std::invalid_argument(fmt::format(
        "clip_grad_norm: max_norm must be a finite number > 0, got {} (to turn clipping off, do not call it)",
        max_norm));
  std::vector<Var<S>> with_grad = with_gradient(params);
  const double total = norm_of(with_grad);
  if (!std::isfinite(total)) return total;  // leave the gradients for the caller to inspect
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0) {
    const S c = static_cast<S>(coef);
    for (Var<S>& p : with_grad) {
      Array<S>& grad = p.mutable_grad();
      S* g = grad.data();
      const std::size_t n = grad.size();
      for (std::size_t i = 0; i < n; ++i) g[i] = g[i] * c;
    }
  }
  return total;
}

template <class S>
double clip_grad_norm(const NamedVars<S>& params, double max_norm) {
  return clip_grad_norm(vars_of(params), max_norm);
}

namespace {
template <class S>
bool all_finite(const Array<S>& a) {
  for (S v : a)
    if (!std::isfinite(v)) return false;
  return true;
}
}  // namespace

template <class S>
std::string first_nonfinite_grad(const NamedVars<S>& params) {
  for (const auto& [name, p] : params)
    if (p.has_grad() && !all_finite(p.grad())) return name;
  return "";
}

template <class S>
std::string first_nonfinite_value(const NamedVars<S>& params) {
  for (const auto& [name, p] : params)
    if (!all_finite(p.value())) return name;
  return "";
}

template std::string first_nonfinite_grad(const NamedVars<float>&);
template std::string first_nonfinite_grad(const NamedVars<double>&);
template std::string first_nonfinite_value(const NamedVars<float>&);
template std::string first_nonfinite_value(const NamedVars<double>&);
template double grad_norm(const std::vector<Var<float>>&);
template double grad_norm(const std::vector<Var<double>>&);
template double grad_norm(const NamedVars<float>&);
template double weight_norm(const NamedVars<float>&);
template double weight_norm(const NamedVars<double>&);
template double grad_norm(const NamedVars<double>&);
template double clip_grad_norm(const std::vector<Var<float>>&, double);
template double clip_grad_norm(const std::vector<Var<double>>&, double);
template double clip_grad_norm(const NamedVars<float>&, double);
template double clip_grad_norm(const NamedVars<double>&, double);

}  // namespace tf::optim
