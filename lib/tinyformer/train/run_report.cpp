#include "tinyformer/train/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/heatmap_png.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/tensor/files.hpp"

namespace fs = std::filesystem;

namespace tf::train {

void write_attention_files(const std::string& dir, const std::string& stem, const AttentionMap& map) {
  const fs::path base = fs::path(dir) / stem;
  io::write_npy(base.string() + ".npy", map.weights);
  nlohmann::json side = {{"step", map.step},
                         {"tokens", map.labels},
                         {"shape", map.weights.shape()},
                         {"layout", "[layer, head, query, key]"}};
  if (!map.expected.empty()) side["expected"] = map.expected;
  if (!map.scores.empty()) side["attention_score"] = map.scores;
  if (!map.expected_pattern.empty()) side["expected_pattern"] = map.expected_pattern;
  const std::string text = side.dump(2) + "\n";
  io::write_file_atomic(base.string() + ".json", text.data(), text.size());
  io::write_attention_grid_png(base.string() + ".png", map.weights, map.labels, map.title, map.expected);
}

void write_attention_snapshot(const std::string& out, long step, nn::GPT<float>& model, const data::DataSource& source,
                              const IndexArray& probe, const io::HeadTable& scores) {
  AttentionMap map;
  map.step = step;
  map.weights = infer::probe_attention(model, probe);
  map.labels = infer::token_labels(source.vocab(), probe);
  if (!source.expected_pattern().empty()) map.expected = source.expected_attention(probe);
  map.scores = scores;
  map.expected_pattern = source.expected_pattern();
  map.title = fmt::format("attention at step {}", step);
  write_attention_files((fs::path(out) / "attention").string(), fmt::format("step_{:06}", step), map);
}

namespace {

// A file the run wrote, or "" when it is not there (heads.json before the detector ran); what is there but not a
// regular file is refused by the gate (tensor/files.hpp) with its path.
std::string read_text(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return "";
  return read_regular_file(path.string(), std::uint64_t{1} << 30, "a run's file");
}

io::HeadTable head_table(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? j[key].get<io::HeadTable>() : io::HeadTable{};
}

// One row of metrics.jsonl; a value of the wrong type throws FileError naming the file, the line and the key.
io::MetricsRow metrics_row(const nlohmann::json& j, const fs::path& path, std::size_t line_no) {
  const auto number = [&](const char* key) {
    if (j[key].is_null()) return std::numeric_limits<double>::quiet_NaN();  // a non-finite value is logged as null
    if (!j[key].is_number()) throw FileError(path.string(), fmt::format("line {}: '{}' is not a number", line_no, key));
    // JSON has no inf: a number beyond a double (1e400) is not a value the run logged
    const double v = j[key].get<double>();
    if (!std::isfinite(v))
      throw FileError(path.string(), fmt::format("line {}: '{}' is beyond the range of a double", line_no, key));
    return v;
  };
  io::MetricsRow row;
  if (!j["step"].is_number_integer())
    throw FileError(path.string(), fmt::format("line {}: 'step' is not a whole number", line_no));
  row.step = j["step"].get<long>();
  if (j.contains("train_loss")) row.train_loss = number("train_loss");
  if (j.contains("lr")) row.lr = number("lr");
  if (j.contains("val_loss")) row.val_loss = number("val_loss");
  if (j.contains("val_bpb")) row.val_bpb = number("val_bpb");
  if (j.contains("accuracy")) row.accuracy = number("accuracy");
  if (j.contains("grad_norm") && j["grad_norm"].is_number()) row.grad_norm = number("grad_norm");
  try {
    row.attention_entropy = head_table(j, "attention_entropy");
    row.attention_score = head_table(j, "attention_score");
    row.induction_score = head_table(j, "induction_score");
  } catch (const nlohmann::json::exception&) {
    throw FileError(path.string(),
                    fmt::format("line {}: the attention tables are not lists of lists of numbers", line_no));
  }
  return row;
}

std::vector<io::MetricsRow> read_metrics_file(const fs::path& path) {
  std::vector<io::MetricsRow> rows;
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

// Every <dir>/step_*.npy with its sidecar, in step order; `pattern` gets the sidecars' expected pattern.
std::vector<io::AttentionSnapshot> read_snapshots(const fs::path& dir, std::string& pattern) {
  std::vector<fs::path> files;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".npy" && e.path().filename().string().rfind("step_", 0) == 0)
        files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<io::AttentionSnapshot> snapshots;
  for (const auto& npy : files) {
    io::AttentionSnapshot snap;
    snap.weights = io::read_npy_f32(npy.string(), 4);
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

std::vector<io::MetricsRow> read_run_metrics(const std::string& out) {
  const fs::path path = fs::path(out) / "metrics.jsonl";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))  // a run writes it before its first step
    throw FileError(path.string(), "no such file; every run dir holds one (is this a run dir?)");
  return read_metrics_file(path);
}

io::ReportData read_run_report(const std::string& out) {
  io::ReportData report;
  report.title = fmt::format("tinyformer run: {}", fs::path(out).filename().string());
  report.config_yaml = read_text(fs::path(out) / "config.yaml");
  report.metrics = read_run_metrics(out);
  report.attention = read_snapshots(fs::path(out) / "attention", report.expected_pattern);
  const std::string heads_text = read_text(fs::path(out) / "heads.json");
  const auto heads = json_too_deep(heads_text) ? nlohmann::json() : nlohmann::json::parse(heads_text, nullptr, false);
  if (heads.is_object() && heads.contains("verdicts")) try {
      report.head_roles = heads["verdicts"].get<std::vector<std::vector<std::string>>>();
    } catch (const nlohmann::json::exception&) {
      throw FileError((fs::path(out) / "heads.json").string(), "'verdicts' is not a list of lists of strings");
    }
  return report;
}

void write_run_report(const std::string& out) {
  io::write_html_report((fs::path(out) / "report.html").string(), read_run_report(out));
}

}  // namespace tf::train
