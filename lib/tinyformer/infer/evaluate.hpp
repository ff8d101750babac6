#pragma once
// The model on held-out data: mean loss, exact-match accuracy and, for data with an expected pattern, each head's
// attention_score, in one pass (no grad, eval mode).
#include <cstddef>
#include <optional>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;  // exact-match, for the synthetic tasks
  // [L][H] for data with an expected pattern: the fraction of each head's attention that the answer queries of the
  // held-out batches put on their expected key (analysis::Pattern::expected); empty otherwise.
  std::vector<std::vector<double>> attention_score;
};

// Mean loss over the first `max_batches` held-out batches of size `batch_size`, accuracy and attention_score.
EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t max_batches);

}  // namespace tf::infer
