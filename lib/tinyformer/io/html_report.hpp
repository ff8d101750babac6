#pragma once
// A training run as one self-contained HTML page: no network, no external scripts, styles or fonts.
//  - the config (YAML text) in a <pre>;
//  - line charts as inline SVG, drawn here: loss (train, and val where given; log scale when the values are
//    positive and span more than a factor 10), accuracy (when any row has it) and learning rate;
//  - the attention snapshots: every layer x head as a T x T heatmap with token labels, drawn by inline
//    JavaScript onto <canvas> from JSON embedded in the page, with a slider (input type=range) and a step label
//    to move through the snapshots (it starts at the last one); hovering a cell shows query, key and weight.
// Weights are embedded rounded to 3 decimals, as integers in thousandths ("w":[0,1000,523,...]; NaN as -1),
// so a [2,4,32,32] snapshot costs about 30 KB. The colormap is attention_color (io/heatmap_png.hpp).
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::io {

// One logged step. Non-finite values are left out of the charts.
struct MetricsRow {
  long step = 0;
  double train_loss = 0.0;
  std::optional<double> val_loss;
  std::optional<double> accuracy;  // a fraction in [0, 1] or a percentage: plotted as given
  double lr = 0.0;
};

// Attention weights of one batch row at one step.
struct AttentionSnapshot {
  long step = 0;
  std::vector<std::string> tokens;  // T labels (UTF-8), or empty
  Array<float> weights;             // [L,H,T,T] (layers, heads, queries, keys)
};

struct ReportData {
  std::string title;
  std::string config_yaml;
  std::vector<MetricsRow> metrics;            // in step order
  std::vector<AttentionSnapshot> attention;   // in step order; each may have its own L, H, T
};

// The page as a string. Throws std::invalid_argument naming the snapshot (index and step) when its weights are
// not [L,H,T,T] or its token count is neither 0 nor T.
std::string render_html_report(const ReportData& data);

// render_html_report, written atomically to `path` (io/atomic_file.hpp): a reader sees the old file or the
// complete new one, and an invalid `data` leaves an existing file untouched. Throws std::invalid_argument
// (inputs) or std::runtime_error (I/O, naming the path).
void write_html_report(const std::string& path, const ReportData& data);

}  // namespace tf::io
