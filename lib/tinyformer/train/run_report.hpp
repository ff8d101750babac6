#pragma once
// The files of a run that show its attention: per-step snapshots, the head detector's final tables, and the HTML
// report built from the run dir.
#include <string>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::train {

// One attention map and what goes with it.
struct AttentionMap {
  long step = 0;
  Array<float> weights;             // [L,H,T,T] of one input
  std::vector<std::string> labels;  // [T] token labels
  std::vector<long> expected;       // [T] the expected key of each query (-1: none), or empty
  io::HeadTable scores;             // [L][H] expected-pattern score of each head on held-out data, or empty
  std::string expected_pattern;     // the data's expected pattern in one sentence, or ""
  std::string title;                // the PNG's title
};

// Writes <dir>/<stem>.npy ([L,H,T,T] float32), <stem>.json (step, tokens, shape, expected keys, scores, pattern)
// and <stem>.png (the heatmap grid, expected keys outlined).
void write_attention_files(const std::string& dir, const std::string& stem, const AttentionMap& map);
// The snapshot of step `step` in <out>/attention/step_NNNNNN.*: the probe's attention, with `scores` (held-out).
void write_attention_snapshot(const std::string& out, long step, nn::GPT<float>& model, const data::DataSource& source,
                              const IndexArray& probe, const io::HeadTable& scores);
// The rows of <out>/metrics.jsonl (lines that are not JSON objects with a step are passed over).
std::vector<io::MetricsRow> read_run_metrics(const std::string& out);
// The report of the run dir `out`: <out>/config.yaml, <out>/metrics.jsonl, every <out>/attention/step_*.npy/json and
// <out>/heads.json (the head detector's verdicts) when present. Throws FileError naming a file the run wrote that
// cannot be read.
io::ReportData read_run_report(const std::string& out);
// <out>/report.html from read_run_report(out).
void write_run_report(const std::string& out);

}  // namespace tf::train
