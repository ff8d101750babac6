// truncate_metrics (train/run.hpp): after a kill, metrics.jsonl may hold rows of steps after the last checkpoint
// (the run logged them, then died before the next save) and a cut-off last line; --resume logs those steps again.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/train/run.hpp"

namespace tf::train {

void truncate_metrics(const std::string& path, long step) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // no metrics yet: nothing to keep
  std::string kept, line;
  bool changed = false;
  while (std::getline(in, line)) {
    const bool complete = !in.eof();  // a last line without its newline was cut off
    const auto row = nlohmann::json::parse(line, nullptr, false);
    const bool keep = complete && row.is_object() && row.contains("step") && row["step"].is_number_integer() &&
                      row["step"].get<long>() <= step;
    if (!keep) {
      changed = true;
      continue;
    }
    kept += line;
    kept += '\n';
  }
  in.close();
  if (changed) io::write_file_atomic(path, kept.data(), kept.size());
}

}  // namespace tf::train
