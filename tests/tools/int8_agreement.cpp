// How close the decoder's int8 weights (infer::DecoderWeights::q8) come to float32 on a checkpoint: the perplexity
// of both on a text, how often their most likely next token agrees there, and how much of a greedy generation
// they share. One JSON line on stdout.
// Usage: int8_agreement CHECKPOINT.safetensors TEXT_FILE MAX_TOKENS PROMPT NEW_TOKENS
//   TEXT_FILE   encoded with the checkpoint's vocabulary (<s> first for a SentencePiece one) and scored in windows of
//               the model's context, the first MAX_TOKENS ids: each window's token n predicted from tokens 0..n-1
//   PROMPT      greedy generation of NEW_TOKENS after it (its ids as `sample` encodes them), by both decoders
// The JSON: scored tokens, perplexity of each, top-1 agreement (the fraction of scored positions whose argmax is the
// same), the greedy tokens both make before they first differ and the fraction of the NEW_TOKENS positions that hold
// the same token.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/infer/decoder.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tools/test_tools.hpp"

using namespace tf;

namespace {

std::size_t top1(const std::vector<float>& v) {
  return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// -log softmax(logits)[target], in double
double nll(const std::vector<float>& logits, Index target) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float z : logits) sum += std::exp(double(z) - top);
  return std::log(sum) + top - double(logits[static_cast<std::size_t>(target)]);
}

std::vector<Index> with_bos(const data::Vocabulary& vocab, std::vector<Index> ids) {
  if (vocab.bos() >= 0) ids.insert(ids.begin(), vocab.bos());
  return ids;
}

}  // namespace

int tf::test_tools::int8_agreement(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: int8_agreement CHECKPOINT.safetensors TEXT_FILE MAX_TOKENS PROMPT NEW_TOKENS\n");
    return 2;
  }
  try {
    const LoadedGPT loaded = load_gpt(argv[1]);  // the model in eval mode and its vocabulary, every check made
    nn::GPT<float>& model = *loaded.model;
    const data::Vocabulary& vocab = loaded.vocab;
    std::vector<Index> text = with_bos(vocab, vocab.encode(read_regular_file(argv[2])));
    text.resize(std::min<std::size_t>(text.size(), std::stoul(argv[3])));
    infer::DecoderOptions q8;
    q8.weights = infer::DecoderWeights::q8;
    infer::Decoder exact(model), quantised(model, q8);
    const std::size_t T = exact.context();

    double nll_f32 = 0, nll_q8 = 0;
    std::size_t scored = 0, same_top = 0;
    for (std::size_t start = 0; start + 1 < text.size(); start += T) {
      const std::size_t end = std::min(text.size(), start + T);
      std::vector<Index> seq{text[start]};
      for (std::size_t n = start + 1; n < end; ++n) {  // token n from the window's tokens before it
        const std::vector<float>& a = exact.next_logits(seq);
        const std::vector<float>& b = quantised.next_logits(seq);
        nll_f32 += nll(a, text[n]);
        nll_q8 += nll(b, text[n]);
        same_top += top1(a) == top1(b);
        ++scored;
        seq.push_back(text[n]);
      }
    }

    const std::size_t new_tokens = std::stoul(argv[5]);
    std::vector<Index> ga = with_bos(vocab, vocab.encode(argv[4])), gb = ga;
    std::size_t same_prefix = 0, same_at = 0;
    bool diverged = false;
    for (std::size_t i = 0; i < new_tokens; ++i) {
      ga.push_back(static_cast<Index>(top1(exact.next_logits(ga))));
      gb.push_back(static_cast<Index>(top1(quantised.next_logits(gb))));
      diverged = diverged || ga.back() != gb.back();
      same_prefix += !diverged;
      same_at += ga.back() == gb.back();
    }
    fmt::print(
        "{{\"scored_tokens\":{},\"perplexity_f32\":{:.4f},\"perplexity_q8\":{:.4f},\"top1_agreement\":{:.4f},"
        "\"greedy_new_tokens\":{},\"greedy_same_before_first_difference\":{},\"greedy_same_fraction\":{:.4f}}}\n",
        scored, std::exp(nll_f32 / double(scored)), std::exp(nll_q8 / double(scored)),
        double(same_top) / double(scored), new_tokens, same_prefix,
        new_tokens ? double(same_at) / double(new_tokens) : 1.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "int8_agreement: %s\n", e.what());
    return 1;
  }
  return 0;
}
