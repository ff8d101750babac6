#include "tinyformer/infer/sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::infer {

std::vector<double> next_token_probs(const Array<float>& last_logits, double temperature, std::size_t top_k) {
  if (!(temperature > 0))
    throw std::invalid_argument(
        fmt::format("temperature must be > 0 here, got {} (0 means greedy: choose_token)", temperature));
  const std::size_t V = last_logits.size();
  std::vector<double> z(V);
  for (std::size_t i = 0; i < V; ++i) z[i] = last_logits.data()[i] / temperature;
  if (top_k > 0 && top_k < V) {  // keep the k largest logits (ties at the threshold are kept)
    std::vector<double> sorted = z;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(top_k - 1), sorted.end(),
                     std::greater<>());
    const double threshold = sorted[top_k - 1];
    for (auto& v : z)
      if (v < threshold) v = -std::numeric_limits<double>::infinity();
  }
  const double mx = *std::max_element(z.begin(), z.end());
  double total = 0;
  for (auto& v : z) total += (v = std::exp(v - mx));
  for (auto& v : z) v /= total;
  return z;
}

Index choose_token(const Array<float>& last_logits, const SampleOptions& options, Rng& rng) {
  if (!(options.temperature >= 0))
    throw std::invalid_argument(fmt::format("temperature must be >= 0, got {}", options.temperature));
  const float* z = last_logits.data();
  const std::size_t V = last_logits.size();
  if (options.temperature == 0) return static_cast<Index>(std::max_element(z, z + V) - z);
  const std::vector<double> p = next_token_probs(last_logits, options.temperature, options.top_k);
  double u = rng.uniform(), acc = 0;  // inverse-CDF draw
  std::size_t chosen = V - 1;
  for (std::size_t i = 0; i < V; ++i) {
    acc += p[i];
    if (u < acc) {
      chosen = i;
      break;
    }
  }
  while (p[chosen] == 0 && chosen > 0) --chosen;  // rounding at the tail never picks a masked token
  return static_cast<Index>(chosen);
}

namespace {

IndexArray row_of(const std::vector<Index>& ids, std::size_t begin) {
  IndexArray x = IndexArray::from_shape({1, ids.size() - begin});
  std::copy(ids.begin() + static_cast<long>(begin), ids.end(), x.data());
  return x;
}

// The logits of the last position of `ids` [V]: with the cache, only the tokens it has not seen are run (the cache
// is rebuilt from the last `context` tokens once the sequence is longer than the context).
Array<float> last_logits(nn::GPT<float>& model, const std::vector<Index>& ids, bool use_cache,
                         std::vector<nn::KVCache<float>>& cache) {
  const std::size_t context = model.context();
  const std::size_t start = ids.size() > context ? ids.size() - context : 0;  // crop to the context
  Array<float> logits;
  if (!use_cache) {
    logits = model.forward(row_of(ids, start)).value();
  } else {
    std::size_t seen = cache.front().length;
    if (start > 0 || seen > ids.size()) {  // past the context: the positions shift, so start over
      for (auto& layer : cache) layer.length = 0;
      seen = start;
    }
    logits = model.forward_cached(row_of(ids, seen), cache).value();
  }
  const std::size_t n = logits.shape()[1], V = logits.shape()[2];
  Array<float> last = Array<float>::from_shape({V});
  std::copy(logits.data() + (n - 1) * V, logits.data() + n * V, last.data());
  // Weights that are finite can still overflow (3e38 in a layer norm's gain): no token can be drawn from such logits.
  for (std::size_t v = 0; v < V; ++v)
    if (!std::isfinite(last.data()[v]))
      throw NonFiniteLogits(fmt::format("the logits after {} tokens are not finite ({} for token {}); the weights "
                                        "overflow",
                                        ids.size(), last.data()[v], v));
  return last;
}

}  // namespace

std::vector<Index> generate(nn::GPT<float>& model, const std::vector<Index>& prompt, const SampleOptions& options,
                            Rng& rng) {
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty; give at least one token");
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  std::vector<Index> ids = prompt;
  auto cache = options.use_cache ? model.make_cache() : std::vector<nn::KVCache<float>>{};
  for (std::size_t step = 0; step < options.new_tokens; ++step) {
    const Index next = choose_token(last_logits(model, ids, options.use_cache, cache), options, rng);
    if (next == options.stop_id) break;
    ids.push_back(next);
    if (options.on_token) options.on_token(ids);
  }
  model.train(was_training);
  return ids;
}

}  // namespace tf::infer
