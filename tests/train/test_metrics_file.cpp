// --resume after a kill: metrics.jsonl keeps the rows up to the checkpoint's step (train/run.hpp truncate_metrics).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"
#include "tinyformer/train/run.hpp"

namespace fs = std::filesystem;

namespace {
std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void write_all(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
}  // namespace

TEST_CASE("resume: metrics.jsonl drops the rows after the checkpoint's step and a cut-off last line") {
  const tf::test::TempDir temp;
  const fs::path& dir = temp.path();
  const fs::path path = dir / "metrics.jsonl";
  std::string rows;
  for (int step = 1; step <= 8; ++step) rows += "{\"step\":" + std::to_string(step) + ",\"train_loss\":2.5}\n";
  write_all(path, rows + "{\"step\":9,\"train_lo");  // killed while writing step 9
  tf::train::truncate_metrics(path.string(), 5);
  std::string expected;
  for (int step = 1; step <= 5; ++step) expected += "{\"step\":" + std::to_string(step) + ",\"train_loss\":2.5}\n";
  CHECK(read_all(path) == expected);

  // nothing after the step: the file is left as it is (not rewritten)
  const auto before = fs::last_write_time(path);
  tf::train::truncate_metrics(path.string(), 5);
  CHECK(read_all(path) == expected);
  CHECK(fs::last_write_time(path) == before);

  // no metrics file yet: nothing to do
  tf::train::truncate_metrics((dir / "none.jsonl").string(), 3);
  CHECK_FALSE(fs::exists(dir / "none.jsonl"));
}
