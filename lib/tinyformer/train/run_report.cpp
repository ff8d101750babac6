#include "tinyformer/train/run_report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/infer/attention.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/heatmap_png.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/npy.hpp"

namespace fs = std::filesystem;

namespace tf::train {

void write_attention_files(const std::string& dir, const std::string& stem, long step, const Array<float>& weights,
                           const std::vector<std::string>& labels, const std::string& title) {
  const fs::path base = fs::path(dir) / stem;
  io::write_npy(base.string() + ".npy", weights);
  nlohmann::json side = {{"step", step}, {"tokens", labels}, {"shape", weights.shape()},
                         {"layout", "[layer, head, query, key]"}};
  const std::string text = side.dump(2) + "\n";
  io::write_file_atomic(base.string() + ".json", text.data(), text.size());
  io::write_attention_grid_png(base.string() + ".png", weights, labels, title);
}

void write_attention_snapshot(const std::string& out, long step, nn::GPT<float>& model, data::DataSource& source,
                              const IndexArray& probe) {
  const Array<float> weights = infer::probe_attention(model, probe);
  write_attention_files((fs::path(out) / "attention").string(), fmt::format("step_{:06}", step), step, weights,
                        infer::token_labels(source.vocab(), probe), fmt::format("attention at step {}", step));
}

void write_run_report(const std::string& out) {
  io::ReportData report;
  report.title = fmt::format("tinyformer run: {}", fs::path(out).filename().string());
  {
    std::ifstream in(fs::path(out) / "config.yaml");
    std::stringstream ss;
    ss << in.rdbuf();
    report.config_yaml = ss.str();
  }
  std::ifstream metrics(fs::path(out) / "metrics.jsonl");
  std::string line;
  while (std::getline(metrics, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step")) continue;
    io::MetricsRow row;
    row.step = j["step"].get<long>();
    row.train_loss = j.value("train_loss", 0.0);
    row.lr = j.value("lr", 0.0);
    if (j.contains("val_loss")) row.val_loss = j["val_loss"].get<double>();
    if (j.contains("accuracy")) row.accuracy = j["accuracy"].get<double>();
    report.metrics.push_back(row);
  }
  std::vector<fs::path> snapshots;
  const fs::path att_dir = fs::path(out) / "attention";
  if (fs::exists(att_dir))
    for (const auto& e : fs::directory_iterator(att_dir))
      if (e.path().extension() == ".npy" && e.path().filename().string().rfind("step_", 0) == 0)
        snapshots.push_back(e.path());
  std::sort(snapshots.begin(), snapshots.end());
  for (const auto& npy : snapshots) {
    io::AttentionSnapshot snap;
    snap.weights = io::read_npy_f32(npy.string(), 4);
    fs::path side = npy;
    side.replace_extension(".json");
    std::ifstream in(side);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) {
      snap.step = j.value("step", 0L);
      snap.tokens = j.value("tokens", std::vector<std::string>{});
    }
    report.attention.push_back(std::move(snap));
  }
  io::write_html_report((fs::path(out) / "report.html").string(), report);
}

}  // namespace tf::train
