#pragma once
// The files that show a model's attention for one input: <stem>.npy (the weights [L,H,T,T]), <stem>.json (its
// tokens and what goes with them) and <stem>.png (the heatmap grid). `tinyformer attention` writes them for a prompt,
// a run for its probe at each snapshot step (<out>/attention/step_NNNNNN.*).
#include <string>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

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
// and <stem>.png (the heatmap grid, expected keys outlined). The three targets are checked before the first is
// written: one that cannot be written (a directory, a FIFO, a link) leaves the other two as they were.
void write_attention_files(const std::string& dir, const std::string& stem, const AttentionMap& map);
// The snapshot of step `step` in <out>/attention/step_NNNNNN.*: the probe's attention, with `scores` (held-out).
void write_attention_snapshot(const std::string& out, long step, nn::GPT<float>& model, const data::DataSource& source,
                              const IndexArray& probe, const io::HeadTable& scores);

}  // namespace tf::infer
