#include "tinyformer/checkpoint/llmc.hpp"

#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/checkpoint/export_files.hpp"
#include "tinyformer/config/keys.hpp"
#include "tinyformer/io/llmc_tokens.hpp"

namespace tf::checkpoint {

namespace {

constexpr std::int32_t kModelMagic = 20240326;
constexpr std::int32_t kModelVersion = 3;  // float32 tensors, padded vocabulary
constexpr std::size_t kHeaderInts = 256;
constexpr std::size_t kVocabMultiple = 128;

// The refusal of an option llm.c's GPT-2 does not have, in one line.
void need_gpt2(bool ok, const std::string& file, const char* key, const std::string& value, const std::string& wanted) {
  need_option(ok, "llmc", "llm.c's GPT-2", file, key, value, wanted);
}

}  // namespace

std::size_t llmc_padded_vocab(std::size_t V) { return (V + kVocabMultiple - 1) / kVocabMultiple * kVocabMultiple; }

void export_llmc(const io::SafetensorsFile& file, const std::string& out_dir, const data::TokenStreams* tokens) {
  namespace mk = config::keys::model;
  const config::ModelConfig m = read_model_config(file);
  const std::string& path = file.path();
  need_gpt2(m.norm == config::Norm::layernorm, path, mk::norm, config::to_string(m.norm), "layernorm");
  need_gpt2(m.mlp == config::Mlp::gelu, path, mk::mlp, config::to_string(m.mlp), "gelu");
  need_gpt2(m.position == config::Position::learned, path, mk::position, config::to_string(m.position), "learned");
  need_gpt2(m.bias, path, mk::bias, "false", "true");
  need_gpt2(m.tie_weights, path, mk::tie_weights, "false", "true (lm_head is wte in llm.c)");
  need_gpt2(m.mlp_ratio == 4, path, mk::mlp_ratio, std::to_string(m.mlp_ratio), "4");
  need_gpt2(m.n_kv_head == 0 || m.n_kv_head == m.n_head, path, mk::n_kv_head, std::to_string(m.n_kv_head),
            fmt::format("0 or n_head ({}): llm.c has no grouped-query attention", m.n_head));
  const std::size_t V = *m.vocab_size, T = *m.context, L = m.n_layer, H = m.n_head, C = m.d_model;
  const std::size_t Vp = llmc_padded_vocab(V);
  if (tokens && V > io::kLlmcMaxVocabulary)
    throw std::invalid_argument(fmt::format("export --format llmc: {} has {} {}; llm.c's token files (train.bin, "
                                            "val.bin) hold uint16 ids, so {} can be at most {}",
                                            path, mk::vocab_size, V, mk::vocab_size, io::kLlmcMaxVocabulary));

  std::string bin;
  bin.reserve(kHeaderInts * 4 + (Vp * C + T * C + L * 12 * C * C + L * 13 * C + 2 * C) * sizeof(float));
  std::int32_t header[kHeaderInts] = {kModelMagic, kModelVersion};  // then maxT, V, L, NH, C, Vp, zeros
  const std::size_t dims[] = {T, V, L, H, C, Vp};
  for (std::size_t i = 0; i < std::size(dims); ++i) header[2 + i] = static_cast<std::int32_t>(dims[i]);
  append_raw(bin, header, sizeof header);

  auto get = [&](const std::string& name) { return file.get_f32(name); };
  append_floats(bin, get("transformer.wte.weight"));  // [V, C]
  bin.append((Vp - V) * C * sizeof(float), '\0');     // rows V..Vp-1 of wte [Vp, C]
  append_floats(bin, get("transformer.wpe.weight"));  // [T, C]
  for (const char* name :
       {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
        "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"})
    for (std::size_t l = 0; l < L; ++l) append_floats(bin, get(fmt::format("transformer.h.{}.{}", l, name)));
  append_floats(bin, get("transformer.ln_f.weight"));
  append_floats(bin, get("transformer.ln_f.bias"));

  std::vector<std::pair<std::string, std::string>> files{{"model.bin", std::move(bin)}};
  if (tokens) {
    files.emplace_back("train.bin", io::llmc_tokens_bytes(tokens->train, out_dir + "/train.bin"));
    files.emplace_back("val.bin", io::llmc_tokens_bytes(tokens->val, out_dir + "/val.bin"));
  }
  write_export_files(out_dir, files);
}

}  // namespace tf::checkpoint
