#include "tinyformer/infer/attention_files.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/heatmap_png.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/tensor/files.hpp"

namespace fs = std::filesystem;

namespace tf::infer {

void write_attention_files(const std::string& dir, const std::string& stem, const AttentionMap& map) {
  const fs::path base = fs::path(dir) / stem;
  for (const char* extension : {".npy", ".json", ".png"}) check_output_path(base.string() + extension);
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
  map.weights = probe_attention(model, probe);
  map.labels = token_labels(source.vocab(), probe);
  if (!source.expected_pattern().empty()) map.expected = source.expected_attention(probe);
  map.scores = scores;
  map.expected_pattern = source.expected_pattern();
  map.title = fmt::format("attention at step {}", step);
  write_attention_files((fs::path(out) / "attention").string(), fmt::format("step_{:06}", step), map);
}

}  // namespace tf::infer
