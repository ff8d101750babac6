// read_attention: load a checkpoint written by `tinyformer train`, run a prompt through the model and print the
// attention weights of one head as a table (rows: queries, columns: keys).
//   usage: read_attention CHECKPOINT PROMPT [LAYER HEAD] [--expect ATTENTION_NPY]
// With --expect, the weights of every layer and head must equal, bit for bit, the [L,H,T,T] array that
// `tinyformer attention CHECKPOINT --prompt PROMPT --out DIR` wrote to DIR/attention.npy (exit status 1 if not).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <tinyformer/checkpoint/checkpoint.hpp>
#include <tinyformer/data/vocabulary.hpp>
#include <tinyformer/infer/attention_maps.hpp>
#include <tinyformer/io/npy.hpp>
#include <tinyformer/nn/gpt.hpp>

using namespace tf;

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string expect;
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--expect") {
      expect = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      break;
    }
  if (args.size() != 2 && args.size() != 4) {
    std::fprintf(stderr, "usage: read_attention CHECKPOINT PROMPT [LAYER HEAD] [--expect ATTENTION_NPY]\n");
    return 2;
  }
  const std::size_t layer = args.size() == 4 ? std::stoul(args[2]) : 0,
                    head = args.size() == 4 ? std::stoul(args[3]) : 0;

  // The checkpoint holds the weights (nanoGPT names), the model section and the vocabulary: one call reads all three.
  const LoadedGPT loaded = load_gpt(args[0]);  // loaded.model (in eval mode), loaded.config, loaded.vocab
  nn::GPT<float>& model = *loaded.model;
  const data::Vocabulary& vocab = loaded.vocab;

  // Prompt -> token ids [T] -> attention weights of every layer and head [L,H,T,T] (eval mode, nothing recorded).
  const std::vector<Index> ids = vocab.encode(args[1]);
  IndexArray x = IndexArray::from_shape({ids.size()});
  std::copy(ids.begin(), ids.end(), x.begin());
  const Array<float> weights = infer::probe_attention(model, x);
  const std::size_t L = weights.shape()[0], H = weights.shape()[1], T = weights.shape()[2];
  if (layer >= L || head >= H) {
    std::fprintf(stderr, "read_attention: the model has %zu layers of %zu heads\n", L, H);
    return 2;
  }

  const std::vector<std::string> labels = infer::token_labels(vocab, x);
  std::printf("layer %zu, head %zu: row = query, column = key, each row sums to 1\n     ", layer, head);
  for (std::size_t k = 0; k < T; ++k) std::printf("%5s", labels[k].c_str());
  std::printf("\n");
  for (std::size_t q = 0; q < T; ++q) {
    std::printf("%5s", labels[q].c_str());
    for (std::size_t k = 0; k < T; ++k) std::printf(k <= q ? "%5.2f" : "    .", weights(layer, head, q, k));
    std::printf("\n");
  }

  if (!expect.empty()) {
    const Array<float> written = io::read_npy_f32(expect, 4);
    const bool equal = written == weights;  // same shape and every value bit for bit
    std::printf("%s %s\n", equal ? "equal to" : "NOT equal to", expect.c_str());
    return equal ? 0 : 1;
  }
  return 0;
}
