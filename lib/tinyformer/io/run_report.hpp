#pragma once
// A run directory read back: its metrics and config, and the HTML report built from its files.
#include <cstddef>
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/io/html_report.hpp"

namespace tf::io {

// The rows of <out>/metrics.jsonl (lines that are not JSON objects with a step are passed over; a line the run did
// not write is refused with FileError naming the file and the line).
std::vector<MetricsRow> read_run_metrics(const std::string& out);
// <out>/config.yaml as a config; FileError "<out>: not a run directory" when there is none.
config::RunConfig read_run_config(const std::string& out);
// The report of the run dir `out`: <out>/config.yaml, <out>/metrics.jsonl, the <out>/attention/step_*.npy/json
// snapshots that fit `max_weights` together (fitting_snapshots: only those are read, and attention_note says what was
// left out) and <out>/heads.json (the head detector's verdicts) and
// <out>/circuits.json (CircuitsReport) when present. Throws FileError naming a file the run wrote that cannot be read.
ReportData read_run_report(const std::string& out, std::size_t max_weights = kReportWeights);
// <out>/report.html from read_run_report(out).
void write_run_report(const std::string& out);

}  // namespace tf::io
