// The token ids of a text under a checkpoint's vocabulary, for the tests that compare another tokenizer with it
// (tests/llama2c/check_llama2c.py).
// Usage: encode_text CHECKPOINT.safetensors TEXT_FILE
//   each line of the file (without its '\n') encoded on its own (Vocabulary::encode, no <s> added): one line of ids
//   separated by spaces per line of text; the text "\n" on a line of its own stands for a newline character.
#include <cstdio>
#include <exception>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tools/test_tools.hpp"

using namespace tf;

int tf::test_tools::encode_text(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: encode_text CHECKPOINT.safetensors TEXT_FILE\n");
    return 2;
  }
  try {
    const auto file = io::SafetensorsFile::load(argv[1]);
    const data::Vocabulary vocab = data::Vocabulary::deserialize(checkpoint::read_training_state(file).vocab);
    const std::string text = read_regular_file(argv[2]);
    for (std::size_t start = 0; start < text.size();) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(start, end - start);
      for (std::size_t at; (at = line.find("\\n")) != std::string::npos;) line.replace(at, 2, "\n");
      fmt::print("{}\n", fmt::join(vocab.encode(line), " "));
      start = end + 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "encode_text: %s\n", e.what());
    return 1;
  }
  return 0;
}
