#include "tinyformer/infer/head_scores.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "tinyformer/infer/attention_maps.hpp"

namespace tf::infer {

void add_batch(analysis::HeadPatternAccumulator& acc, const std::vector<Array<float>>& attention, const IndexArray& x,
               const data::DataSource& source) {
  const std::size_t L = attention.size(), B = x.shape()[0], T = x.shape()[1];
  const std::size_t H = L ? attention[0].shape()[1] : 0;
  Array<float> one = Array<float>::from_shape({L, H, T, T});  // [L,H,T,T] of row b
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t l = 0; l < L; ++l)
      std::copy_n(attention[l].data() + b * H * T * T, H * T * T, one.data() + l * H * T * T);
    if (!std::all_of(one.begin(), one.end(), [](float w) { return std::isfinite(w); })) continue;
    const IndexArray ids = xt::view(x, b);
    acc.add(one, ids, source.expected_attention(ids));
  }
}

std::optional<analysis::HeadScores> score_heads_on_data(nn::GPT<float>& model, data::DataSource& source,
                                                        std::size_t batch_size, std::size_t max_batches) {
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  model.record_attention(true);
  analysis::HeadPatternAccumulator acc;
  std::size_t n = 0;
  for (const auto& batch : source.eval_batches(batch_size)) {
    if (n++ == max_batches) break;
    model.forward(batch.x);
    add_batch(acc, model.attention_weights(), batch.x, source);
  }
  model.record_attention(false);
  model.train(was_training);
  if (acc.sequences() == 0) return std::nullopt;
  return acc.scores();
}

analysis::HeadScores score_heads_on_ids(nn::GPT<float>& model, const data::DataSource* source, const IndexArray& ids) {
  const Array<float> attention = probe_attention(model, ids);
  return analysis::score_heads(attention, ids, source ? source->expected_attention(ids) : std::vector<long>{});
}

std::string heads_json(const analysis::HeadScores& scores) {
  nlohmann::json patterns = nlohmann::json::object();
  for (std::size_t p = 0; p < scores.patterns.size(); ++p)
    patterns[analysis::pattern_name(scores.patterns[p])] = {
        {"score", scores.table(scores.patterns[p])}, {"baseline", scores.baseline[p]}, {"counted", scores.counted[p]}};
  std::vector<std::vector<std::string>> labels(scores.layers, std::vector<std::string>(scores.heads));
  for (const auto& v : analysis::verdicts(scores)) labels[v.layer][v.head] = v.label();
  const nlohmann::json j = {{"layers", scores.layers},
                            {"heads", scores.heads},
                            {"sequences", scores.sequences},
                            {"uniform_entropy", scores.uniform_entropy},
                            {"patterns", patterns},
                            {"entropy", scores.entropy_table()},
                            {"verdicts", labels}};
  return j.dump(1);
}

}  // namespace tf::infer
