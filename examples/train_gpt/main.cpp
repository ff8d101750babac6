// train_gpt: the library's GPT built in code, trained on data held in memory, and saved in the app's checkpoint format,
// so that `tinyformer sample`, `attention` and `heads` read the file (and tf::load_gpt reads it back here).
// The task: reverse three letters, "abc|cba"; only the answer after '|' is scored. AdamW, 300 steps.
// Exit status 0 when the loss fell below 0.05 and the file loads back with the same weights, config and vocabulary.
//   usage: train_gpt [out.safetensors]
//   then:  tinyformer sample out.safetensors --prompt "abc|" --tokens 3 --temperature 0     (prints abc|cba)
#include <cstdio>
#include <string>

#include <tinyformer/tinyformer.hpp>

using namespace tf;

constexpr std::size_t kLen = 3, T = 2 * kLen, B = 32;  // "abc|cba": 7 tokens, inputs and targets of 6

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "train_gpt.safetensors";
  const data::Vocabulary vocab({"a", "b", "c", "d", "|"});  // one character a token; '|' is id 4
  const Index sep = vocab.id("|");

  config::ModelConfig cfg;  // every key as in a config's model section (docs/config.md); the rest keep defaults
  cfg.vocab_size = vocab.size();
  cfg.context = T;
  cfg.d_model = 32;
  cfg.n_head = 2;
  cfg.n_layer = 1;
  nn::GPT<float> model(cfg, /*seed=*/1);
  optim::AdamW<float> opt(model.named_parameters(), /*lr=*/1e-2);

  Rng data_rng(2);
  IndexArray x = IndexArray::from_shape({B, T}), y = IndexArray::from_shape({B, T});
  double loss_value = 0;
  for (int step = 1; step <= 300; ++step) {
    for (std::size_t b = 0; b < B; ++b) {  // row = s_0 s_1 s_2 | s_2 s_1 s_0; x = row[0..5], y = row[1..6]
      Index row[T + 1];
      for (std::size_t i = 0; i < kLen; ++i) row[i] = row[T - i] = static_cast<Index>(data_rng.below(4));
      row[kLen] = sep;
      for (std::size_t t = 0; t < T; ++t) {
        x(b, t) = row[t];
        y(b, t) = t >= kLen ? row[t + 1] : Index(-1);  // -1: not scored
      }
    }
    const Var<float> loss = model.loss(x, y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss_value = loss.item();
    if (step == 1 || step % 100 == 0) std::printf("step %3d  loss %.4f\n", step, loss_value);
  }

  save(out, model, vocab, {/*step=*/300, /*config_yaml=*/""});  // weights, model config, vocabulary: as the app
  const LoadedGPT loaded = load_gpt(out);
  bool same = loaded.vocab == vocab && loaded.config.d_model == cfg.d_model && loaded.step == 300;
  const auto params = model.named_parameters(), read = loaded.model->named_parameters();
  same = same && params.size() == read.size();
  for (std::size_t i = 0; same && i < params.size(); ++i) same = params[i].second.value() == read[i].second.value();
  std::printf("saved %s%s\n", out.c_str(), same ? ", read back equal" : ", NOT equal when read back");
  const bool ok = loss_value < 0.05 && same;
  std::printf("%s\n", ok ? "train_gpt: the loss fell below 0.05" : "train_gpt: FAILED");
  return ok ? 0 : 1;
}
