#pragma once
// The files of a run that show its attention: per-step snapshots and the HTML report built from the run dir.
#include <string>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::train {

// Writes <dir>/<stem>.npy ([L,H,T,T] float32), <stem>.json (step, tokens, shape) and <stem>.png (heatmap grid).
void write_attention_files(const std::string& dir, const std::string& stem, long step, const Array<float>& weights,
                           const std::vector<std::string>& labels, const std::string& title);
// The snapshot of step `step` in <out>/attention/step_NNNNNN.*
void write_attention_snapshot(const std::string& out, long step, nn::GPT<float>& model, data::DataSource& source,
                              const IndexArray& probe);
// <out>/report.html from <out>/config.yaml, <out>/metrics.jsonl and every <out>/attention/step_*.npy/json.
void write_run_report(const std::string& out);

}  // namespace tf::train
