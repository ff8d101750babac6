#include "tinyformer/infer/sample.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::infer {

std::vector<double> next_token_probs(const Array<float>& last_logits, double temperature, std::size_t top_k) {
  if (!(temperature > 0))
    throw std::invalid_argument(fmt::format("temperature must be > 0, got {} (use --top-k 1 for greedy)", temperature));
  const std::size_t V = last_logits.size();
  std::vector<double> z(V);
  for (std::size_t i = 0; i < V; ++i) z[i] = last_logits.data()[i] / temperature;
  if (top_k > 0 && top_k < V) {  // keep the k largest logits (ties at the threshold are kept)
    std::vector<double> sorted = z;
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
    const double threshold = sorted[top_k - 1];
    for (auto& v : z)
      if (v < threshold) v = -INFINITY;
  }
  const double mx = *std::max_element(z.begin(), z.end());
  double total = 0;
  for (auto& v : z) total += (v = std::exp(v - mx));
  for (auto& v : z) v /= total;
  return z;
}

std::vector<Index> generate(nn::GPT<float>& model, const std::vector<Index>& prompt, const SampleOptions& options,
                            Rng& rng) {
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty; give at least one token");
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  std::vector<Index> ids = prompt;
  const std::size_t block = model.context();
  for (std::size_t step = 0; step < options.new_tokens; ++step) {
    const std::size_t start = ids.size() > block ? ids.size() - block : 0;  // crop to the context
    const std::size_t T = ids.size() - start;
    IndexArray x = IndexArray::from_shape({1, T});
    std::copy(ids.begin() + static_cast<long>(start), ids.end(), x.data());
    const Array<float> logits = model.forward(x).value();  // [1,T,V]
    const std::size_t V = logits.shape()[2];
    Array<float> last = Array<float>::from_shape({V});
    std::copy(logits.data() + (T - 1) * V, logits.data() + T * V, last.data());
    const std::vector<double> p = next_token_probs(last, options.temperature, options.top_k);
    // inverse-CDF draw
    double u = rng.uniform(), acc = 0;
    std::size_t chosen = V - 1;
    for (std::size_t i = 0; i < V; ++i) {
      acc += p[i];
      if (u < acc) {
        chosen = i;
        break;
      }
    }
    while (p[chosen] == 0 && chosen > 0) --chosen;  // rounding at the tail never picks a masked token
    ids.push_back(static_cast<Index>(chosen));
  }
  model.train(was_training);
  return ids;
}

}  // namespace tf::infer
