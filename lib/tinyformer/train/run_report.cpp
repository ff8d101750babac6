#include "tinyformer/train/run_report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/heatmap_png.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/npy.hpp"

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

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

io::HeadTable head_table(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? j[key].get<io::HeadTable>() : io::HeadTable{};
}

std::vector<io::MetricsRow> read_metrics_file(const fs::path& path) {
  std::vector<io::MetricsRow> rows;
  std::ifstream metrics(path);
  std::string line;
  while (std::getline(metrics, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step")) continue;
    io::MetricsRow row;
    row.step = j["step"].get<long>();
    row.train_loss = j.value("train_loss", 0.0);
    row.lr = j.value("lr", 0.0);
    if (j.contains("val_loss")) row.val_loss = j["val_loss"].get<double>();
    if (j.contains("val_bpb")) row.val_bpb = j["val_bpb"].get<double>();
    if (j.contains("accuracy")) row.accuracy = j["accuracy"].get<double>();
    if (j.contains("grad_norm") && j["grad_norm"].is_number()) row.grad_norm = j["grad_norm"].get<double>();
    row.attention_entropy = head_table(j, "attention_entropy");
    row.attention_score = head_table(j, "attention_score");
    rows.push_back(row);
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
    const auto j = nlohmann::json::parse(read_text(side.replace_extension(".json")), nullptr, false);
    if (!j.is_discarded()) {
      snap.step = j.value("step", 0L);
      snap.tokens = j.value("tokens", std::vector<std::string>{});
      snap.expected = j.value("expected", std::vector<long>{});
      snap.scores = head_table(j, "attention_score");
      pattern = j.value("expected_pattern", pattern);
    }
    snapshots.push_back(std::move(snap));
  }
  return snapshots;
}

}  // namespace

std::vector<io::MetricsRow> read_run_metrics(const std::string& out) {
  return read_metrics_file(fs::path(out) / "metrics.jsonl");
}

void write_run_report(const std::string& out) {
  io::ReportData report;
  report.title = fmt::format("tinyformer run: {}", fs::path(out).filename().string());
  report.config_yaml = read_text(fs::path(out) / "config.yaml");
  report.metrics = read_run_metrics(out);
  report.attention = read_snapshots(fs::path(out) / "attention", report.expected_pattern);
  const auto heads = nlohmann::json::parse(read_text(fs::path(out) / "heads.json"), nullptr, false);
  if (!heads.is_discarded() && heads.contains("verdicts"))
    report.head_roles = heads["verdicts"].get<std::vector<std::vector<std::string>>>();
  io::write_html_report((fs::path(out) / "report.html").string(), report);
}

}  // namespace tf::train
