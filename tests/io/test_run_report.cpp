// A run directory's report read back (io/run_report.hpp): the attention snapshots it holds within its budget of
// weights, and what it says about the ones it leaves out.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/io/run_report.hpp"

using namespace tf;
using Catch::Matchers::Contains;

namespace {

// A run dir with one metrics row and `n` snapshots of [1, 2, T, T] at steps 0, 10, 20, ...
void write_run(const test::TempDir& dir, std::size_t n, std::size_t T) {
  dir.write("metrics.jsonl", "{\"step\": 0, \"train_loss\": 1.0, \"lr\": 0.001}\n");
  for (std::size_t i = 0; i < n; ++i) {
    const std::string stem = fmt::format("attention/step_{:06}", 10 * i);
    dir.write(stem + ".json", fmt::format("{{\"step\": {}}}\n", 10 * i));
    Array<float> w = Array<float>::from_shape({1, 2, T, T});
    w.fill(1.0f / static_cast<float>(T));
    io::write_npy(dir.file(stem + ".npy"), w);
  }
}

std::vector<long> steps_of(const io::ReportData& r) {
  std::vector<long> steps;
  for (const auto& s : r.attention) steps.push_back(s.step);
  return steps;
}

}  // namespace

TEST_CASE("io: a run's report holds the attention snapshots that fit its budget, evenly spaced with the last",
          "[io][report]") {
  test::TempDir dir;
  write_run(dir, 9, 4);  // 32 weights a snapshot
  const std::string out = dir.path().string();
  CHECK(steps_of(io::read_run_report(out)) == std::vector<long>{0, 10, 20, 30, 40, 50, 60, 70, 80});
  CHECK(io::read_run_report(out).attention_note.empty());
  CHECK(steps_of(io::read_run_report(out, std::size_t{9} * 32)) ==
        std::vector<long>{0, 10, 20, 30, 40, 50, 60, 70, 80});

  const io::ReportData three = io::read_run_report(out, std::size_t{3} * 32 + 31);
  CHECK(steps_of(three) == std::vector<long>{0, 40, 80});
  CHECK_THAT(three.attention_note, Contains("3 of the 9 attention maps are shown") && Contains("at most 127") &&
                                       Contains("[1, 2, 4, 4]") && Contains("step_NNNNNN.npy"));
  CHECK_THAT(io::render_html_report(three), Contains("3 of the 9 attention maps are shown"));
  CHECK(steps_of(io::read_run_report(out, 32)) == std::vector<long>{80});  // the last
  CHECK(steps_of(io::read_run_report(out, std::size_t{2} * 32)) == std::vector<long>{0, 80});
}

TEST_CASE("io: a run's report shows no snapshot larger than its budget and says where the maps are", "[io][report]") {
  test::TempDir dir;
  write_run(dir, 3, 8);  // 128 weights a snapshot
  const io::ReportData r = io::read_run_report(dir.path().string(), 100);
  CHECK(r.attention.empty());
  CHECK_THAT(r.attention_note, Contains("No attention map is shown: one holds 128 weights ([1, 2, 8, 8])") &&
                                   Contains("more than the 100") && Contains("attention/step_NNNNNN.npy"));
  const std::string page = io::render_html_report(r);
  CHECK_THAT(page, Contains("<h2>Attention maps</h2>") && Contains("No attention map is shown"));
  CHECK_THAT(page, !Contains("id=\"snapshot\""));  // no slider without maps
}

TEST_CASE("io: a report page of maps given in memory holds those that fit its budget and says so", "[io][report]") {
  io::ReportData data;
  for (long step : {0, 10, 20, 30, 40}) {
    io::AttentionSnapshot s;
    s.step = step;
    s.weights = Array<float>::from_shape({1, 2, 4, 4});  // 32 weights
    s.weights.fill(0.25f);
    data.attention.push_back(s);
  }
  CHECK_THAT(io::render_html_report(data, std::size_t{3} * 32),
             Contains("3 of the 5 attention maps are shown, evenly spaced: this page holds at most 96 weights, and one "
                      "holds 32 ([1, 2, 4, 4])") &&
                 Contains("\"step\":40"));
  const std::string none = io::render_html_report(data, 31);
  CHECK_THAT(none, Contains("No attention map is shown: one holds 32 weights ([1, 2, 4, 4]), more than the 31"));
  CHECK_THAT(none, !Contains("id=\"snapshot\""));
  data.attention_note = "words of the caller";  // a note of the caller is kept
  CHECK_THAT(io::render_html_report(data, 31), Contains("words of the caller") && !Contains("No attention map"));
  CHECK_THAT(io::render_html_report(data), !Contains("are shown"));  // 160 weights: all of them, under 2^24
}
