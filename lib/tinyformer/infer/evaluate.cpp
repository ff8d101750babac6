#include "tinyformer/infer/evaluate.hpp"

#include "tinyformer/infer/heads.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::infer {

EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t max_batches) {
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  const bool score_heads = !source.expected_pattern().empty();
  model.record_attention(score_heads);
  analysis::HeadPatternAccumulator heads;
  data::Accuracy acc;
  double total = 0;
  std::size_t n = 0;
  for (const auto& batch : source.eval_batches(batch_size)) {
    if (n == max_batches) break;
    const Var<float> logits = model.forward(batch.x);
    total += cross_entropy(logits, batch.y).item();
    acc += data::accuracy_from_logits(logits.value(), batch.y);
    if (score_heads) infer::add_batch(heads, model.attention_weights(), batch.x, source);
    ++n;
  }
  model.record_attention(false);
  model.train(was_training);
  EvalResult r;
  r.loss = n ? total / static_cast<double>(n) : 0.0;
  if (source.is_task()) r.accuracy = acc.exact();
  if (heads.sequences() > 0) r.attention_score = heads.scores().table(analysis::Pattern::expected);
  return r;
}

}  // namespace tf::infer
