// The logits tinyformer computes for given token ids, for the tests that compare other implementations with it
// (tests/nanogpt/check_nanogpt.py, tests/nanogpt/check_interop_recipe.py).
// Usage: logits_dump CHECKPOINT.safetensors IDS.npy OUT.npy [LOSS_TARGETS.npy]
//   IDS.npy   integer array [B, T] of token ids (T <= the model's context)
//   OUT.npy   float32 [B, T, V]: the logits of the model in eval mode (no dropout), as `sample` computes them
//   with LOSS_TARGETS.npy ([B, T], -1 = not scored) also prints "loss <cross-entropy>" on stdout.
// The model is built from the checkpoint's "tinyformer.model" metadata and loaded by the code `sample` uses
// (checkpoint::read_model_config, checkpoint::load_model_weights).
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tools/test_tools.hpp"

using namespace tf;

int tf::test_tools::logits_dump(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: logits_dump CHECKPOINT.safetensors IDS.npy OUT.npy [LOSS_TARGETS.npy]\n");
    return 2;
  }
  try {
    const auto file = io::SafetensorsFile::load(argv[1]);
    nn::GPT<float> model(checkpoint::read_model_config(file), 0);
    checkpoint::load_model_weights(file, model);
    model.eval();
    const IndexArray ids = io::read_npy_index(argv[2], 2);
    NoGradGuard no_grad;
    const Var<float> logits = model.forward(ids);
    io::write_npy(argv[3], logits.value());
    if (argc == 5) {
      const IndexArray targets = io::read_npy_index(argv[4], 2);
      fmt::print("loss {:.9g}\n", cross_entropy(logits, targets).item());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logits_dump: %s\n", e.what());
    return 1;
  }
  return 0;
}
