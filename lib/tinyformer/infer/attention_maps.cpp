#include "tinyformer/infer/attention_maps.hpp"

namespace tf::infer {

Array<float> probe_attention(nn::GPT<float>& model, const IndexArray& ids) {
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.eval();
  model.record_attention(true);
  IndexArray x = ids;
  x.reshape({1, ids.size()});
  model.forward(x);
  const auto layers = model.attention_weights();  // L x [1,H,T,T]
  model.record_attention(false);
  model.train(was_training);
  const std::size_t L = layers.size(), H = layers[0].shape()[1], T = layers[0].shape()[2];
  Array<float> out = Array<float>::from_shape({L, H, T, T});
  for (std::size_t l = 0; l < L; ++l) std::copy(layers[l].begin(), layers[l].end(), out.data() + l * H * T * T);
  return out;
}

std::vector<std::string> token_labels(const data::Vocabulary& vocab, const IndexArray& ids) {
  std::vector<std::string> labels;
  for (Index id : ids) labels.push_back(vocab.label(id));
  return labels;
}

}  // namespace tf::infer
