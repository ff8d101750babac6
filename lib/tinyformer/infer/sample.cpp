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

Index choose_token(const float* z, std::size_t V, const SampleOptions& options, Rng& rng) {
  if (!(options.temperature >= 0))
    throw std::invalid_argument(fmt::format("temperature must be >= 0, got {}", options.temperature));
  if (options.temperature == 0) return static_cast<Index>(std::max_element(z, z + V) - z);
  Array<float> logits = Array<float>::from_shape({V});
  std::copy_n(z, V, logits.data());
  const std::vector<double> p = next_token_probs(logits, options.temperature, options.top_k);
  // an inverse-CDF draw (p sums to 1); rounding at the tail never picks a masked token
  return static_cast<Index>(rng.pick(p.data(), V, 1.0));
}

Index choose_token(const Array<float>& last_logits, const SampleOptions& options, Rng& rng) {
  return choose_token(last_logits.data(), last_logits.size(), options, rng);
}

namespace {

IndexArray row_of(const std::vector<Index>& ids, std::size_t begin) {
  IndexArray x = IndexArray::from_shape({1, ids.size() - begin});
  std::copy(ids.begin() + static_cast<long>(begin), ids.end(), x.data());
  return x;
}

// Weights that are finite can still overflow (3e38 in a layer norm's gain): no token can be drawn from such logits.
void check_finite(const float* logits, std::size_t V, std::size_t tokens) {
  for (std::size_t v = 0; v < V; ++v)
    if (!std::isfinite(logits[v]))
      throw NonFiniteLogits(fmt::format("the logits after {} tokens are not finite ({} for token {}); the weights "
                                        "overflow",
                                        tokens, logits[v], v));
}

// Without the cache: the logits of the last position of `ids` from the model's forward on the last `context` tokens.
Array<float> recomputed_logits(nn::GPT<float>& model, const std::vector<Index>& ids) {
  const std::size_t context = model.context();
  const std::size_t start = ids.size() > context ? ids.size() - context : 0;  // crop to the context
  const Array<float> logits = model.forward(row_of(ids, start)).value();
  const std::size_t n = logits.shape()[1], V = logits.shape()[2];
  Array<float> last = Array<float>::from_shape({V});
  std::copy(logits.data() + (n - 1) * V, logits.data() + n * V, last.data());
  return last;
}

}  // namespace

std::vector<Index> generate(Decoder& decoder, const std::vector<Index>& prompt, const SampleOptions& options,
                            Rng& rng) {
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty; give at least one token");
  std::vector<Index> ids = prompt;
  ids.reserve(prompt.size() + options.new_tokens);
  for (std::size_t step = 0; step < options.new_tokens; ++step) {
    const std::vector<float>& logits = decoder.next_logits(ids);
    check_finite(logits.data(), logits.size(), ids.size());
    const Index next = choose_token(logits.data(), logits.size(), options, rng);
    if (next == options.stop_id) break;
    ids.push_back(next);
    if (options.on_token) options.on_token(ids);
  }
  return ids;
}

std::vector<Index> generate(nn::GPT<float>& model, const std::vector<Index>& prompt, const SampleOptions& options,
                            Rng& rng) {
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty; give at least one token");
  if (options.use_cache) {
    Decoder decoder(model, options.decoder);
    return generate(decoder, prompt, options, rng);
  }
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  std::vector<Index> ids = prompt;
  for (std::size_t step = 0; step < options.new_tokens; ++step) {
    const Array<float> last = recomputed_logits(model, ids);
    check_finite(last.data(), last.size(), ids.size());
    const Index next = choose_token(last, options, rng);
    if (next == options.stop_id) break;
    ids.push_back(next);
    if (options.on_token) options.on_token(ids);
  }
  model.train(was_training);
  return ids;
}

}  // namespace tf::infer
