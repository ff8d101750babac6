#pragma once
// Several runs on one self-contained HTML page (`tinyformer compare RUN_DIR...`): their train loss, validation loss,
// accuracy and learning rate over the steps, one colour per run on shared axes, and a table of the config keys whose
// values differ between them. Same rules as the run report (io/html_report.hpp): no network, inline SVG only,
// each chart only when some run has its values.
#include <string>
#include <vector>

#include "tinyformer/io/html_report.hpp"

namespace tf::io {

struct CompareRun {
  std::string name;                 // e.g. the run directory
  std::vector<MetricsRow> metrics;  // in step order
};

// A config key that differs: its value in each run, in the runs' order.
struct ConfigDifference {
  std::string key;
  std::vector<std::string> values;
};

struct CompareData {
  std::string title;
  std::vector<CompareRun> runs;
  std::vector<ConfigDifference> differences;
};

// Throws std::invalid_argument when a difference does not have one value per run.
std::string render_compare_report(const CompareData& data);
// Written atomically (io/atomic_file.hpp); std::runtime_error names the path on failure.
void write_compare_report(const std::string& path, const CompareData& data);

}  // namespace tf::io
