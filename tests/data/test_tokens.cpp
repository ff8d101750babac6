// Pre-tokenized .npy data: rows in file order with wrap-around (or random rows), the held-out rows at the
// end, the vocabulary from the largest id or model.vocab_size, and refusals of bad files naming them.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <unistd.h>
#include <filesystem>
#include <set>
#include <string>

#include "tinyformer/data/data.hpp"
#include "tinyformer/io/npy.hpp"

using namespace tf;
using namespace tf::data;
using Catch::Matchers::Contains;

namespace {

// [N, C] with row r = r*10, r*10+1, ...: every id tells its row and column.
IndexArray numbered_rows(std::size_t N, std::size_t C) {
  IndexArray a = IndexArray::from_shape({N, C});
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t c = 0; c < C; ++c) a(r, c) = static_cast<Index>(r * 10 + c);
  return a;
}

config::RunConfig tokens_spec(const std::string& path, bool shuffle = false) {
  config::RunConfig spec;
  spec.data.task = config::Task::tokens;
  spec.data.path = path;
  spec.model.context = std::nullopt;  // auto: T from the rows
  spec.data.val_fraction = 0.2;
  spec.data.shuffle = shuffle;
  return spec;
}

// The row index a batch row came from (checks that the row is intact: x = row[:-1], y = row[1:]).
std::size_t row_of(const Batch& batch, std::size_t b) {
  const std::size_t T = batch.x.shape(1);
  const auto r = static_cast<std::size_t>(batch.x(b, 0) / 10);
  for (std::size_t t = 0; t < T; ++t) {
    CHECK(batch.x(b, t) == static_cast<Index>(r * 10 + t));
    CHECK(batch.y(b, t) == static_cast<Index>(r * 10 + t + 1));
  }
  return r;
}

}  // namespace

TEST_CASE("data: tokens without shuffle give the training rows in file order, wrapping around", "[data]") {
  test::TempDir dir;
  const std::string path = dir.file("rows.npy");
  io::write_npy(path, numbered_rows(10, 5));  // val_fraction 0.2: rows 0-7 train, 8-9 held out
  auto source = make_data_source(tokens_spec(path));
  CHECK_FALSE(source->is_task());
  REQUIRE(source->seq_len() == 4);
  Rng rng(1);
  const std::vector<std::vector<std::size_t>> want = {{0, 1, 2}, {3, 4, 5}, {6, 7, 0}, {1, 2, 3}};
  for (const auto& rows : want) {
    const Batch batch = source->train_batch(3, rng);
    REQUIRE(batch.x.shape() == std::vector<std::size_t>{3, 4});
    for (std::size_t b = 0; b < 3; ++b) CHECK(row_of(batch, b) == rows[b]);
  }
}

TEST_CASE("data: tokens with shuffle draw random training rows, the same for the same seed", "[data]") {
  test::TempDir dir;
  const std::string path = dir.file("rows.npy");
  io::write_npy(path, numbered_rows(10, 5));
  auto a = make_data_source(tokens_spec(path, true));
  auto b = make_data_source(tokens_spec(path, true));
  Rng ra(5), rb(5);
  std::set<std::size_t> seen;
  for (int i = 0; i < 20; ++i) {
    const Batch ba = a->train_batch(4, ra), bb = b->train_batch(4, rb);
    CHECK((ba.x == bb.x));
    for (std::size_t r = 0; r < 4; ++r) seen.insert(row_of(ba, r));
  }
  CHECK(seen == std::set<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7});  // all training rows, never a held-out one
}

TEST_CASE("data: tokens hold out the last rows in order and name the vocabulary 0..V-1", "[data]") {
  test::TempDir dir;
  const std::string path = dir.file("rows.npy");
  io::write_npy(path, numbered_rows(10, 5));
  auto source = make_data_source(tokens_spec(path));
  const auto& eval = source->eval_batches(8);
  REQUIRE(eval.size() == 1);
  REQUIRE(eval[0].x.shape(0) == 2);
  CHECK(row_of(eval[0], 0) == 8);
  CHECK(row_of(eval[0], 1) == 9);
  CHECK((source->probe_sequence() == IndexArray{80, 81, 82, 83}));
  CHECK(source->expected_attention(source->probe_sequence()) == std::vector<long>(4, -1));

  // V = largest id + 1 = 95, tokens named by their ids
  const Vocabulary& vocab = source->vocab();
  REQUIRE(vocab.size() == 95);
  CHECK(vocab.token(94) == "94");
  CHECK(vocab.encode("3 94 0") == std::vector<Index>{3, 94, 0});
  CHECK(vocab.decode(std::vector<Index>{80, 81}) == "80 81");

  config::RunConfig spec = tokens_spec(path);
  spec.model.vocab_size = 128;
  CHECK(make_data_source(spec)->vocab().size() == 128);
  spec.data.eval_size = 1;
  CHECK(make_data_source(spec)->eval_batches(8)[0].x.shape(0) == 1);
}

