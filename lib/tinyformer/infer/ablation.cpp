#include "tinyformer/infer/ablation.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

namespace tf::infer {

namespace {

// Each layer's heads' outputs averaged over the held-out rows: [L] of [T,C].
std::vector<Array<float>> mean_head_outputs(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size,
                                            std::size_t max_batches) {
  NoGradGuard no_grad;
  model.eval();
  model.record_attention(true);
  const std::size_t L = model.n_layer(), T = source.seq_len(), C = model.config().d_model;
  std::vector<Array<float>> mean(L, Array<float>(xt::zeros<float>({T, C})));
  std::size_t rows = 0, n = 0;
  for (const auto& batch : source.eval_batches(batch_size)) {
    if (n++ == max_batches) break;
    model.forward(batch.x);
    const std::size_t B = batch.x.shape()[0];
    rows += B;
    for (std::size_t l = 0; l < L; ++l) {
      const float* y = model.block(l).attn.last_head_outputs().data();  // [B,T,C]
      for (std::size_t i = 0; i < B * T * C; ++i) mean[l].data()[i % (T * C)] += y[i];
    }
  }
  model.record_attention(false);
  model.train();
  for (auto& m : mean) m /= static_cast<float>(rows);
  return mean;
}

}  // namespace

AblationReport ablate_heads(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size,
                            std::size_t max_batches, Ablation mode) {
  const bool was_training = model.training();
  AblationReport report;
  report.intact = evaluate(model, source, batch_size, max_batches);
  const std::vector<Array<float>> means =
      mode == Ablation::mean ? mean_head_outputs(model, source, batch_size, max_batches) : std::vector<Array<float>>{};
  const std::size_t H = model.config().n_head, D = model.config().d_model / H;
  for (std::size_t l = 0; l < model.n_layer(); ++l)
    for (std::size_t h = 0; h < H; ++h) {
      auto& attn = model.block(l).attn;
      if (mode == Ablation::mean)
        attn.ablate_head(h, Array<float>(xt::view(means[l], xt::all(), xt::range(h * D, (h + 1) * D))));
      else
        attn.ablate_head(h);
      report.heads.push_back({l, h, evaluate(model, source, batch_size, max_batches)});
      attn.clear_ablation();
    }
  model.train(was_training);
  return report;
}

}  // namespace tf::infer
