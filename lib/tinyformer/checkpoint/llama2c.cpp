#include "tinyformer/checkpoint/llama2c.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/checkpoint/export_files.hpp"
#include "tinyformer/config/keys.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"

namespace tf::checkpoint {

namespace {

constexpr std::uint32_t kRunqMagic = 0x616b3432;  // "ak42", llama2.c's version-2 files

// An export's --format and the program that reads its files, as the refusals name them.
struct Target {
  const char* format;
  const char* program;
};
constexpr Target kRunc{"llama2c", "llama2.c's run.c"}, kRunq{"llama2c-q8", "llama2.c's runq.c"};

// The refusal of an option the target's program does not compute, in one line.
void need(bool ok, const Target& target, const std::string& file, const char* key, const std::string& value,
          const char* wanted) {
  need_option(ok, target.format, target.program, file, key, value, wanted);
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

// The model as llama2.c lays it out, after the checks that run.c can compute it: header values and the weights in
// llama2.c's order (wq and wk rows in run.c's rope pairs), each a list of one tensor per layer.
struct Llama2cModel {
  std::size_t C = 0, F = 0, L = 0, H = 0, Hkv = 0, V = 0, T = 0;
  bool shared_classifier = true;
  data::Vocabulary vocab;
  Array<float> token_embedding, rms_final, wcls;  // wcls: when not shared
  std::vector<Array<float>> rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;
};

Llama2cModel llama2c_model(const io::SafetensorsFile& file, const Target& target) {
  namespace mk = config::keys::model;
  const config::ModelConfig m = read_model_config(file);
  const std::string& path = file.path();
  need(m.norm == config::Norm::rmsnorm, target, path, mk::norm, config::to_string(m.norm), "rmsnorm");
  need(m.mlp == config::Mlp::swiglu, target, path, mk::mlp, config::to_string(m.mlp), "swiglu");
  need(m.position == config::Position::rope, target, path, mk::position, config::to_string(m.position), "rope");
  need(!m.bias, target, path, mk::bias, "true", "false");
  const TrainingState state = read_training_state(file);
  Llama2cModel out;
  out.vocab = read_vocabulary(state.vocab, path);
  const config::RunConfig run = config::load_config_text(state.config_yaml, path + " (its config)");
  need(out.vocab.layout() == data::Vocabulary::Layout::sentencepiece && run.data.tokenizer == config::Tokenizer::bpe,
       target, path, config::keys::data::tokenizer, config::to_string(run.data.tokenizer),
       "bpe (its encoder merges pieces by score, which reproduces SentencePiece's BPE)");

  // run.c reads one tokenizer entry per id of the model's vocabulary: fewer pieces would read past tokenizer.bin
  if (out.vocab.size() != *m.vocab_size)
    throw std::invalid_argument(fmt::format("export --format {}: {}: its tokenizer has {} pieces but its model {} "
                                            "({}); {} needs one piece per id (a corrupt checkpoint)",
                                            target.format, path, out.vocab.size(), *m.vocab_size, mk::vocab_size,
                                            target.program));
  out.C = m.d_model, out.H = m.n_head, out.L = m.n_layer, out.F = nn::mlp_hidden(m);
  const std::size_t C = out.C, H = out.H, D = C / H, F = out.F;
  // grouped-query attention: run.c's n_kv_heads, query head h reading key/value head h / (H / Hkv) as tinyformer's
  out.Hkv = m.n_kv_head == 0 ? H : m.n_kv_head;
  const std::size_t Hkv = out.Hkv;
  out.V = *m.vocab_size, out.T = *m.context;
  out.shared_classifier = m.tie_weights;
  auto get = [&](const std::string& name) { return file.get_f32(name); };
  auto block = [](std::size_t l, const char* name) { return fmt::format("transformer.h.{}.{}", l, name); };
  out.token_embedding = get("transformer.wte.weight");
  for (std::size_t l = 0; l < out.L; ++l) {
    out.rms_att.push_back(get(block(l, "ln_1.weight")));
    // c_attn [(H + 2 Hkv) D, C]: the H q heads, then the Hkv k heads, then the Hkv v heads
    const Array<float> c_attn = get(block(l, "attn.c_attn.weight"));
    out.wq.push_back(heads_to_pairs(c_attn, 0, H, D));
    out.wk.push_back(heads_to_pairs(c_attn, C, Hkv, D));
    out.wv.push_back(rows(c_attn, C + Hkv * D, Hkv * D));
    out.wo.push_back(get(block(l, "attn.c_proj.weight")));
    out.rms_ffn.push_back(get(block(l, "ln_2.weight")));
    const Array<float> c_fc = get(block(l, "mlp.c_fc.weight"));  // [2F, C]: gate, up
    out.w1.push_back(rows(c_fc, 0, F));                          // the gate
    out.w2.push_back(get(block(l, "mlp.c_proj.weight")));
    out.w3.push_back(rows(c_fc, F, F));  // the up projection
  }
  out.rms_final = get("transformer.ln_f.weight");
  if (!m.tie_weights) out.wcls = get("lm_head.weight");
  return out;
}

// The largest group size of llama2.c's export (64, halved) that divides both of runq.c's input widths, dim and
// hidden_dim: runq.c quantises a vector in whole groups and drops a partial last one.
std::int32_t runq_group_size(std::size_t C, std::size_t F) {
  std::size_t g = 64;
  while (g > 1 && (C % g != 0 || F % g != 0)) g /= 2;
  return static_cast<std::int32_t>(g);
}

// A tensor as runq.c reads it: int8 values, then a float scale per group of `group` values (kernels::quantize_q8's
// rule, in groups of `group` over the flattened tensor; rows are whole groups since `group` divides their width).
void append_q8(std::string& out, const Array<float>& w, std::size_t group) {
  const std::size_t n = w.size(), groups = n / group;
  std::vector<std::int8_t> q(n);
  std::vector<float> s(groups);
  const float* x = w.data();
  for (std::size_t g = 0; g < groups; ++g) {
    float amax = 0.f;
    for (std::size_t j = g * group; j < (g + 1) * group; ++j) amax = std::max(amax, std::fabs(x[j]));
    s[g] = amax / 127.f;
    for (std::size_t j = g * group; j < (g + 1) * group; ++j)
      q[j] = s[g] > 0 ? static_cast<std::int8_t>(std::round(x[j] / s[g])) : std::int8_t{0};
  }
  append_raw(out, q.data(), q.size());
  append_raw(out, s.data(), s.size() * sizeof(float));
}

}  // namespace

void export_llama2c(const io::SafetensorsFile& file, const std::string& out_dir) {
  const Llama2cModel m = llama2c_model(file, kRunc);
  const std::size_t C = m.C, H = m.H, D = C / H, V = m.V, T = m.T;
  std::string bin;
  for (std::size_t v : {m.C, m.F, m.L, m.H, m.Hkv}) append_i32(bin, static_cast<std::int32_t>(v));
  append_i32(bin, m.shared_classifier ? static_cast<std::int32_t>(V) : -static_cast<std::int32_t>(V));
  append_i32(bin, static_cast<std::int32_t>(T));
  append_floats(bin, m.token_embedding);
  for (const auto* list : {&m.rms_att, &m.wq, &m.wk, &m.wv, &m.wo, &m.rms_ffn, &m.w1, &m.w2, &m.w3})
    for (const Array<float>& a : *list) append_floats(bin, a);
  append_floats(bin, m.rms_final);
  // what llama2.c's legacy export writes here (run.c skips it): cos and sin of p * 10000^(-2i/D), [T, D/2] each
  for (const bool sine : {false, true})
    for (std::size_t p = 0; p < T; ++p)
      for (std::size_t i = 0; i < D / 2; ++i) {
        const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / D);
        const float v = static_cast<float>(sine ? std::sin(angle) : std::cos(angle));
        append_raw(bin, &v, sizeof v);
      }
  if (!m.shared_classifier) append_floats(bin, m.wcls);
  write_export_files(out_dir, {{"model.bin", bin}, {"tokenizer.bin", tokenizer_bin(m.vocab)}});
}

void export_llama2c_q8(const io::SafetensorsFile& file, const std::string& out_dir) {
  const Llama2cModel m = llama2c_model(file, kRunq);
  const std::int32_t group = runq_group_size(m.C, m.F);
  std::string bin;
  append_raw(bin, &kRunqMagic, sizeof kRunqMagic);
  append_i32(bin, 2);  // version
  for (std::size_t v : {m.C, m.F, m.L, m.H, m.Hkv, m.V, m.T}) append_i32(bin, static_cast<std::int32_t>(v));
  const std::uint8_t shared = m.shared_classifier ? 1 : 0;
  append_raw(bin, &shared, 1);
  append_i32(bin, group);
  bin.resize(256, '\0');  // the header is 256 bytes
  for (const auto* list : {&m.rms_att, &m.rms_ffn})
    for (const Array<float>& a : *list) append_floats(bin, a);
  append_floats(bin, m.rms_final);
  const auto g = static_cast<std::size_t>(group);
  append_q8(bin, m.token_embedding, g);
  for (const auto* list : {&m.wq, &m.wk, &m.wv, &m.wo, &m.w1, &m.w2, &m.w3})
    for (const Array<float>& a : *list) append_q8(bin, a, g);
  if (!m.shared_classifier) append_q8(bin, m.wcls, g);
  write_export_files(out_dir, {{"model_q80.bin", bin}, {"tokenizer.bin", tokenizer_bin(m.vocab)}});
}

}  // namespace tf::checkpoint
