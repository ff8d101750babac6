// constructors: every public module and optimizer built with its constructor's defaults and with options, used once,
// and each misuse it refuses. A refusal is a std::invalid_argument whose message names the argument (printed below).
// Exit status 0 when everything builds with the shapes stated and every misuse throws with the words stated.
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include <tinyformer/tinyformer.hpp>

using namespace tf;

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) ++failures;
  std::printf("%s %s\n", ok ? "ok     " : "FAILED ", what);
}

// `build` must throw std::invalid_argument with `words` in its message.
void refuses(const char* what, const std::string& words, const std::function<void()>& build) {
  try {
    build();
  } catch (const std::invalid_argument& e) {
    const bool named = std::string(e.what()).find(words) != std::string::npos;
    failures += named ? 0 : 1;
    std::printf("%s %s -> %s\n", named ? "refused" : "FAILED ", what, e.what());
    return;
  }
  ++failures;
  std::printf("FAILED  %s was not refused\n", what);
}

int main() {
  Array<float> values = Array<float>::from_shape({2, 5, 8});  // [B,T,C]
  values.fill(0.5f);
  const Var<float> x(values);
  IndexArray ids = IndexArray::from_shape({2, 5});  // [B,T] token ids
  ids.fill(3);
  Rng rng(1);

  // nn::Linear<S>(in_features, out_features, bias = true, init = InitScheme::xavier_uniform, seed = 0)
  // nn::Linear<S>(in_features, out_features, bias, init, Rng& rng)   drawn from rng, which it does not keep
  nn::Linear<float> fc(8, 4);  // weight [4,8] Xavier uniform from seed 0, bias [4] zeros: torch.nn.Linear(8, 4)
  nn::Linear<float> drawn(8, 4, /*bias=*/false, nn::InitScheme::normal, rng);
  expect(fc.forward(x).shape() == Shape{2, 5, 4} && drawn.named_parameters().size() == 1, "Linear: [2,5,8] -> [2,5,4]");
  refuses("Linear(0, 4)", "in_features", [] { nn::Linear<float>(0, 4); });
  refuses("Linear(8, 0)", "out_features", [] { nn::Linear<float>(8, 0); });

  // nn::Embedding<S>(num_embeddings, dim, Rng& rng)   weight [num_embeddings, dim], N(0, 0.02^2)
  nn::Embedding<float> wte(10, 8, rng);
  expect(wte.forward(ids).shape() == Shape{2, 5, 8}, "Embedding: ids [2,5] -> [2,5,8]");
  refuses("Embedding(0, 8)", "num_embeddings", [&] { nn::Embedding<float>(0, 8, rng); });

  // nn::Norm<S>(dim, NormOptions{kind = config::Norm::layernorm, bias = true})   LayerNorm or RMSNorm, last axis
  // nn::Norm<S>(const config::ModelConfig& cfg)                          with the d_model, norm and bias of a model
  nn::Norm<float> layer_norm(8);                         // weight ones [8], bias zeros [8]
  nn::Norm<float> rms_norm(8, {config::Norm::rmsnorm});  // weight only
  expect(layer_norm.forward(x).shape() == Shape{2, 5, 8} && rms_norm.named_parameters().size() == 1,
         "Norm: LayerNorm with weight and bias, RMSNorm with a weight only");
  refuses("Norm(0)", "dim", [] { nn::Norm<float>(0); });
  // nn::LayerNorm<S>(dim, bias = true), nn::RMSNorm<S>(dim): PyTorch's names for the two kinds of Norm
  nn::LayerNorm<float> ln(8);
  nn::RMSNorm<float> rms(8);
  expect(ln.named_parameters().size() == 2 && rms.named_parameters().size() == 1 &&
             rms.forward(x).shape() == Shape{2, 5, 8},
         "LayerNorm: weight and bias; RMSNorm: a weight only");
  refuses("RMSNorm(0)", "dim", [] { nn::RMSNorm<float>(0); });

  // nn::CausalSelfAttention<S>(d_model, n_head, SelfAttentionOptions options = {})
  //   options: n_kv_head = 0 (n_head), bias = true, dropout = 0, init = xavier_uniform, attention = fused, rope =
  //   false, seed = 0 (the weights; the dropout generator is split from it and owned by the layer)
  nn::CausalSelfAttention<float> attn(8, 2);
  nn::SelfAttentionOptions options;
  options.n_kv_head = 1;  // multi-query attention
  options.dropout = 0.1;
  options.seed = 7;
  nn::CausalSelfAttention<float> mqa(8, 2, options);
  expect(attn.forward(x).shape() == Shape{2, 5, 8} && mqa.forward(x).shape() == Shape{2, 5, 8},
         "CausalSelfAttention: [2,5,8] -> [2,5,8]");
  refuses("CausalSelfAttention(8, 3)", "n_head = 3", [] { nn::CausalSelfAttention<float>(8, 3); });
  refuses("CausalSelfAttention(0, 2)", "d_model = 0", [] { nn::CausalSelfAttention<float>(0, 2); });
  refuses("CausalSelfAttention(8, 2, {n_kv_head = 3})", "n_kv_head = 3", [] {
    nn::SelfAttentionOptions gqa;
    gqa.n_kv_head = 3;
    nn::CausalSelfAttention<float>(8, 2, gqa);
  });

  // nn::GPT<S>(const config::ModelConfig& cfg, std::uint64_t seed)   cfg: the model section (docs/config.md)
  config::ModelConfig cfg;
  cfg.vocab_size = 10;
  cfg.context = 8;
  cfg.d_model = 8;
  cfg.n_head = 2;
  cfg.n_layer = 1;
  nn::GPT<float> gpt(cfg, /*seed=*/1);
  expect(gpt.forward(ids).shape() == Shape{2, 5, 10}, "GPT: ids [2,5] -> logits [2,5,10]");
  refuses("GPT without vocab_size", "model.vocab_size", [&] {
    config::ModelConfig unset = cfg;
    unset.vocab_size.reset();  // 'auto' in a config: the trainer resolves it from the data
    nn::GPT<float>(unset, 1);
  });
  refuses("GPT with n_head 3", "model.n_head", [&] {
    config::ModelConfig odd = cfg;
    odd.n_head = 3;
    nn::GPT<float>(odd, 1);
  });

  // optim::SGD<S>(named_params, lr, SgdOptions{momentum = 0, dampening = 0, nesterov = false}, weight_decay = 0)
  // optim::Adam<S>(named_params, lr = 1e-3, AdamOptions{beta1 = 0.9, beta2 = 0.999, eps = 1e-8}, weight_decay = 0)
  // optim::AdamW<S>(named_params, lr = 1e-3, AdamOptions = {}, weight_decay = 0.01)
  // Each also takes groups instead of named_params: optim::make_param_groups(named_params, weight_decay).
  optim::SGD<float> sgd(fc.named_parameters(), 0.1, {/*momentum=*/0.9});
  optim::Adam<float> adam(attn.named_parameters());
  optim::AdamW<float> adamw(optim::make_param_groups(gpt.named_parameters(), 0.1), 1e-3);
  expect(sgd.name() == std::string("SGD") && adam.lr() == 1e-3 && adamw.lr() == 1e-3, "SGD, Adam, AdamW");
  refuses("AdamW with no parameters", "empty parameter list", [] { optim::AdamW<float>(nn::NamedParams<float>{}); });
  refuses("SGD with lr -1", "lr", [&] { optim::SGD<float>(fc.named_parameters(), -1.0); });
  refuses("Adam with beta1 1", "beta1", [&] { optim::Adam<float>(fc.named_parameters(), 1e-3, {/*beta1=*/1.0}); });
  refuses("SGD with a Var that is not a leaf", "not a leaf", [&] {
    optim::SGD<float>(nn::NamedParams<float>{{"y", fc.forward(x)}}, 0.1);
  });

  // A module of your own registers its layers by address: one destroyed after registration is named, not followed.
  struct Net : nn::Module<float> {
    Net() {
      register_module("body", body);
      register_module("head", *head);
    }
    nn::Linear<float> body{8, 8};
    std::unique_ptr<nn::Linear<float>> head = std::make_unique<nn::Linear<float>>(8, 2);
  };
  Net net;
  expect(net.named_parameters().size() == 4, "Net: body.weight, body.bias, head.weight, head.bias");
  net.head.reset();
  refuses("Net after its head was destroyed", "'head'", [&] { net.named_parameters(); });

  std::printf("%s\n", failures == 0 ? "constructors: all built, every misuse refused" : "constructors: FAILED");
  return failures == 0 ? 0 : 1;
}
