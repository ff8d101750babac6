// own_model: a model of your own, made of library modules and trained by your own loop.
// A one-layer attention-only transformer (token and position embeddings, one causal self-attention layer with a
// residual connection, a linear head; no MLP, no norm) learns to copy: the sequence s_0..s_{n-1} | s_0..s_{n-1}.
// The query at the separator and every query after it predicts the token n positions back, so one head can learn it
// from the position embeddings alone. AdamW with weight-decay groups, 300 steps, the loss printed as it falls; the
// weights are saved as safetensors under the module names (wte.weight, attn.c_attn.weight, ...) and read back.
// Exit status 0 when the final loss is below 0.01 and the file holds exactly the trained weights.
//   usage: own_model [out.safetensors]
#include <cstdio>
#include <string>

#include <tinyformer/io/safetensors.hpp>
#include <tinyformer/nn/layers.hpp>
#include <tinyformer/nn/self_attention.hpp>
#include <tinyformer/ops/ops.hpp>
#include <tinyformer/optim/adam.hpp>
#include <tinyformer/optim/param_groups.hpp>

using namespace tf;

constexpr std::size_t kN = 6;        // source length
constexpr std::size_t kSymbols = 8;  // tokens 0..7; token 8 is the separator
constexpr std::size_t V = kSymbols + 1, T = 2 * kN, C = 32, H = 2, B = 32;
constexpr Index kSeparator = kSymbols;

class AttentionOnly : public nn::Module<float> {
 public:
  AttentionOnly(const config::ModelConfig& cfg, Rng& rng)
      : wte(V, C, rng),
        wpe(T, C, rng),
        attn(cfg, rng, std::make_shared<Rng>(0)),  // dropout 0 here: its generator draws nothing
        lm_head(C, V, /*bias=*/false, nn::InitScheme::xavier_uniform, rng) {
    register_module("wte", wte);
    register_module("wpe", wpe);
    register_module("attn", attn);
    register_module("lm_head", lm_head);
  }

  // ids [B,T] -> logits [B,T,V]
  Var<float> forward(const IndexArray& ids) {
    IndexArray positions = IndexArray::from_shape({ids.shape()[1]});
    for (std::size_t t = 0; t < positions.size(); ++t) positions(t) = static_cast<Index>(t);
    Var<float> x = wte.forward(ids) + wpe.forward(positions);  // [B,T,C] + [T,C], broadcast over B
    x = x + attn.forward(x);                                   // the residual stream
    return lm_head.forward(x);
  }

  nn::Embedding<float> wte, wpe;
  nn::CausalSelfAttention<float> attn;
  nn::Linear<float> lm_head;
};

// B random sequences: x = row[0..T-1], y = row[1..T] with -1 (not scored) before the separator's prediction.
void copy_batch(Rng& rng, IndexArray& x, IndexArray& y) {
  for (std::size_t b = 0; b < B; ++b) {
    Index row[T + 1];
    for (std::size_t i = 0; i < kN; ++i) row[i] = row[kN + 1 + i] = static_cast<Index>(rng.below(kSymbols));
    row[kN] = kSeparator;
    for (std::size_t q = 0; q < T; ++q) {
      x(b, q) = row[q];
      y(b, q) = q >= kN ? row[q + 1] : Index(-1);
    }
  }
}

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "own_model.safetensors";
  config::ModelConfig cfg;  // the attention layer reads d_model, n_head, bias, dropout, init, attention, position
  cfg.d_model = C;
  cfg.n_head = H;
  Rng init_rng(1), data_rng(2);
  AttentionOnly model(cfg, init_rng);
  // Weight decay on the matrices, not on the embeddings (their names contain "wte" / "wpe") or biases.
  optim::AdamW<float> opt(optim::make_param_groups(model.named_parameters(), /*weight_decay=*/0.01), /*lr=*/1e-2);
  std::printf("%zu parameters\n", model.num_parameters());

  IndexArray x = IndexArray::from_shape({B, T}), y = IndexArray::from_shape({B, T});
  double loss_value = 0;
  for (int step = 1; step <= 300; ++step) {
    copy_batch(data_rng, x, y);
    const Var<float> loss = cross_entropy(model.forward(x), y);  // mean over the scored positions
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss_value = loss.item();
    if (step == 1 || step % 50 == 0) std::printf("step %3d  loss %.4f\n", step, loss_value);
  }

  io::SafetensorsWriter writer;
  for (const auto& [name, p] : model.named_parameters()) writer.add(name, p.value());
  writer.set_metadata("format", "pt");
  writer.write_atomic(out);
  const io::SafetensorsFile saved = io::SafetensorsFile::load(out);
  bool same = saved.names().size() == model.named_parameters().size();
  for (const auto& [name, p] : model.named_parameters()) same = same && saved.get_f32(name) == p.value();
  std::printf("saved %zu tensors to %s%s\n", saved.names().size(), out.c_str(),
              same ? ", read back equal" : ", NOT equal when read back");

  const bool ok = loss_value < 0.01 && same;
  std::printf("%s\n", ok ? "own_model: the loss fell below 0.01"
                         : "own_model: FAILED (loss not below 0.01, or the file differs)");
  return ok ? 0 : 1;
}
