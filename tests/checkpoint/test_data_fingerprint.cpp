// What a checkpoint records of its run's data, and the check that the data is still that data
// (checkpoint/data_fingerprint.hpp).
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "support/temp_dir.hpp"
#include "tinyformer/checkpoint/data_fingerprint.hpp"
#include "tinyformer/data/data.hpp"

using namespace tf;

using test::reverse_config;

TEST_CASE("data fingerprint: a changed vocabulary, file size or content is named", "[checkpoint]") {
  test::TempDir dir;
  const std::string path = dir.file("t.txt");
  // `times` repetitions of `word` and a newline
  const auto write = [&](const std::string& word, int times) {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < times; ++i) out << word;
    out << '\n';
  };
  const auto fingerprint = [&](std::string& vocab) {
    const config::RunConfig cfg = reverse_config({"data.task=text", "data.path=" + path, "model.context=8"});
    const auto source = data::make_data_source(cfg);
    vocab = source->vocab().serialize();
    return checkpoint::data_fingerprint(cfg, *source);
  };
  write("abc", 200);
  std::string vocab_a, vocab_b, vocab_c;
  const std::string a = fingerprint(vocab_a);
  CHECK_THAT(a, Catch::Contains("\"bytes\":601"));
  std::vector<std::string> notes;
  checkpoint::check_same_data(a, vocab_a, fingerprint(vocab_b), vocab_b, false, "c", notes);  // unchanged: nothing said
  CHECK(notes.empty());

  write("abd", 200);  // c -> d: the same size, other symbols
  const std::string b = fingerprint(vocab_b);
  CHECK_THROWS_WITH(checkpoint::check_same_data(a, vocab_a, b, vocab_b, false, "c", notes),
                    Catch::Contains("the data differs from the checkpoint's: the vocabulary (4 symbols in the "
                                    "checkpoint, 4 now); data.path " +
                                    path + ": its content (the same size, 601 bytes"));
  write("abc", 201);
  const std::string c = fingerprint(vocab_c);
  CHECK_THROWS_WITH(checkpoint::check_same_data(a, vocab_a, c, vocab_c, false, "c", notes),
                    Catch::Contains("its size (601 bytes in the checkpoint, 604 now)"));
  checkpoint::check_same_data(a, vocab_a, c, vocab_c, true, "c", notes);
  CHECK_THAT(notes.at(0), Catch::EndsWith("(accepted: --allow-changes)"));
  notes.clear();
  checkpoint::check_same_data("", vocab_a, c, vocab_c, false, "c", notes);  // an older checkpoint: a note
  CHECK_THAT(notes.at(0), Catch::StartsWith("the checkpoint has no data fingerprint"));
  CHECK_THROWS_WITH(checkpoint::check_same_data("", vocab_a, b, vocab_b, false, "c", notes),
                    Catch::Contains("the vocabulary (4 symbols in the checkpoint, 4 now)"));
}

TEST_CASE("data fingerprint: a saved one of the wrong shape names the checkpoint's metadata, a path that is not "
          "UTF-8 names data.path",
          "[checkpoint]") {
  const config::RunConfig cfg = reverse_config({});
  const auto source = data::make_data_source(cfg);
  const std::string vocab = source->vocab().serialize();
  const std::string now = checkpoint::data_fingerprint(cfg, *source);
  std::vector<std::string> notes;
  for (const char* saved : {"[1]", R"({"vocabulary": {"size": "11"}})", R"({"vocabulary": 3})",
                            R"({"vocabulary": {"size": 11}, "file": {"bytes": -1, "fnv1a64": "0"}})"})
    CHECK_THROWS_WITH(checkpoint::check_same_data(saved, vocab, now, vocab, false, "c.safetensors", notes),
                      Catch::StartsWith("c.safetensors: corrupt 'tinyformer.data' metadata: "));
  test::TempDir dir;
  const std::string latin1 = dir.file("caf\xe9.txt");
  for (int i = 0; i < 20; ++i) std::ofstream(latin1, std::ios::app) << "some text to learn from\n";
  const config::RunConfig text = reverse_config({"data.task=text", "data.path=" + latin1, "model.context=8"});
  CHECK_THROWS_WITH(checkpoint::data_fingerprint(text, *data::make_data_source(text)),
                    Catch::Contains("data.path") && Catch::Contains("is not UTF-8"));
}
