#include "tinyformer/dist/gradients.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "tinyformer/dist/dist.hpp"

namespace tf::dist {

namespace {

std::vector<Var<float>> unique_params(const std::vector<Var<float>>& params) {
  std::vector<Var<float>> out;
  std::set<const void*> seen;
  for (const auto& p : params)
    if (seen.insert(&p.node()).second) out.push_back(p);
  return out;
}

void scale_grads(const std::vector<Var<float>>& params, float scale) {
  for (auto p : params)
    if (p.has_grad())
      for (float& g : p.mutable_grad()) g *= scale;
}

}  // namespace

double GradientAllReduce::operator()(const std::vector<Var<float>>& all, float scale) {
  const std::vector<Var<float>> params = unique_params(all);
  if (size() == 1) {
    if (scale != 1.0f) scale_grads(params, scale);
    return 0.0;
  }
  std::size_t n = 0;
  for (const auto& p : params) n += p.numel();
  flat_.resize(n);
  float* at = flat_.data();
  for (const auto& p : params) {
    if (p.has_grad())
      std::copy(p.grad().begin(), p.grad().end(), at);
    else
      std::fill(at, at + p.numel(), 0.0f);
    at += p.numel();
  }
  const auto t0 = std::chrono::steady_clock::now();
  allreduce_sum(flat_.data(), n);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  at = flat_.data();
  for (auto p : params) {
    if (p.has_grad())
      std::transform(at, at + p.numel(), p.mutable_grad().begin(), [scale](float g) { return g * scale; });
    at += p.numel();
  }
  return ms;
}

}  // namespace tf::dist
