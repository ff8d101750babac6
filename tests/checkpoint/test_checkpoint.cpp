// Checkpoints: weights round-trip through safetensors bit for bit, and loading weights of another
// architecture fails with every mismatching name and shape listed, changing nothing.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <cstdint>
#include <random>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/tensor/hash.hpp"

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
  std::string path = test::process_path(name + ".safetensors").string();
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
    CHECK(msg.find("/mismatch.safetensors") != std::string::npos);
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

namespace {
std::string temp_path(const std::string& name) { return test::process_path(name + ".safetensors").string(); }
data::Vocabulary letters(std::size_t n) {  // "a", "b", ... n one-character tokens
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < n; ++i) tokens.push_back(std::string(1, static_cast<char>('a' + i)));
  return data::Vocabulary(tokens);
}
}  // namespace

TEST_CASE("checkpoint: tf::save writes the app's format and tf::load_gpt gives model, config and vocabulary back",
          "[io][train]") {
  nn::GPT<float> model(model_config(8, 2), 3);
  const std::string path = temp_path("library");
  save(path, model, letters(7), {/*step=*/42, /*config_yaml=*/""});
  const LoadedGPT loaded = load_gpt(path);
  CHECK(loaded.vocab == letters(7));
  CHECK(loaded.step == 42);
  CHECK(loaded.config_yaml.empty());
  CHECK(loaded.config.d_model == 8);
  CHECK(loaded.config.n_layer == 2);
  CHECK_FALSE(loaded.model->training());
  const auto a = model.named_parameters(), b = loaded.model->named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK((a[i].second.value() == b[i].second.value()));
  }
  // what the app's loader reads (checkpoint::read_training_state) is there too
  const auto state = checkpoint::read_training_state(io::SafetensorsFile::load(path));
  CHECK(data::Vocabulary::deserialize(state.vocab) == letters(7));
}

