// hooks: the library GPT's activations read and replaced by name, under TransformerLens' hook names (nn/hooks.hpp):
// a cache of every activation, a head's output z zeroed by a hook (what CausalSelfAttention::ablate_head does), and
// activation patching (one prompt's residual stream patched into the run of another).
// Exit status 0 when the zeroed head gives the ablation's logits bit for bit, the patched run gives the other prompt's
// logits bit for bit, and a hook that returns another shape is refused with its name.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <tinyformer/tinyformer.hpp>

using namespace tf;

int main() {
  config::ModelConfig cfg;  // the model section's keys (docs/config.md); the rest keep their defaults
  cfg.vocab_size = 10;
  cfg.context = 8;
  cfg.d_model = 32;
  cfg.n_head = 4;
  cfg.n_layer = 2;
  // Hooks on q, k, v, the scores, the pattern or z take the composed attention; with it as the model's own attention
  // too, a hooked run and a plain one do the same arithmetic (the fused kernel would differ by rounding).
  cfg.attention = config::AttentionImpl::composed;
  nn::GPT<float> model(cfg, /*seed=*/1);
  model.eval();
  IndexArray clean = IndexArray::from_shape({1, 6}), corrupted = IndexArray::from_shape({1, 6});
  for (std::size_t t = 0; t < 6; ++t) {
    clean(0, t) = static_cast<Index>(t + 1);
    corrupted(0, t) = static_cast<Index>(t < 3 ? 9 - t : t + 1);  // the first three tokens differ
  }

  // Every activation by name, in the order the forward reaches them.
  nn::ActivationCache<float> cache;
  const Array<float> clean_logits = model.run_with_cache(clean, cache).value();  // [1,6,V]
  for (const std::string& name : model.hook_names())
    if (name.rfind("blocks.1.", 0) != 0)  // block 1 has the same names as block 0
      std::printf("%-28s %s\n", name.c_str(), shape_str(to_shape(cache.at(name).shape())).c_str());

  // Zero head 2 of layer 0: its z [B,T,H,D] set to 0 before c_proj, as ablate_head(2) does.
  nn::Hooks<float> zero_head;
  zero_head.add("blocks.0.attn.hook_z", [](const Var<float>& z, const std::string&) {
    Array<float> zeroed = z.value();
    for (std::size_t t = 0; t < zeroed.shape()[1]; ++t)
      for (std::size_t d = 0; d < zeroed.shape()[3]; ++d) zeroed(0, t, 2, d) = 0.0f;
    return Var<float>(zeroed);
  });
  const Array<float> hooked = model.forward(clean, zero_head).value();
  model.block(0).attn.ablate_head(2);
  const Array<float> ablated = model.forward(clean).value();
  model.block(0).attn.clear_ablation();
  const bool same_as_ablation = hooked == ablated && hooked != clean_logits;
  std::printf("head 0.2 zeroed by a hook: %s\n", same_as_ablation ? "the ablation's logits" : "NOT the ablation's");

  // Activation patching: the corrupted prompt's run with layer 1's input taken from the clean run. From there on it
  // is the clean run; patching single positions (or single heads' z) instead shows where the difference is carried.
  nn::Hooks<float> patch;
  patch.add("blocks.1.hook_resid_pre",
            [&](const Var<float>&, const std::string& name) { return Var<float>(cache.at(name)); });
  const Array<float> patched = model.forward(corrupted, patch).value();
  const bool restored = patched == clean_logits && model.forward(corrupted).value() != clean_logits;
  std::printf("corrupted run, blocks.1.hook_resid_pre patched from the clean run: %s\n",
              restored ? "the clean logits" : "NOT the clean logits");

  // A hook must return its activation's shape.
  bool refused = false;
  nn::Hooks<float> wrong;
  wrong.add("blocks.0.hook_mlp_out", [](const Var<float>& x, const std::string&) { return slice(x, 1, 0, 2); });
  try {
    model.forward(clean, wrong);
  } catch (const std::invalid_argument& e) {
    refused = true;
    std::printf("refused: %s\n", e.what());
  }
  const bool ok = same_as_ablation && restored && refused;
  std::printf("%s\n", ok ? "hooks: cache, ablation, patching and the shape check as expected" : "hooks: FAILED");
  return ok ? 0 : 1;
}