TEST_CASE("data: tokens read int64 files as well as int32", "[data]") {
  test::TempDir dir;
  Array<std::int64_t> wide = Array<std::int64_t>::from_shape({4, 3});
  for (std::size_t i = 0; i < wide.size(); ++i) wide.data()[i] = static_cast<std::int64_t>(i);
  io::write_npy(dir.file("wide.npy"), wide);
  auto source = make_data_source(tokens_spec(dir.file("wide.npy")));
  CHECK(source->seq_len() == 2);
  CHECK(source->vocab().size() == 12);
  Rng rng(1);
  CHECK((source->train_batch(1, rng).x == IndexArray{{0, 1}}));
}

TEST_CASE("data: tokens files of the wrong rank, dtype or size are refused naming the file", "[data]") {
  test::TempDir dir;
  const std::string flat = dir.file("flat.npy");
  io::write_npy(flat, IndexArray{1, 2, 3, 4});
  CHECK_THROWS_AS(make_data_source(tokens_spec(flat)), std::invalid_argument);
  CHECK_THROWS_WITH(make_data_source(tokens_spec(flat)), Contains(flat) && Contains("rank-2") && Contains("[4]"));
  const std::string cube = dir.file("cube.npy");
  io::write_npy(cube, IndexArray::from_shape({2, 2, 2}));
  CHECK_THROWS_WITH(make_data_source(tokens_spec(cube)), Contains("rank-2") && Contains("[2, 2, 2]"));
  const std::string floats = dir.file("floats.npy");
  io::write_npy(floats, Array<float>::from_shape({4, 3}));
  CHECK_THROWS_AS(make_data_source(tokens_spec(floats)), std::invalid_argument);
  CHECK_THROWS_WITH(make_data_source(tokens_spec(floats)), Contains(floats));
  const std::string missing = dir.file("missing.npy");
  CHECK_THROWS_WITH(make_data_source(tokens_spec(missing)), Contains(missing));
  const std::string one_row = dir.file("one_row.npy");
  io::write_npy(one_row, numbered_rows(1, 5));
  CHECK_THROWS_WITH(make_data_source(tokens_spec(one_row)), Contains(one_row) && Contains("1 row"));
  const std::string one_col = dir.file("one_col.npy");
  io::write_npy(one_col, numbered_rows(5, 1));
  CHECK_THROWS_WITH(make_data_source(tokens_spec(one_col)), Contains("at least 2"));
  CHECK_THROWS_WITH(make_data_source(tokens_spec("")), Contains("data.path"));
}

TEST_CASE("data: tokens rows of another length than the context, or ids outside the vocabulary, are refused",
          "[data]") {
  test::TempDir dir;
  const std::string path = dir.file("rows.npy");
  io::write_npy(path, numbered_rows(10, 10));  // T = 9
  config::RunConfig spec = tokens_spec(path);
  spec.model.context = 8;
  CHECK_THROWS_AS(make_data_source(spec), config::ConfigError);
  CHECK_THROWS_WITH(make_data_source(spec), Contains(path) && Contains("T = 9 tokens, longer than model.context 8") &&
                                                Contains("set model.context to 9 or auto"));
  spec.model.context = 12;
  CHECK_THROWS_WITH(make_data_source(spec), Contains("model.context 12 is larger") && Contains("positions 9..11"));
  spec.model.context = 9;
  CHECK(make_data_source(spec)->seq_len() == 9);
  spec.model.context = std::nullopt;
  CHECK(make_data_source(spec)->seq_len() == 9);
  spec.model.vocab_size = 50;  // ids are row * 10 + column: the first id >= 50 is at row 5, column 0; the largest is 99
  CHECK_THROWS_WITH(make_data_source(spec),
                    Contains("token id 50 at row 5, column 0 is not below model.vocab_size 50") &&
                        Contains("the largest id is 99: set model.vocab_size to at least 100"));
  IndexArray negative = numbered_rows(4, 3);
  negative(2, 1) = -3;
  io::write_npy(dir.file("neg.npy"), negative);
  CHECK_THROWS_WITH(make_data_source(tokens_spec(dir.file("neg.npy"))),
                    Contains("token id -3 at row 2, column 1") && Contains("negative"));
}
