// Checkpoints: weights round-trip through safetensors bit for bit, and loading weights of another
// architecture fails with every mismatching name and shape listed, changing nothing.
#include <filesystem>

#include <catch2/catch.hpp>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/io/safetensors.hpp"

namespace fs = std::filesystem;
using namespace tf;

namespace {
config::ModelConfig model_config(std::size_t d_model, std::size_t n_layer) {
  config::ModelConfig c;
  c.vocab_size = 7;
  c.context = 6;
  c.d_model = d_model;
  c.n_head = 2;
  c.n_layer = n_layer;
  return c;
}

std::string save_model(const nn::GPT<float>& model, const std::string& name) {
  const std::string path = (fs::temp_directory_path() / ("tinyformer_ckpt_" + name + ".safetensors")).string();
  checkpoint::TrainingState st;
  st.config_yaml = "model: {}\n";
  st.vocab = "tinyformer-vocabulary 1 joined 0\n";
  checkpoint::save_checkpoint(path, model, nullptr, st);
  return path;
}
}  // namespace

TEST_CASE("checkpoint: GPT weights round-trip through safetensors bit for bit", "[io][train]") {
  nn::GPT<float> a(model_config(8, 2), 1), b(model_config(8, 2), 2);
  const std::string path = save_model(a, "roundtrip");
  const auto file = io::SafetensorsFile::load(path);
  CHECK(checkpoint::read_model_config(file).d_model == 8);
  checkpoint::load_model_weights(file, b);
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) CHECK((pa[i].second.value() == pb[i].second.value()));
}

TEST_CASE("checkpoint: loading another architecture lists each mismatching name and shape", "[io][train]") {
  nn::GPT<float> small(model_config(8, 1), 1), other(model_config(12, 2), 1);
  const auto before = other.named_parameters()[0].second.value();
  const auto file = io::SafetensorsFile::load(save_model(small, "mismatch"));
  try {
    checkpoint::load_model_weights(file, other);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("tinyformer_ckpt_mismatch.safetensors") != std::string::npos);
    CHECK(msg.find("transformer.wte.weight: the file has shape [7, 8], the model needs [7, 12]") != std::string::npos);
    CHECK(msg.find("missing tensor transformer.h.1.attn.c_attn.weight [36, 12]") != std::string::npos);
    CHECK(msg.find("lm_head.weight: the file has shape [7, 8]") != std::string::npos);
  }
  CHECK((other.named_parameters()[0].second.value() == before));  // nothing was changed
  nn::GPT<float> fewer(model_config(8, 1), 3);
  nn::GPT<float> more(model_config(8, 2), 3);
  const auto file2 = io::SafetensorsFile::load(save_model(more, "extra"));
  CHECK_THROWS_WITH(checkpoint::load_model_weights(file2, fewer),
                    Catch::Contains("unexpected tensor transformer.h.1.ln_1.weight [8]"));
}
