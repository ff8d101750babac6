// Bits per byte of text runs: infer::evaluate's val_bpb recomputed from the model's logits (float64 cross-entropy)
// and the bytes of the held-out targets counted from decoded text, for char and bpe tokenizers; none for tasks.
#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "support/temp_dir.hpp"

#include <cmath>
#include <random>

#include "tinyformer/infer/evaluate.hpp"

using namespace tf;

namespace {

// ASCII sentences from a few words, `docs` documents separated by lines "%".
std::string sentences(std::size_t docs, std::uint32_t seed) {
  static const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "ran", "far", "away", "home", "Tom"};
  std::mt19937 rng(seed);
  std::string s;
  for (std::size_t d = 0; d < docs; ++d) {
    for (std::size_t w = 0, n = 4 + rng() % 8; w < n; ++w) s += std::string(w ? " " : "") + words[rng() % 12];
    s += ".\n%\n";
  }
  return s;
}

// The bytes of text target y stands for after input x (SentencePiece: the text decode adds for y after x; the
// first piece of a document, after <s>, has no space of its own; char: the character's UTF-8 bytes).
double target_bytes(const data::Vocabulary& v, Index x, Index y) {
  if (v.layout() != data::Vocabulary::Layout::sentencepiece)
    return static_cast<double>(v.decode(std::vector<Index>{y}).size());
  if (y == v.bos()) return 0;
  if (x == v.bos()) return static_cast<double>(v.decode(std::vector<Index>{y}).size());
  return static_cast<double>(v.decode(std::vector<Index>{x, y}).size() - v.decode(std::vector<Index>{x}).size());
}

// sum over batches of (cross-entropy in nats of every scored target) / sum of their bytes / ln 2
double recomputed_bpb(nn::GPT<float>& model, data::DataSource& source, std::size_t B, std::size_t max_batches) {
  const auto& batches = source.eval_batches(B);
  double nats = 0, bytes = 0;
  for (std::size_t i = 0; i < std::min(max_batches, batches.size()); ++i) {
    const data::Batch& b = batches[i];
    const Array<float> logits = model.forward(b.x).value();  // [B,T,V]
    const std::size_t V = logits.shape(2);
    for (std::size_t r = 0; r < b.x.shape(0); ++r)
      for (std::size_t t = 0; t < b.x.shape(1); ++t) {
        const float* z = &logits(r, t, 0);
        double m = z[0], sum = 0;
        for (std::size_t v = 1; v < V; ++v) m = std::max(m, double(z[v]));
        for (std::size_t v = 0; v < V; ++v) sum += std::exp(double(z[v]) - m);
        nats += m + std::log(sum) - double(z[b.y(r, t)]);
        bytes += target_bytes(source.vocab(), b.x(r, t), b.y(r, t));
      }
  }
  return nats / bytes / std::log(2.0);
}

}  // namespace

TEST_CASE("eval: val_bpb is the held-out nats times tokens over the bytes over ln 2, for char and bpe text",
          "[infer][bpb]") {
  test::TempDir dir;
  const std::string path = dir.write("s.txt", sentences(500, 4));
  for (auto tokenizer : {config::Tokenizer::char_, config::Tokenizer::bpe}) {
    CAPTURE(config::to_string(tokenizer));
    config::RunConfig cfg;
    cfg.data.task = config::Task::text;
    cfg.data.path = path;
    cfg.data.tokenizer = tokenizer;
    cfg.data.vocab_size = 300;
    cfg.data.documents = "%";
    cfg.data.eval_size = 20;
    cfg.model.context = 16;
    auto source = data::make_data_source(cfg);
    nn::GPT<float> model(test::model(source->vocab().size(), 16, 16, 2, 1), 3);
    for (std::size_t max_batches : {1, 3}) {
      const infer::EvalResult r = infer::evaluate(model, *source, 8, max_batches);
      REQUIRE(r.bpb);
      NoGradGuard no_grad;
      model.eval();
      CHECK(*r.bpb == Approx(recomputed_bpb(model, *source, 8, max_batches)).epsilon(1e-5));
    }
  }
}

TEST_CASE("eval: synthetic tasks have no val_bpb", "[infer][bpb]") {
  config::RunConfig cfg = test::task_config("reverse");
  auto source = data::make_data_source(cfg);
  nn::GPT<float> model(test::model(source->vocab().size(), source->seq_len(), 8, 2, 1), 3);
  CHECK_FALSE(infer::evaluate(model, *source, 8, 2).bpb);
}
