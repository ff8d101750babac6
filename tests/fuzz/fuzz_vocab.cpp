// libFuzzer target: the vocabulary stored in a checkpoint's "tinyformer.vocab" metadata, above all the SentencePiece
// model inside it (data.tokenizer bpe or unigram). Each input is read three ways:
//   1. as the metadata's text (Vocabulary::deserialize: header, base64, checksum, then the model);
//   2. as the serialized model itself (Vocabulary::from_sentencepiece), so that mutations reach SentencePiece's
//      parser and the layout checks without having to keep the checksum right;
//   3. as the metadata of a checkpoint read the way `sample`, `attention` and `heads` read one (tf::load_gpt).
// A vocabulary that loads must encode and decode a text with byte fallback, give ids below its size and serialize
// to a text that reads back equal. Anything else must be refused: std::invalid_argument for 1 and 2, and for 3 a
// std::runtime_error whose message names the checkpoint. A crash, a sanitizer report or another exception is a bug.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_file.hpp"
#include "fuzz_target.hpp"
#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace {

void exercise(const tf::data::Vocabulary& v) {
  const std::string text = "The old cat sat on the mat, ☃ 42\tend\n";
  std::vector<tf::Index> ids;
  try {
    ids = v.encode(text);
  } catch (const std::invalid_argument&) {
    if (v.layout() == tf::data::Vocabulary::Layout::sentencepiece) __builtin_trap();  // byte fallback encodes anything
    return;  // char and word vocabularies refuse what they do not hold
  }          // (decode and the round trip below must not throw)
  for (tf::Index id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= v.size()) __builtin_trap();
  v.decode(ids);
  if (!(tf::data::Vocabulary::deserialize(v.serialize()) == v)) __builtin_trap();
}

// A checkpoint of a tiny model (V = 320, as the seed corpus's vocabularies) whose metadata holds `vocab`.
std::string checkpoint_with(const std::string& vocab) {
  static const tf::nn::GPT<float> model = [] {
    tf::config::ModelConfig cfg;
    cfg.vocab_size = 320;
    cfg.context = 4;
    cfg.d_model = 8;
    cfg.n_head = 2;
    cfg.n_layer = 1;
    return tf::nn::GPT<float>(cfg, 0);
  }();
  tf::checkpoint::TrainingState state;
  state.vocab = vocab;
  std::string path = tf::fuzz::write_input(nullptr, 0, ".safetensors");
  tf::checkpoint::save_checkpoint(path, model, nullptr, state);
  return path;
}

}  // namespace

TINYFORMER_FUZZ_TARGET(vocab) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::optional<tf::data::Vocabulary> from_text, from_model;
  try {
    from_text = tf::data::Vocabulary::deserialize(bytes);
  } catch (const std::invalid_argument&) {
  }
  try {
    from_model = tf::data::Vocabulary::from_sentencepiece(bytes);
  } catch (const std::invalid_argument&) {
  }
  if (from_model) exercise(*from_model);  // outside the try blocks: any exception here is a bug
  if (from_text) {
    exercise(*from_text);
    return 0;  // a readable vocabulary in a checkpoint: the safetensors target covers the rest
  }
  std::string path;
  try {
    path = checkpoint_with(bytes);
  } catch (const std::exception&) {
    return 0;  // metadata that safetensors' JSON header cannot hold (not UTF-8): no such checkpoint exists
  }
  try {
    tf::load_gpt(path);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.rfind(path + ": corrupt 'tinyformer.vocab' metadata: ", 0) != 0) __builtin_trap();  // names the file
    return 0;
  }
  __builtin_trap();  // an unreadable vocabulary was accepted
}
