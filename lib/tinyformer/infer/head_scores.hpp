#pragma once
// What the heads of a model do on data: runs the model (no grad, eval mode) with its attention recorded and feeds
// every sequence's [L,H,T,T] weights, token ids and the data's expected keys to analysis::HeadPatternAccumulator.
#include <optional>
#include <vector>

#include "tinyformer/analysis/head_patterns.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

// Adds each row of a batch: x [B,T] and the attention of the forward that just ran on it, one [B,H,T,T] per
// layer (nn::GPT::attention_weights). Expected keys come from `source` (none for text and tokens). A row whose
// attention holds a NaN or an infinity (a diverged model) is left out.
void add_batch(analysis::HeadPatternAccumulator& acc, const std::vector<Array<float>>& attention, const IndexArray& x,
               const data::DataSource& source);

// The heads' scores on the first `max_batches` held-out batches of `batch_size` sequences; nullopt when no sequence
// could be scored (every one had non-finite attention).
std::optional<analysis::HeadScores> score_heads_on_data(nn::GPT<float>& model, data::DataSource& source,
                                                        std::size_t batch_size, std::size_t max_batches);
// The heads' scores on one input [T] (expected keys from `source` when it has a pattern; none if `source` is null).
analysis::HeadScores score_heads_on_ids(nn::GPT<float>& model, const data::DataSource* source, const IndexArray& ids);

// The scores as one JSON object (what `tinyformer heads --json` prints and a run's heads.json holds):
//   {"layers": L, "heads": H, "sequences": N, "uniform_entropy": e,
//    "patterns": {"previous_token": {"score": [[...]] (L x H), "baseline": b, "counted": n}, ...},
//    "entropy": [[...]] (L x H), "verdicts": [["previous_token 0.93", ...], ...] (L x H, HeadVerdict::label)}
std::string heads_json(const analysis::HeadScores& scores);

}  // namespace tf::infer
