#include "tinyformer/checkpoint/llama2c.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/config/keys.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"

namespace tf::checkpoint {

namespace {

void append_raw(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
void append_i32(std::string& out, std::int32_t v) { append_raw(out, &v, sizeof v); }
void append_floats(std::string& out, const Array<float>& a) { append_raw(out, a.data(), a.size() * sizeof(float)); }

// The refusal of an option run.c does not compute, in one line.
void need(bool ok, const std::string& file, const char* key, const std::string& value, const char* wanted) {
  if (!ok)
    throw std::invalid_argument(fmt::format("export --format llama2c: {} has {} {}; llama2.c's run.c needs {} {}", file,
                                            key, value, key, wanted));
}

// w [rows, C] whose H * D rows from first_row are H heads of D rows each in tinyformer's RoPE order: each head's
// rows reordered to run.c's pairs (row 2i <- row i, row 2i + 1 <- row i + D/2). The other rows are left out.
Array<float> heads_to_pairs(const Array<float>& w, std::size_t first_row, std::size_t H, std::size_t D) {
  const std::size_t C = w.shape(1);
  Array<float> out = Array<float>::from_shape({H * D, C});
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < D / 2; ++i)
      for (std::size_t half = 0; half < 2; ++half) {
        const float* src = w.data() + (first_row + h * D + i + half * D / 2) * C;
        std::copy(src, src + C, out.data() + (h * D + 2 * i + half) * C);
      }
  return out;
}

Array<float> rows(const Array<float>& w, std::size_t first, std::size_t count) {
  const std::size_t C = w.shape(1);
  Array<float> out = Array<float>::from_shape({count, C});
  std::copy(w.data() + first * C, w.data() + (first + count) * C, out.data());
  return out;
}

std::string tokenizer_bin(const data::Vocabulary& vocab) {
  std::string body;
  std::size_t max_length = 0;
  for (Index id = 0; id < static_cast<Index>(vocab.size()); ++id) {
    std::string piece;
    const std::string& t = vocab.token(id);
    for (std::size_t i = 0; i < t.size();) {  // U+2581 (SentencePiece's space) -> ' '
      if (t.compare(i, 3, "\xe2\x96\x81") == 0) {
        piece += ' ';
        i += 3;
      } else {
        piece += t[i++];
      }
    }
    const float score = vocab.score(id);
    append_raw(body, &score, sizeof score);
    append_i32(body, static_cast<std::int32_t>(piece.size()));
    body += piece;
    max_length = std::max(max_length, piece.size());
  }
  std::string out;
  append_i32(out, static_cast<std::int32_t>(max_length));
  return out + body;
}

}  // namespace

void export_llama2c(const io::SafetensorsFile& file, const std::string& out_dir) {
  namespace mk = config::keys::model;
  const config::ModelConfig m = read_model_config(file);
  const std::string& path = file.path();
  need(m.norm == config::Norm::rmsnorm, path, mk::norm, config::to_string(m.norm), "rmsnorm");
  need(m.mlp == config::Mlp::swiglu, path, mk::mlp, config::to_string(m.mlp), "swiglu");
  need(m.position == config::Position::rope, path, mk::position, config::to_string(m.position), "rope");
  need(!m.bias, path, mk::bias, "true", "false");
  const TrainingState state = read_training_state(file);
  const data::Vocabulary vocab = read_vocabulary(state.vocab, path);
  const config::RunConfig run = config::load_config_text(state.config_yaml, path + " (its config)");
  need(vocab.layout() == data::Vocabulary::Layout::sentencepiece && run.data.tokenizer == config::Tokenizer::bpe, path,
       config::keys::data::tokenizer, config::to_string(run.data.tokenizer),
       "bpe (its encoder merges pieces by score, which reproduces SentencePiece's BPE)");

  // run.c reads one tokenizer entry per id of the model's vocabulary: fewer pieces would read past tokenizer.bin
  if (vocab.size() != *m.vocab_size)
    throw std::invalid_argument(fmt::format("export --format llama2c: {}: its tokenizer has {} pieces but its model "
                                            "{} ({}); llama2.c's run.c needs one piece per id (a corrupt checkpoint)",
                                            path, vocab.size(), *m.vocab_size, mk::vocab_size));
  const std::size_t C = m.d_model, H = m.n_head, D = C / H, L = m.n_layer, F = nn::mlp_hidden(m);
  // grouped-query attention: run.c's n_kv_heads, query head h reading key/value head h / (H / Hkv) as tinyformer's
  const std::size_t Hkv = m.n_kv_head == 0 ? H : m.n_kv_head;
  const std::size_t V = *m.vocab_size, T = *m.context;
  std::string bin;
  for (std::size_t v : {C, F, L, H, Hkv}) append_i32(bin, static_cast<std::int32_t>(v));
  append_i32(bin, m.tie_weights ? static_cast<std::int32_t>(V) : -static_cast<std::int32_t>(V));
  append_i32(bin, static_cast<std::int32_t>(T));
  auto get = [&](const std::string& name) { return file.get_f32(name); };
  auto block = [](std::size_t l, const char* name) { return fmt::format("transformer.h.{}.{}", l, name); };
  append_floats(bin, get("transformer.wte.weight"));
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, get(block(l, "ln_1.weight")));
  std::vector<Array<float>> c_attn;
  // c_attn [(H + 2 Hkv) D, C]: the H q heads, then the Hkv k heads, then the Hkv v heads
  for (std::size_t l = 0; l < L; ++l) c_attn.push_back(get(block(l, "attn.c_attn.weight")));
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, heads_to_pairs(c_attn[l], 0, H, D));
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, heads_to_pairs(c_attn[l], C, Hkv, D));
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, rows(c_attn[l], C + Hkv * D, Hkv * D));
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, get(block(l, "attn.c_proj.weight")));
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, get(block(l, "ln_2.weight")));
  std::vector<Array<float>> c_fc;
  for (std::size_t l = 0; l < L; ++l) c_fc.push_back(get(block(l, "mlp.c_fc.weight")));  // [2F, C]: gate, up
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, rows(c_fc[l], 0, F));           // w1: the gate
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, get(block(l, "mlp.c_proj.weight")));
  for (std::size_t l = 0; l < L; ++l) append_floats(bin, rows(c_fc[l], F, F));  // w3: the up projection
  append_floats(bin, get("transformer.ln_f.weight"));
  // what llama2.c's legacy export writes here (run.c skips it): cos and sin of p * 10000^(-2i/D), [T, D/2] each
  for (const bool sine : {false, true})
    for (std::size_t p = 0; p < T; ++p)
      for (std::size_t i = 0; i < D / 2; ++i) {
        const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / D);
        const float v = static_cast<float>(sine ? std::sin(angle) : std::cos(angle));
        append_raw(bin, &v, sizeof v);
      }
  if (!m.tie_weights) append_floats(bin, get("lm_head.weight"));

  // Both files are written in full before either replaces its target, and a directory made here is removed again
  // when they cannot be: a refused export leaves nothing behind.
  const std::string tokenizer = tokenizer_bin(vocab);
  std::error_code ec;
  const bool made = !std::filesystem::exists(out_dir, ec);
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw std::runtime_error(fmt::format("--out {}: cannot create the directory: {}", out_dir, ec.message()));
  try {
    io::AtomicFile model_file((std::filesystem::path(out_dir) / "model.bin").string());
    io::AtomicFile tokenizer_file((std::filesystem::path(out_dir) / "tokenizer.bin").string());
    model_file.write(bin);
    tokenizer_file.write(tokenizer);
    model_file.commit();
    tokenizer_file.commit();
  } catch (...) {
    if (made) std::filesystem::remove_all(out_dir, ec);
    throw;
  }
}

}  // namespace tf::checkpoint
