// Writes what scripts/compare_with_pytorch.py compares against PyTorch, into DIR:
//   config.json         the architecture and the AdamW settings
//   init.safetensors    the initial weights (nanoGPT names)
//   inputs.npy, targets.npy   int32 [steps, B, T] (targets -1 are ignored)
//   grads.safetensors   the gradient of every parameter at the first step
//   losses.npy          float64 [steps]: the loss before each AdamW step
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/io/npy.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/param_groups.hpp"

using namespace tf;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: parity_dump DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  config::ModelConfig cfg;
  cfg.vocab_size = 11;
  cfg.context = 8;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.d_model = 16;
  const std::size_t B = 4, T = 8, steps = 50;
  const double lr = 3e-3, wd = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8;

  nn::GPT<float> model(cfg, 5);
  {
    io::SafetensorsWriter w;
    for (auto& [name, p] : model.named_parameters()) w.add(name, p.value());
    w.write_atomic((dir / "init.safetensors").string());
  }
  Rng rng(9);
  IndexArray inputs = IndexArray::from_shape({steps, B, T}), targets = inputs;
  for (auto& v : inputs) v = static_cast<Index>(rng.below(*cfg.vocab_size));
  for (auto& v : targets) v = rng.uniform() < 0.1 ? -1 : static_cast<Index>(rng.below(*cfg.vocab_size));
  io::write_npy((dir / "inputs.npy").string(), inputs);
  io::write_npy((dir / "targets.npy").string(), targets);

  optim::AdamOptions a;
  a.beta1 = beta1;
  a.beta2 = beta2;
  a.eps = eps;
  optim::AdamW<float> opt(optim::make_param_groups(model.named_parameters(), wd), lr, a);
  Array<double> losses = Array<double>::from_shape({steps});
  for (std::size_t s = 0; s < steps; ++s) {
    IndexArray x = IndexArray::from_shape({B, T}), y = x;
    std::copy(inputs.data() + s * B * T, inputs.data() + (s + 1) * B * T, x.data());
    std::copy(targets.data() + s * B * T, targets.data() + (s + 1) * B * T, y.data());
    opt.zero_grad();
    const Var<float> loss = model.loss(x, y);
    loss.backward();
    losses(s) = loss.item();
    if (s == 0) {
      io::SafetensorsWriter w;
      for (auto& [name, p] : model.named_parameters()) w.add(name, p.grad());
      w.write_atomic((dir / "grads.safetensors").string());
    }
    opt.step();
  }
  io::write_npy((dir / "losses.npy").string(), losses);
  nlohmann::json j = {{"vocab_size", *cfg.vocab_size}, {"block_size", *cfg.context}, {"n_layer", cfg.n_layer},
                      {"n_head", cfg.n_head}, {"n_embd", cfg.d_model}, {"mlp_ratio", cfg.mlp_ratio},
                      {"bias", cfg.bias}, {"dropout", 0.0}, {"tie_weights", cfg.tie_weights},
                      {"lr", lr}, {"weight_decay", wd}, {"betas", {beta1, beta2}}, {"eps", eps},
                      {"decay_rule", "matrices_no_embeddings"}, {"steps", steps}};
  std::ofstream(dir / "config.json") << j.dump(2) << "\n";
  fmt::print("parity_dump: wrote {}\n", dir.string());
  return 0;
}
