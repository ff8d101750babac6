// tinyformer compare RUN_DIR RUN_DIR... [--out compare.html]: the runs' curves overlaid on one page, and the config
// keys whose values differ between them.
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/io/compare_report.hpp"
#include "tinyformer/io/run_report.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::app {

namespace {

namespace fs = std::filesystem;

// Every key whose value differs in some run, with its value in each run.
std::vector<io::ConfigDifference> differences(const std::vector<config::RunConfig>& configs) {
  std::vector<io::ConfigDifference> out;
  std::vector<std::vector<std::string>> values;  // [key][run]
  for (std::size_t r = 0; r < configs.size(); ++r) {
    std::size_t k = 0;
    for_each_field_of(configs[r], [&](const config::FieldInfo& f, const auto& v) {
      if (r == 0) {
        out.push_back({f.path(), {}});
        values.emplace_back();
      }
      values[k++].push_back(config::value_text(v));
    });
  }
  std::vector<io::ConfigDifference> differing;
  for (std::size_t k = 0; k < out.size(); ++k)
    if (std::adjacent_find(values[k].begin(), values[k].end(), std::not_equal_to<>()) != values[k].end())
      differing.push_back({out[k].key, values[k]});
  return differing;
}

int run_compare(const std::vector<std::string>& dirs, const std::string& out) {
  check_output_path(out);  // before reading anything: a device, FIFO, directory or link at --out is refused
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const char* name : {"config.yaml", "metrics.jsonl"})
      if (fs::equivalent(fs::path(dir) / name, out, ec))
        throw std::runtime_error(fmt::format("--out {} is an input of compare ({}); choose another --out", out,
                                             (fs::path(dir) / name).string()));
  }
  io::CompareData data;
  std::vector<config::RunConfig> configs;
  for (const auto& dir : dirs) {
    configs.push_back(io::read_run_config(dir));
    data.runs.push_back({dir, io::read_run_metrics(dir)});
  }
  data.title = fmt::format("{} runs compared", dirs.size());
  data.differences = differences(configs);
  io::write_compare_report(out, data);
  fmt::print("wrote {}: {} runs, {} config keys differ\n", out, dirs.size(), data.differences.size());
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>("compare.html");
  CLI::App* cmd = app.add_subcommand("compare", "One HTML page with several runs' curves overlaid and their config "
                                                "differences");
  cmd->add_option("runs", *dirs, "Run directories (two or more)")->required()->expected(2, -1);
  cmd->add_option("--out", *out, "The HTML file to write")->capture_default_str()->check(non_empty_path());
  cmd->callback([dirs, out] { select_action([dirs, out] { return run_compare(*dirs, *out); }); });
}

}  // namespace tf::app
