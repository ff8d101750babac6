// The circuit experiments of docs/circuits.md, shortened to what the suite can afford, with the configs' seed: each
// test fails if its phenomenon is not there. CPU time of one core: see docs/circuits.md, "Tests".
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/sources.hpp"
#include "support/temp_dir.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/run_report.hpp"
#include "tinyformer/train/trainer.hpp"

namespace fs = std::filesystem;
using namespace tf;

namespace {

// Trains configs/<config>.yaml with `overrides` (no snapshots, no checkpoint before the end) into a fresh directory;
// returns its metrics rows.
std::vector<io::MetricsRow> train_circuit(const std::string& config, const std::string& name,
                                          std::vector<std::string> overrides) {
  const fs::path out = test::process_path("circuit_" + name);
  fs::remove_all(out);
  train::TrainOptions opts;
  opts.config_path = test::config_file(config);
  opts.overrides = std::move(overrides);
  opts.overrides.emplace_back("logging.attention_interval=0");
  opts.out_dir = out.string();
  opts.progress = false;
  train::train(opts);
  return io::read_run_metrics(out.string());
}

const io::MetricsRow& at_step(const std::vector<io::MetricsRow>& rows, long step) {
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const io::MetricsRow& r) { return r.step == step; });
  REQUIRE(it != rows.end());
  return *it;
}

double best_of_layer(const io::HeadTable& table, std::size_t layer) {
  REQUIRE(table.size() > layer);
  return *std::max_element(table[layer].begin(), table[layer].end());
}

}  // namespace

TEST_CASE("train: the induction config's best layer-1 head rises from below 0.1 to at least 0.55 on the induction "
          "key between steps 650 and 1125, and the held-out loss falls from above 3.5 to below 1.2 with it",
          "[train][slow][circuits]") {
  // evaluations at steps 325, 650, 975 and 1125 only (the config's every 25 are for the report)
  const auto rows =
      train_circuit("induction_phase", "induction", {"training.steps=1125", "training.eval_interval=325"});
  const io::MetricsRow &before = at_step(rows, 650), &after = at_step(rows, 1125);
  const double score_before = best_of_layer(before.attention_score, 1),
               score_after = best_of_layer(after.attention_score, 1);
  CAPTURE(score_before, score_after, *before.val_loss, *after.val_loss);
  CHECK(score_before < 0.1);   // measured 0.066 (the full run: docs/circuits.md)
  CHECK(score_after >= 0.55);  // 0.64
  CHECK(score_after - score_before >= 0.45);
  CHECK(*before.val_loss > 3.5);  // 3.630
  CHECK(*after.val_loss < 1.2);   // 1.010
  // the layer-0 previous-token head forms in the same window (it does not precede the fall: docs/circuits.md)
  CHECK(best_of_layer(before.previous_token_score, 0) < 0.15);  // 0.09
  CHECK(best_of_layer(after.previous_token_score, 0) >= 0.4);   // 0.56
  // (the report's phase change is judged against the whole run's length, 2500 steps: docs/circuits.md, and
  // tests/analysis/test_circuits.cpp for the criterion)
}

TEST_CASE("train: the induction config's one-layer control keeps its held-out loss above 3.4 over the same 1125 steps",
          "[train][slow][circuits]") {
  const auto rows = train_circuit("induction_phase", "induction_1layer",
                                  {"training.steps=1125", "model.n_layer=1", "training.eval_interval=325"});
  for (const auto& r : rows)
    if (r.val_loss) {
      CAPTURE(r.step, *r.val_loss);
      CHECK(*r.val_loss > 3.4);  // 3.65 at step 1125 in the full run
    }
  CHECK(at_step(rows, 1125).attention_score.size() == 1);
  CHECK(rows.back().step == 1125);
}

TEST_CASE("train: the grokking config memorises by step 200 while its held-out accuracy stays at most 0.5",
          "[train][slow][circuits]") {
  const auto rows = train_circuit("grokking", "grokking", {"training.steps=200"});
  const io::MetricsRow& last = at_step(rows, 200);
  REQUIRE(last.train_accuracy.has_value());
  CAPTURE(*last.train_accuracy, *last.accuracy);
  CHECK(*last.train_accuracy >= 0.99);  // 1.000
  CHECK(*last.accuracy <= 0.5);         // 0.391; it rises past 0.95 at step 1150 (docs/circuits.md)
  const analysis::GrokkingMarks g = io::grokking_of(rows);
  REQUIRE(g.memorised.has_value());
  CHECK(*g.memorised <= 200);  // 150
  CHECK_FALSE(g.grokked.has_value());
}