TEST_CASE("checkpoint: tf::save refuses a vocabulary of another size and a negative step, writing nothing",
          "[io][train][preconditions]") {
  nn::GPT<float> model(model_config(8, 1), 3);  // vocab_size 7
  const std::string path = temp_path("refused");
  fs::remove(path);
  for (const std::size_t n : {0, 1, 6, 8, 20}) {
    INFO("a vocabulary of " << n << " tokens");
    const data::Vocabulary vocab = n == 0 ? data::Vocabulary() : letters(n);
    CHECK_THROWS_WITH(save(path, model, vocab), Catch::Contains("vocab has " + std::to_string(n) + " tokens") &&
                                                    Catch::Contains("vocab_size is 7"));
  }
  CHECK_THROWS_WITH(save(path, model, letters(7), {-1, ""}), Catch::Contains("step = -1"));
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("checkpoint: tf::load_gpt names the file that is missing, empty or not a checkpoint", "[io][train]") {
  const std::string missing = temp_path("missing"), empty = temp_path("empty"), weights_only = temp_path("weights");
  fs::remove(missing);
  { std::ofstream(empty).flush(); }
  nn::GPT<float> model(model_config(8, 1), 3);
  save(weights_only, model);  // named parameters only: no model section, no vocabulary
  for (const std::string& path : {missing, empty, weights_only}) {
    INFO(path);
    CHECK_THROWS_WITH(load_gpt(path), Catch::Contains(path));
  }
}

TEST_CASE("checkpoint: tf::save and tf::load carry any module's parameters and refuse another structure",
          "[io][train]") {
  struct Two : nn::Module<float> {
    Two(std::size_t width, std::uint64_t seed)
        : rng(seed),
          a(3, width, true, nn::InitScheme::xavier_uniform, rng),
          b(width, 2, false, nn::InitScheme::xavier_uniform, rng) {
      register_module("a", a);
      register_module("b", b);
    }
    Rng rng;
    nn::Linear<float> a, b;
  };
  Two saved(4, 1), loaded(4, 2), wider(5, 1);
  const std::string path = temp_path("module");
  save(path, saved);
  load(path, loaded);
  const auto x = saved.named_parameters(), y = loaded.named_parameters();
  REQUIRE(x.size() == 3);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK((x[i].second.value() == y[i].second.value()));
  const Array<float> before = wider.named_parameters()[0].second.value();
  CHECK_THROWS_WITH(load(path, wider), Catch::Contains("a.weight") && Catch::Contains("b.weight"));
  CHECK((wider.named_parameters()[0].second.value() == before));  // nothing changed
}

namespace {

// The serialized vocabulary of `model` bytes that claims `count` pieces, with the right checksum (docs/formats.md:
// FNV-1a 64 of the model's bytes): so that what is wrong is the model itself.
std::string sentencepiece_text(const std::string& model, std::size_t count) {
  return fmt::format("tinyformer-vocabulary 1 sentencepiece {} {}\n{}\n", count,
                     hex64(fnv1a(model.data(), model.size())), data::to_base64(model));
}

}  // namespace

TEST_CASE("checkpoint: a damaged SentencePiece model in tinyformer.vocab is refused naming the checkpoint",
          "[io][train][subword]") {
  test::TempDir dir;
  std::string text;  // words enough for a bpe vocabulary of 300 pieces
  std::mt19937 rng(5);
  static const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far", "Tom", "said"};
  for (int i = 0; i < 4000; ++i) text += std::string(i % 11 ? " " : ".\n") + words[rng() % 12];
  config::RunConfig spec;
  spec.data.task = config::Task::text;
  spec.data.path = dir.write("t.txt", text + ".\n");
  spec.data.tokenizer = config::Tokenizer::bpe;
  spec.data.vocab_size = 300;
  spec.model.context = 8;
  const data::Vocabulary vocab = data::make_data_source(spec)->vocab();
  const std::string& model_bytes = vocab.sentencepiece_model();
  config::ModelConfig shape = model_config(8, 1);
  shape.vocab_size = 300;
  const nn::GPT<float> model(shape, 3);
  const std::string path = (dir.path() / "ckpt.safetensors").string();
  auto save_with = [&](const std::string& vocab_text) {
    checkpoint::TrainingState st;
    st.vocab = vocab_text;
    checkpoint::save_checkpoint(path, model, nullptr, st);
  };
  save_with(sentencepiece_text(model_bytes, 300));
  CHECK(load_gpt(path).vocab == vocab);  // the undamaged model loads

  // Generated damage to the model's bytes (the checksum made to match): a byte changed, a span cut out, the model cut
  // short. Each is refused with the checkpoint's path first, or (a change that leaves a valid model of other pieces)
  // loads as 300 pieces; most are refused.
  int refused = 0, trials = 0;
  for (int trial = 0; trial < 120; ++trial) {
    std::string bad = model_bytes;
    const std::size_t at = rng() % bad.size();
    if (trial % 3 == 0) bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    if (trial % 3 == 1) bad.erase(at, 1 + rng() % 16);
    if (trial % 3 == 2) bad.resize(at);
    CAPTURE(trial, at);
    save_with(sentencepiece_text(bad, 300));
    ++trials;
    try {
      const std::size_t pieces = load_gpt(path).vocab.size();  // outside CHECK, which would catch the exception
      CHECK(pieces == 300);
    } catch (const std::runtime_error& e) {
      CHECK_THAT(e.what(), Catch::StartsWith(path + ": corrupt 'tinyformer.vocab' metadata: "));
      ++refused;
    }
  }
  CHECK(refused > trials / 2);
  // and the checksum: the undamaged model under a wrong one
  save_with("tinyformer-vocabulary 1 sentencepiece 300 0000000000000000\n" + data::to_base64(model_bytes) + "\n");
  CHECK_THROWS_WITH(load_gpt(path),
                    Catch::StartsWith(path + ": corrupt 'tinyformer.vocab' metadata: ") && Catch::Contains("checksum"));
}

TEST_CASE("checkpoint: tf::save and tf::load refuse a module without parameters or with a destroyed sub-module",
          "[io][train][preconditions]") {
  // The user's mistake of holding layers without registering them: no parameters to carry.
  struct Unregistered : nn::Module<float> {
    nn::Linear<float> fc{2, 3};
  };
  // A layer registered from a std::unique_ptr that is reset afterwards.
  struct Dropped : nn::Module<float> {
    Dropped() {
      register_module("keep", keep);
      register_module("head", *head);
    }
    nn::Linear<float> keep{2, 2};
    std::unique_ptr<nn::Linear<float>> head = std::make_unique<nn::Linear<float>>(2, 3);
  };
  const std::string path = temp_path("unbuilt"), other = temp_path("unbuilt_other");
  Unregistered unregistered;
  Dropped dropped;
  save(other, dropped);  // while its head still lives
  dropped.head.reset();
  std::filesystem::remove(path);
  CHECK_THROWS_AS(save(path, unregistered), std::invalid_argument);
  CHECK_THROWS_WITH(save(path, unregistered), Catch::Contains(path) && Catch::Contains("no parameters"));
  CHECK_THROWS_WITH(save(path, dropped), Catch::Contains("'head'") && Catch::Contains("destroyed"));
  CHECK_FALSE(std::filesystem::exists(path));  // nothing written
  CHECK_THROWS_WITH(load(other, unregistered), Catch::Contains("no parameters"));
  CHECK_THROWS_WITH(load(other, dropped), Catch::Contains("'head'") && Catch::Contains("destroyed"));
}
