#pragma once
// Summaries of attention weights for logging and for the learned-pattern checks.
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::train {

// Mean entropy (nats) of the attention rows of weights [B,H,T,T], one value per head: [H].
std::vector<double> attention_entropy(const Array<float>& weights);

// For each head ([B,H,T,T] weights), the mean over the queries q with expected[b][q] >= 0 of the weight
// that query puts on key expected[b][q]. expected: one vector of length T per batch row. Returns [H].
std::vector<double> attention_mass_on(const Array<float>& weights, const std::vector<std::vector<long>>& expected);

}  // namespace tf::train
