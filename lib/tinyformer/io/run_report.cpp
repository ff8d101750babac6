#include "tinyformer/io/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/tensor/files.hpp"

namespace fs = std::filesystem;

namespace tf::io {

namespace {

// A file the run wrote, or "" when it is not there (heads.json before the detector ran); what is there but not a
// regular file is refused by the gate (tensor/files.hpp) with its path.
std::string read_text(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return "";
  return read_regular_file(path.string(), std::uint64_t{1} << 30, "a run's file");
}

HeadTable head_table(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? j[key].get<HeadTable>() : HeadTable{};
}

// One row of metrics.jsonl; a value of the wrong type throws FileError naming the file, the line and the key.
MetricsRow metrics_row(const nlohmann::json& j, const fs::path& path, std::size_t line_no) {
  const auto number = [&](const char* key) {
    if (j[key].is_null()) return std::numeric_limits<double>::quiet_NaN();  // a non-finite value is logged as null
    if (!j[key].is_number()) throw FileError(path.string(), fmt::format("line {}: '{}' is not a number", line_no, key));
    // JSON has no inf: a number beyond a double (1e400) is not a value the run logged
    const double v = j[key].get<double>();
    if (!std::isfinite(v))
      throw FileError(path.string(), fmt::format("line {}: '{}' is beyond the range of a double", line_no, key));
    return v;
  };
  MetricsRow row;
  if (!j["step"].is_number_integer())
    throw FileError(path.string(), fmt::format("line {}: 'step' is not a whole number", line_no));
  row.step = j["step"].get<long>();
  if (j.contains("train_loss")) row.train_loss = number("train_loss");
  if (j.contains("lr")) row.lr = number("lr");
  if (j.contains("val_loss")) row.val_loss = number("val_loss");
  if (j.contains("val_bpb")) row.val_bpb = number("val_bpb");
  if (j.contains("accuracy")) row.accuracy = number("accuracy");
  if (j.contains("grad_norm") && j["grad_norm"].is_number()) row.grad_norm = number("grad_norm");
  if (j.contains("train_accuracy")) row.train_accuracy = number("train_accuracy");
  if (j.contains("weight_norm")) row.weight_norm = number("weight_norm");
  try {
    row.attention_entropy = head_table(j, "attention_entropy");
    row.attention_score = head_table(j, "attention_score");
    row.induction_score = head_table(j, "induction_score");
    row.previous_token_score = head_table(j, "previous_token_score");
  } catch (const nlohmann::json::exception&) {
    throw FileError(path.string(),
                    fmt::format("line {}: the attention tables are not lists of lists of numbers", line_no));
  }
  return row;
}

std::vector<MetricsRow> read_metrics_file(const fs::path& path) {
  std::vector<MetricsRow> rows;
  const std::string text = read_text(path);
  std::istringstream metrics(text);
  std::string line;
  for (std::size_t line_no = 1; std::getline(metrics, line); ++line_no) {
    if (json_too_deep(line)) throw FileError(path.string(), fmt::format("line {}: nests too deeply", line_no));
    const auto j = nlohmann::json::parse(line, nullptr, false);
    // A line the run did not write is refused; only a last line without its newline (a write cut short) is skipped.
    const bool torn_end = metrics.eof() && !text.empty() && text.back() != '\n';
    if ((j.is_discarded() || !j.is_object()) && !torn_end && !line.empty())
      throw FileError(path.string(), fmt::format("line {}: not a JSON object (or a number beyond a double)", line_no));
    if (j.is_discarded() || !j.is_object() || !j.contains("step")) continue;
    rows.push_back(metrics_row(j, path, line_no));
  }
  return rows;
}

// Every <dir>/step_*.npy with its sidecar, in step order, as many as fit `max_weights` (fitting_snapshots; only those
// are read); `pattern` gets the sidecars' expected pattern, `note` says what was left out and why.
std::vector<AttentionSnapshot> read_snapshots(const fs::path& dir, std::size_t max_weights, std::string& pattern,
                                              std::string& note) {
  std::vector<fs::path> all;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".npy" && e.path().filename().string().rfind("step_", 0) == 0)
        all.push_back(e.path());
  std::sort(all.begin(), all.end());
  std::vector<std::size_t> sizes;
  Shape largest;
  for (const auto& npy : all) {
    const Shape shape = read_npy_header(npy.string()).shape;
    sizes.push_back(shape_numel(shape));
    if (sizes.back() >= shape_numel(largest)) largest = shape;
  }
  std::vector<fs::path> files;
  for (const std::size_t i : fitting_snapshots(sizes, max_weights)) files.push_back(all[i]);
  if (files.size() < all.size())
    note = left_out_note(files.size(), all.size(), max_weights, largest,
                         "every snapshot is in the run's attention/step_NNNNNN.npy and .png");
  std::vector<AttentionSnapshot> snapshots;
  for (const auto& npy : files) {
    AttentionSnapshot snap;
    snap.weights = read_npy_f32(npy.string(), 4);
    fs::path side = npy;
    const std::string side_text = read_text(side.replace_extension(".json"));
    const auto j = json_too_deep(side_text) ? nlohmann::json() : nlohmann::json::parse(side_text, nullptr, false);
    if (j.is_object()) try {
        snap.step = j.value("step", 0L);
        snap.tokens = j.value("tokens", std::vector<std::string>{});
        snap.expected = j.value("expected", std::vector<long>{});
        snap.scores = head_table(j, "attention_score");
        pattern = j.value("expected_pattern", pattern);
      } catch (const nlohmann::json::exception&) {
        throw FileError(side.string(), "a value has the wrong type (step, tokens, expected, attention_score)");
      }
    snapshots.push_back(std::move(snap));
  }
  return snapshots;
}

}  // namespace

