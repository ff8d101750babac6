// Writes what tools/compare_with_pytorch.py compares against PyTorch, into DIR:
//   config.json         {"model": the model section as in a checkpoint, "optimizer": name, lr, weight_decay,
//                        betas, eps, momentum, nesterov, decay_rule, "steps": N}
//   init.safetensors    the initial weights (nanoGPT names)
//   inputs.npy, targets.npy   int32 [steps, B, T] (targets -1 are ignored)
//   grads.safetensors   the gradient of every parameter at the first step
//   losses.npy          float64 [steps]: the loss before each optimizer step
// Usage: parity_dump DIR [--set key.path=value ...]: the model and optimizer come from the run config below with
// the overrides applied (model.norm=rmsnorm, optimizer.name=adam, ...), built by the code training uses
// (nn::GPT, optim::make_optimizer).
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/config/config.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/optim/make_optimizer.hpp"
#include "tools/test_tools.hpp"

using namespace tf;

namespace {

const char* const kBaseConfig = R"(model: {vocab_size: 11, context: 8, n_layer: 2, n_head: 2, d_model: 16}
optimizer: {name: adamw, lr: 3.0e-3, weight_decay: 0.1, betas: [0.9, 0.95], eps: 1.0e-8}
schedule: {name: constant}
training: {batch_size: 4, steps: 50}
)";

void write_weights(const std::filesystem::path& path, const nn::GPT<float>& model, bool grads) {
  io::SafetensorsWriter w;
  for (auto& [name, p] : model.named_parameters()) w.add(name, grads ? p.grad() : p.value());
  w.write_atomic(path.string());
}

nlohmann::json describe(const config::RunConfig& cfg) {
  const config::OptimizerConfig& o = cfg.optimizer;
  return {{"model", nlohmann::json::parse(config::model_json(cfg.model))},
          {"optimizer",
           {{"name", config::to_string(o.name)},
            {"lr", o.lr},
            {"weight_decay", o.weight_decay},
            {"betas", {o.betas[0], o.betas[1]}},
            {"eps", o.eps},
            {"momentum", o.momentum},
            {"nesterov", o.nesterov},
            {"decay_rule", config::to_string(o.decay_rule)}}},
          {"steps", cfg.training.steps}};
}

// The tool itself; its entry point (below) turns an exception into one line on stderr and exit status 1.
int run_parity_dump(int argc, char** argv) {
  std::vector<std::string> overrides;
  for (int i = 2; i + 1 < argc && std::strcmp(argv[i], "--set") == 0; i += 2) overrides.push_back(argv[i + 1]);
  if (argc < 2 || argc != 2 + 2 * static_cast<int>(overrides.size())) {
    std::fprintf(stderr, "usage: parity_dump DIR [--set key.path=value ...]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const config::RunConfig cfg = config::load_config_text(kBaseConfig, "parity", overrides);
  const std::size_t B = cfg.training.batch_size, T = *cfg.model.context, steps = cfg.training.steps;

  nn::GPT<float> model(cfg.model, 5);
  write_weights(dir / "init.safetensors", model, false);
  Rng rng(9);
  IndexArray inputs = IndexArray::from_shape({steps, B, T}), targets = inputs;
  for (auto& v : inputs) v = static_cast<Index>(rng.below(*cfg.model.vocab_size));
  for (auto& v : targets) v = rng.uniform() < 0.1 ? -1 : static_cast<Index>(rng.below(*cfg.model.vocab_size));
  io::write_npy((dir / "inputs.npy").string(), inputs);
  io::write_npy((dir / "targets.npy").string(), targets);

  const auto opt = optim::make_optimizer(cfg.optimizer, model.named_parameters());
  Array<double> losses = Array<double>::from_shape({steps});
  for (std::size_t s = 0; s < steps; ++s) {
    IndexArray x = IndexArray::from_shape({B, T}), y = x;
    std::copy(inputs.data() + s * B * T, inputs.data() + (s + 1) * B * T, x.data());
    std::copy(targets.data() + s * B * T, targets.data() + (s + 1) * B * T, y.data());
    opt->zero_grad();
    const Var<float> loss = model.loss(x, y);
    loss.backward();
    losses(s) = loss.item();
    if (s == 0) write_weights(dir / "grads.safetensors", model, true);
    opt->step();
  }
  io::write_npy((dir / "losses.npy").string(), losses);
  std::ofstream(dir / "config.json") << describe(cfg).dump(2) << "\n";
  fmt::print("parity_dump: wrote {}\n", dir.string());
  return 0;
}

}  // namespace

int tf::test_tools::parity_dump(int argc, char** argv) {
  try {
    return run_parity_dump(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parity_dump: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "parity_dump: unknown error\n");
  }
  return 1;
}
