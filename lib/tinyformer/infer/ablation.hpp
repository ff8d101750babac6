#pragma once
// Does a head matter? Each head in turn is ablated, its output (before c_proj) replaced by zeros or by its mean
// over the held-out data, and the model evaluated on the held-out data as it is; the drops against the intact model
// say how much the task needs that head.
#include <cstddef>
#include <vector>

#include "tinyformer/infer/evaluate.hpp"

namespace tf::infer {

enum class Ablation {
  zero,  // the head's output is 0
  mean   // the head's output is its mean over the held-out batches at each position ([T,D], the same for every row)
};

struct HeadAblation {
  std::size_t layer = 0, head = 0;
  EvalResult result;  // loss and accuracy with this head ablated
};

struct AblationReport {
  EvalResult intact;                // the model as it is
  std::vector<HeadAblation> heads;  // one per head, layer by layer
};

// Evaluates on the first `max_batches` held-out batches of `batch_size`; the model is left as it was.
AblationReport ablate_heads(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size,
                            std::size_t max_batches, Ablation mode);

}  // namespace tf::infer