std::vector<MetricsRow> read_run_metrics(const std::string& out) {
  const fs::path path = fs::path(out) / "metrics.jsonl";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))  // a run writes it before its first step
    throw FileError(path.string(), "no such file; every run dir holds one (is this a run dir?)");
  return read_metrics_file(path);
}

config::RunConfig read_run_config(const std::string& out) {
  const fs::path path = fs::path(out) / "config.yaml";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    throw FileError(out, "not a run directory (no config.yaml; train writes one)");
  return config::load_config(path.string());  // the gate names a config.yaml that is a FIFO, a directory, ...
}

ReportData read_run_report(const std::string& out, std::size_t max_weights) {
  ReportData report;
  report.title = fmt::format("tinyformer run: {}", fs::path(out).filename().string());
  report.config_yaml = read_text(fs::path(out) / "config.yaml");
  report.metrics = read_run_metrics(out);
  report.attention =
      read_snapshots(fs::path(out) / "attention", max_weights, report.expected_pattern, report.attention_note);
  const std::string heads_text = read_text(fs::path(out) / "heads.json");
  const auto heads = json_too_deep(heads_text) ? nlohmann::json() : nlohmann::json::parse(heads_text, nullptr, false);
  if (heads.is_object() && heads.contains("verdicts")) try {
      report.head_roles = heads["verdicts"].get<std::vector<std::vector<std::string>>>();
    } catch (const nlohmann::json::exception&) {
      throw FileError((fs::path(out) / "heads.json").string(), "'verdicts' is not a list of lists of strings");
    }
  if (const std::string circuits = read_text(fs::path(out) / "circuits.json"); !circuits.empty()) try {
      report.circuits = circuits_from_json(circuits);
    } catch (const std::invalid_argument& e) {
      throw FileError((fs::path(out) / "circuits.json").string(), e.what());
    }
  return report;
}

void write_run_report(const std::string& out) {
  write_html_report((fs::path(out) / "report.html").string(), read_run_report(out));
}

}  // namespace tf::io
