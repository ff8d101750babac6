// truncate_metrics (train/run.hpp): after a kill, metrics.jsonl may hold rows of steps after the last checkpoint
// (the run logged them, then died before the next save) and a cut-off last line; --resume logs those steps again.
#include <sys/stat.h>

#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/train/run.hpp"

namespace tf::train {

std::optional<std::string> metrics_rows_to_keep(const std::string& path, long step) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;  // no metrics yet: nothing to keep
  std::istringstream in(read_regular_file(path, std::uint64_t{1} << 32, "metrics.jsonl"));
  std::string kept, line;
  bool changed = false;
  while (std::getline(in, line)) {
    const bool complete = !in.eof();  // a last line without its newline was cut off
    const auto row = json_too_deep(line) ? nlohmann::json() : nlohmann::json::parse(line, nullptr, false);
    const bool keep = complete && row.is_object() && row.contains("step") && row["step"].is_number_integer() &&
                      row["step"].get<long>() <= step;
    if (!keep) {
      changed = true;
      continue;
    }
    kept += line;
    kept += '\n';
  }
  if (!changed) return std::nullopt;
  return kept;
}

void truncate_metrics(const std::string& path, long step) {
  if (const auto kept = metrics_rows_to_keep(path, step)) io::write_file_atomic(path, kept->data(), kept->size());
}

}  // namespace tf::train
